import Logging
import ServiceLifecycle
@testable import SpinServer
import Testing

/// `LoopServer` as a `Service`: it serves while its `ServiceGroup` runs and stops on the
/// group's graceful shutdown, the way `spin-server` runs it on SIGTERM.
@Suite(.timeLimit(.minutes(1)))
struct LoopServerServiceTests {
    @Test func inAServiceGroup_ItServes_AndStopsOnGracefulShutdown() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let host = try makeExampleHost(start: false)
        let server = LoopServer(configuration: SpinServerConfiguration(port: 0), host: host, logger: logger)
        let group = ServiceGroup(services: [server], logger: logger)
        let running = Task { try await group.run() }
        var port: Int?
        for _ in 0..<5000 where port == nil {
            port = server.port
            try await Task.sleep(for: .milliseconds(1))
        }
        let bound = try #require(port)
        let (status, body) = try LiveServerTests.post(bound, "/v1/spins/counter/events", #"{"type":"reset"}"#)
        #expect(status == 202, "\(body)")
        #expect(host.isReady)

        await group.triggerGracefulShutdown()
        try await running.value
        #expect(server.port == nil)
        #expect(!host.isReady)
        #expect(throws: (any Error).self) { try RawClient(port: bound) }
    }

    @Test func aServerThatCannotStart_FailsItsGroup() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let first = LoopServer(configuration: SpinServerConfiguration(port: 0), host: try makeExampleHost(start: false), logger: logger)
        let port = try first.start()
        let second = LoopServer(configuration: SpinServerConfiguration(port: port), host: try makeExampleHost(start: false),
                                logger: logger)
        await #expect(throws: LoopServerError.self) { try await ServiceGroup(services: [second], logger: logger).run() }
        await first.shutdown()
    }
}
