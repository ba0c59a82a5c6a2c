import Foundation
import Glibc
import SpinNet
@testable import SpinServer
import SpinWire

/// Where a shared test body runs, in the manner of Hummingbird's `app.test(.router)` /
/// `.live`: against the request-cycle machine in memory (a manual clock, no socket, no
/// waiting) or against a live `LoopServer` on port 0 driven by a raw socket.
enum HTTPTestTransport: String, CaseIterable, CustomStringConvertible, Sendable {
    case inMemory
    case live
    var description: String { rawValue }
}

/// One HTTP connection as a test body sees it, whatever the transport.
protocol HTTPTestClient: AnyObject {
    func send(_ text: String)
    /// Half-close: the client sends no more.
    func shutdownWrite()
    /// Lets `duration` pass. Live, the reads that follow wait on the server's own clock.
    func pass(_ duration: Duration)
    /// The next response, or nil when none comes.
    func readResponse() -> (status: Int, headers: [(name: String, value: String)], body: String)?
    /// True when the server has closed the connection and nothing is left to read.
    func readsEnd() -> Bool
}

/// Runs `body` on a fresh connection over `transport`, with the server's configuration
/// changed by `configure`. In memory, the router answers 200 on `/healthz` and `/readyz`
/// and 404 elsewhere, as the live server does.
func withHTTPTestClient(
    _ transport: HTTPTestTransport, _ configure: (inout SpinServerConfiguration) -> Void = { _ in },
    _ body: (any HTTPTestClient) throws -> Void
) async throws {
    switch transport {
    case .inMemory:
        var configuration = SpinServerConfiguration(port: 0)
        configure(&configuration)
        try body(InMemoryHTTPClient(limits: HTTPConnectionLimits(configuration.limits)))
    case .live:
        let (server, port) = try LiveServerTests.start(configure)
        let outcome = Result { try body(try LiveHTTPClient(port: port)) }
        await server.shutdown()
        try outcome.get()
    }
}

/// A raw socket to a live server.
final class LiveHTTPClient: HTTPTestClient {
    private let client: RawClient
    init(port: Int) throws { client = try RawClient(port: port) }
    func send(_ text: String) { client.send(text) }
    func shutdownWrite() { Glibc.shutdown(client.fd, Int32(SHUT_WR)) }
    func pass(_ duration: Duration) {}
    func readResponse() -> (status: Int, headers: [(name: String, value: String)], body: String)? {
        client.readResponse()
    }
    func readsEnd() -> Bool { client.readsEnd() }
}

/// The request-cycle machine with a driver as small as `HTTPConnectionHandler`'s, a
/// manual clock, SpinNet's own deadline rules (`ConnectionDeadlines`) and output that
/// leaves at once.
final class InMemoryHTTPClient: HTTPTestClient {
    private var machine: HTTPConnectionStateMachine<TestInstant>
    private var deadlines = ConnectionDeadlines<TestInstant>(writeStallTimeout: .seconds(30),
                                                             lingerTimeout: .seconds(2), now: .zero)
    private var now = TestInstant.zero
    private var writer = HTTPResponseWriter()
    private var output: [UInt8] = []
    private var closed = false

    init(limits: HTTPConnectionLimits) {
        machine = HTTPConnectionStateMachine(limits: limits, now: .zero)
        deadlines.set(machine.deadline, now: now)
    }

    func send(_ text: String) {
        guard !closed else { return }
        run(machine.received(Array(text.utf8), now: now))
    }

    func shutdownWrite() {
        guard !closed else { return }
        run(machine.peerClosed(now: now))
    }

    func pass(_ duration: Duration) {
        now = now.advanced(by: duration)
        guard !closed, deadlines.check(now: now) == .deadline else { return }
        run(machine.deadlineReached(now: now))
        closed = true   // SpinNet closes after `didReachDeadline`
    }

    func readResponse() -> (status: Int, headers: [(name: String, value: String)], body: String)? {
        RawClient.takeResponse(from: &output)
    }

    func readsEnd() -> Bool { closed && output.isEmpty }

    private func run(_ first: HTTPConnectionStateMachine<TestInstant>.Action) {
        var action = first
        while true {
            switch action {
            case .wait, .pauseReading, .endIdleStream, .shutDownStream:
                deadlines.set(machine.deadline, now: now)
                return
            case .writeContinue:
                write(HTTPResponseWriter.continueResponse)
                action = machine.next(now: now)
            case .dispatch(let request):
                answer(request)
                action = machine.dispatchReturned(now: now)
            case .reject(let error):
                answer(status: error.status, method: .get, keepAlive: false,
                       body: APIResponse.error(.malformedRequest(error)).body)
                closed = true
                return
            case .timeOut:
                answer(status: 408, method: .get, keepAlive: false,
                       body: APIResponse.error(.requestTimeout(inBody: false)).body)
                closed = true
                return
            case .resumeReading:
                action = machine.next(now: now)
            case .closeAfterFlush, .close, .finishStream:
                closed = true
                return
            }
        }
    }

    /// The in-memory router: 200 on the health routes, 404 elsewhere.
    private func answer(_ request: HTTPRequest) {
        let status = ["/healthz", "/readyz"].contains(request.target.path) ? 200 : 404
        let keepAlive = machine.keepAlive && request.keepAlive
        answer(status: status, method: request.method, keepAlive: keepAlive)
        run(machine.responseWritten(keepAlive: keepAlive, now: now))
    }

    private func answer(status: Int, method: HTTPMethod, keepAlive: Bool, body: [UInt8] = Array("{}".utf8)) {
        let context = HTTPResponseContext(requestMethod: method, requestVersion: .http1_1, keepAlive: keepAlive)
        write(writer.response(HTTPResponseHead(status: HTTPStatus(code: status)), body: body,
                              context: context, secondsSince1970: 0))
    }

    private func write(_ bytes: [UInt8]) {
        output += bytes
        deadlines.outputChanged(pendingAfter: false, progressed: true, now: now)
    }
}
