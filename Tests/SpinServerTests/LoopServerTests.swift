@testable import SpinServer
import Testing

@Suite struct LoopServerTests {
    @Test func pendingOutput_HoldsTwoOfTheLargestMessages_AndNeverLessThanSpinNetsDefault() {
        // Two state messages of the largest state (1 MiB) and event (1 MiB) by default.
        #expect(LoopServer.connectionLimits(.init()).maxPendingOutput == 2 * (2 << 20) + (64 << 10))
        #expect(LoopServer.connectionLimits(.init(maxBodyBytes: 1000, maxStateBytes: 1000)).maxPendingOutput == 4 << 20)
        // Autobahn 9.1.6 echoes a 16 MiB message: a 4 MiB cap closed the connection.
        let large = LoopServer.connectionLimits(.init(maxWebSocketMessageBytes: 16 << 20))
        #expect(large.maxPendingOutput >= 2 * (16 << 20))
        let states = LoopServer.connectionLimits(.init(maxStateBytes: 8 << 20))
        #expect(states.maxPendingOutput >= 2 * ((8 << 20) + (1 << 20)))
        // No overflow, whatever the limits say.
        #expect(LoopServer.connectionLimits(.init(maxBodyBytes: .max, maxStateBytes: .max)).maxPendingOutput > 0)
    }
}
