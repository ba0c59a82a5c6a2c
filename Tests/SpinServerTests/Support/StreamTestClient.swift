import Foundation
import SpinCore
@testable import SpinServer
import SpinWire

/// One WebSocket stream as a test body sees it, whatever the transport (`HTTPTestTransport`):
/// the `StreamMachine` in memory behind a driver as small as `StreamSession`, or a live
/// server on port 0 behind a raw socket.
protocol StreamTestClient: AnyObject {
    /// Sends a message, masked as a client must.
    func send(_ message: WebSocketMessage)
    /// Sends bytes as they are (protocol violations).
    func sendRaw(_ bytes: [UInt8])
    /// Up to `count` messages, fewer when the server closes (with its close code) or
    /// nothing more comes.
    func read(count: Int) -> (messages: [WebSocketMessage], closeCode: UInt16?)
    /// The server starts shutting down (live, in the background: it waits for the
    /// client to read its close).
    func shutdownServer()
}

extension StreamTestClient {
    func send(_ text: String) { send(.text(text)) }

    /// The next messages as JSON objects.
    func readJSON(count: Int) -> [[String: Any]] {
        read(count: count).messages.map { message in
            if case .text(let text) = message { text.jsonObject } else { [:] }
        }
    }

    /// The messages up to the first of `type`, or all until nothing more comes.
    func readJSON(until type: String) -> [[String: Any]] {
        var messages: [[String: Any]] = []
        while true {
            let more = readJSON(count: 1)
            if more.isEmpty { return messages }
            for message in more {
                messages.append(message)
                if message["type"] as? String == type { return messages }
            }
        }
    }
}

/// Runs `body` on a fresh WebSocket to `path` over `transport`: `/v1/echo` (the echo
/// endpoint is switched on) or `/v1/spins/counter/stream` (a client with the write
/// scope; in memory, a counter whose state is the number of events applied).
func withStreamTestClient(
    _ transport: HTTPTestTransport, path: String,
    _ configure: (inout SpinServerConfiguration) -> Void = { _ in },
    _ body: (any StreamTestClient) async throws -> Void
) async throws {
    var configuration = SpinServerConfiguration(port: 0)
    configuration.testing.echoEndpoint = true
    configure(&configuration)
    switch transport {
    case .inMemory:
        let kind: StreamMachine.Kind = path == "/v1/echo" ? .echo : .state(clientMayWrite: true)
        try await body(InMemoryStreamClient(kind: kind, limits: configuration.limits))
    case .live:
        let (server, port) = try LiveServerTests.start { $0 = configuration }
        let outcome: Result<Void, any Error>
        let client: LiveStreamClient
        do {
            client = try LiveStreamClient(port: port, path: path, server: server)
        } catch {
            await server.shutdown()
            throw error
        }
        do { outcome = .success(try await body(client)) } catch { outcome = .failure(error) }
        await client.stopping?.value
        await server.shutdown()
        try outcome.get()
    }
}

/// A raw socket to a live server, upgraded to a WebSocket.
final class LiveStreamClient: StreamTestClient {
    private let client: RawClient
    private let server: LoopServer
    private var session = WebSocketSession(role: .client, limits: WebSocketLimits(maxFrameSize: 8 << 20, maxMessageSize: 8 << 20))

    init(port: Int, path: String, server: LoopServer) throws {
        client = try RawClient(port: port)
        self.server = server
        guard client.upgrade(path)?.status == 101 else { throw POSIXError(.EPROTO) }
    }

    func send(_ message: WebSocketMessage) {
        for case .send(let bytes) in session.send(message) { client.send(bytes) }
    }

    func sendRaw(_ bytes: [UInt8]) { client.send(bytes) }

    func read(count: Int) -> (messages: [WebSocketMessage], closeCode: UInt16?) {
        client.readWebSocketMessages(&session, count: count)
    }

    private(set) var stopping: Task<Void, Never>?

