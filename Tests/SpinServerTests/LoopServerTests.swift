@testable import SpinServer
import Testing

@Suite struct LoopServerTests {
    @Test func pendingOutput_HoldsTwoOfTheLargestMessages_AndNeverLessThanSpinNetsDefault() {
        #expect(LoopServer.connectionLimits(.init()).maxPendingOutput == 4 << 20)
        // Autobahn 9.1.6 echoes a 16 MiB message: a 4 MiB cap closed the connection.
        let large = LoopServer.connectionLimits(.init(maxWebSocketMessageBytes: 16 << 20))
        #expect(large.maxPendingOutput >= 2 * (16 << 20))
    }
}
