import Logging
@testable import SpinServer
import Testing

@Suite struct ServerContextTests {
    @Test func fragmentCount_FollowsTheMessageLimit_AndKeeps4096AtTheDefault() throws {
        func fragments(_ bytes: Int) throws -> Int {
            let configuration = SpinServerConfiguration(limits: .init(maxWebSocketMessageBytes: bytes))
            let context = ServerContext(configuration: configuration, router: makeRouter(try makeExampleHost(start: false)),
                                        logger: Logger(label: "test"))
            return context.webSocketLimits.maxFragmentCount
        }
        #expect(try fragments(1 << 20) == 4096)
        // Autobahn 9.3.1: a 4 MiB message in 64-byte fragments and an empty last one, 65537
        // frames, was refused with 1009 (too many fragments) under a 20 MB message limit.
        #expect(try fragments(20_000_000) >= 65537)
    }
}