    /// Starts the server's shutdown on a queue of its own: the test then blocks its thread
    /// in `read`, and under a full parallel run every cooperative thread may be blocked
    /// like that, which would keep a plain `Task` from starting the shutdown at all.
    func shutdownServer() {
        let server = self.server
        let executor = DispatchQueueExecutor(DispatchQueue(label: "test.shutdown"))
        stopping = Task(executorPreference: executor) { _ = await server.shutdown() }
    }
}

/// The `StreamMachine` with a driver as small as `StreamSession`'s: a feed without a
/// journal, a counter Spin applied at once, output that leaves at once (unless a test
/// says how much room the connection has).
final class InMemoryStreamClient: StreamTestClient {
    private var machine: StreamMachine
    private var client = WebSocketSession(role: .client, limits: WebSocketLimits(maxFrameSize: 8 << 20, maxMessageSize: 8 << 20))
    private let feed = SpinFeed(name: "counter", retain: 16, immediate: true)
    private let mailbox = Mailbox()
    private var subscription: SpinSubscription?
    private var output: [UInt8] = []
    private var closed = false
    private var sequence: UInt64 = 0

    /// What the feed posts under its lock, taken after the call that caused it.
    private final class Mailbox: @unchecked Sendable {
        var messages: [StreamMachine.Message] = []   // only touched by the test's thread
    }

    init(kind: StreamMachine.Kind, limits: SpinServerConfiguration.Limits) {
        let session = WebSocketSession(role: .server, limits: WebSocketLimits(limits))
        machine = StreamMachine(kind: kind, transport: .webSocket(session), outboxLimit: limits.streamQueue)
        guard case .state = kind else { return }
        feed.begin(sequence: 0, state: .number("0"), history: [], epoch: "e1")
        let mailbox = self.mailbox
        subscription = feed.subscribe(since: nil, epoch: nil, deltas: false, start: { start, epoch in
            mailbox.messages.append(.started(start, epoch: epoch))
        }, live: { transition, message, _ in
            mailbox.messages.append(.state(transition, message: message))
        })
        drain()
    }

    func send(_ message: WebSocketMessage) {
        for case .send(let bytes) in client.send(message) { sendRaw(bytes) }
    }

    func sendRaw(_ bytes: [UInt8]) {
        guard !closed else { return }
        var submitted = run(machine.received(bytes, room: .max))
        while submitted { submitted = run(machine.receiveMore(room: .max)) }
    }

    func read(count: Int) -> (messages: [WebSocketMessage], closeCode: UInt16?) {
        var messages: [WebSocketMessage] = []
        var closeCode: UInt16?
        let bytes = output
        output = []
        for action in client.receive(bytes) {
            switch action {
            case .message(let message): messages.append(message)
            case .peerClosed(let code, _): closeCode = code?.rawValue
            default: break
            }
        }
        return (messages, closeCode)
    }

    func shutdownServer() { run(machine.shutdown()) }

    private func drain() {
        let messages = mailbox.messages
        mailbox.messages = []
        if !messages.isEmpty { run(machine.deliver(messages, room: .max)) }
    }

    @discardableResult
    private func run(_ actions: [StreamMachine.Action]) -> Bool {
        var submitted = false
        for action in actions {
            switch action {
            case .write(let bytes): if !closed { output += bytes }
            case .submit(let id, _):
                submitted = true
                // The counter: each event adds one. Its state message, then its ack.
                sequence += 1
                feed.applied(HostedTransition(sequence: sequence, event: .object([("type", .string("increase"))]),
                                              state: .number(String(sequence))))
                mailbox.messages.append(.control(StreamMessage.ack(id: id, sequence: sequence).bytes))
                drain()
            case .refresh(let id, _):
                // Every refresh is accepted here (the session checks the token).
                submitted = true
                mailbox.messages.append(.control(StreamMessage.refreshed(id: id, expiresAt: nil).bytes))
                drain()
            case .stop: subscription?.cancel()
            case .closeAfterFlush: closed = true
            case .pauseReading, .resumeReading, .log: break
            }
        }
        return submitted
    }
}
