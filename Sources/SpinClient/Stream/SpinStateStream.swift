import Foundation
import SpinCore
import SpinNet
import SpinWire
import SpinConcurrency

extension SpinClient {
    /// The states of the Spin named `spin` as they are applied, over a WebSocket that
    /// reconnects by itself (see `SpinStateStream`). With `since`, the first connection
    /// resumes after that sequence (the server sends the state messages after it when it
    /// still has them, else a snapshot).
    public func states<State: Decodable>(of spin: String, as stateType: State.Type,
                                         since: UInt64? = nil) -> SpinStateStream<State> {
        SpinStateStream(client: self, spin: spin, since: since)
    }
}

/// The state stream of one Spin, as an `AsyncSequence` of `StateUpdate`s.
///
/// A connection starts with a snapshot (or, when resuming, with the state messages
/// missed), then one state message per applied event. When the connection is lost, the
/// iterator reconnects with exponential back-off (`StreamOptions.reconnect`, honouring a
/// 429/503's `Retry-After`) and asks for `?since=<last sequence>&epoch=<last epoch>`: when
/// the server's history is unchanged, the stream goes on with the next sequence, with no
/// gap and no duplicate; when it is not, a new snapshot comes first.
///
/// Iteration ends (returns nil) when the consuming task is cancelled — which closes the
/// connection at once — and throws for what no retry changes: a refusal such as 401, 403
/// or 404, an unsupported URL, or a state that does not decode as `State`.
public struct SpinStateStream<State: Decodable>: AsyncSequence, Sendable {
    /// Each snapshot or state message.
    public typealias Element = StateUpdate<State>

    let client: SpinClient
    let spin: String
    let since: UInt64?

    /// A new reader: it connects on its first `next()`, independently of other readers.
    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client, spin: spin, position: StreamPosition(since: since))
    }

    /// Reads the stream, reconnecting as needed. Not to be shared between tasks.
    public struct Iterator: AsyncIteratorProtocol {
        private let client: SpinClient
        private let spin: String
        private var position: StreamPosition
        private var connection: StreamConnection?
        /// Text messages received but not yet handed on.
        private var pending: [[UInt8]] = []
        /// Failed attempts since the last connection that delivered a message.
        private var failures = 0
        /// The wait before the next attempt, nil for at once.
        private var wait: Duration?
        private var finished = false
        private let slot = SocketSlot()
        /// The thread the blocking socket calls run on; made on the first `next()`.
        private var worker: BlockingWorker?
        /// Events sent over the stream so far (their ids: `c1`, `c2`, ...).
        private var sent = 0
        /// When to refresh the token the connection runs on (seconds since 1970:
        /// `JWTExpiry.refreshTime`), when the client has a token provider and the token is
        /// a JWT with an `exp`.
        private var refreshAt: Double?
        /// The state this connection's patches apply to; nil without deltas.
        private var replica: StreamReplica?

        init(client: SpinClient, spin: String, position: StreamPosition) {
            self.client = client
            self.spin = spin
            self.position = position
        }

        /// The next snapshot or state; nil once the task is cancelled.
        public mutating func next() async throws -> StateUpdate<State>? {
            while !finished {
                if let update = try takePending() { return update }
                if Task.isCancelled { break }
                do {
                    if connection == nil {
                        try await connect()
                    } else {
                        try await refreshIfDue()
                        try await receive()
                    }
                } catch is CancellationError {
                    break
                } catch let error as SpinClientError where error.isRetryable {
                    lose(error)
                } catch {
                    finish()
                    throw error
                }
            }
            finish()
            return nil
        }

        /// Sends `event` to the Spin over this stream's connection (connecting first when
        /// there is none) and waits for the server's acknowledgement: the Spin's sequence
        /// once the event is applied and durable. Snapshots and states that arrive
        /// meanwhile are kept for `next()`, the event's own state among them. Needs a token
        /// with the `write` scope when the server has tokens.
        ///
        /// Throws `SpinClientError.eventRefused` with the server's code (`invalid_event`,
        /// `forbidden`, `spin_suspended`, ...), or `.connectionFailed` when the connection
        /// is lost before the answer: the event may then have been applied or not (read the
        /// stream to know); the next `next()` reconnects.
        public mutating func send<Event: Encodable>(_ event: Event) async throws -> UInt64 {
            guard !finished else { throw SpinClientError.connectionFailed("the stream has ended") }
            sent += 1
            let id = "c\(sent)"
            let message = try StreamReply.eventMessage(id: id, event: event)
            do {
                if connection == nil { try await connect() }
                try sendText(message)
                while true {
                    if let sequence = try takeReply(to: id) { return sequence }
                    try await receive()
                }
            } catch is CancellationError {
                finish()
                throw CancellationError()
            } catch let error as SpinClientError {
                guard case .connectionFailed = error else { throw error }
                lose(error)
                // The answer may have come just before the connection ended.
                if let sequence = try takeReply(to: id) { return sequence }
                throw error
            }
        }

        /// Takes the answer to message `id` out of the pending messages: its sequence, nil
        /// when it has not come, or the refusal thrown.
        private mutating func takeReply(to id: String) throws(SpinClientError) -> UInt64? {
            for (index, bytes) in pending.enumerated() {
                guard let reply = StreamReply(to: id, in: bytes) else { continue }
                pending.remove(at: index)
                switch reply {
                case .ack(let sequence): return sequence
                case .refused(let code, let message): throw .eventRefused(code: code, message: message)
                }
            }
            return nil
        }

        /// Decodes the next pending text message; nil when none is left to hand on.
        private mutating func takePending() throws -> StateUpdate<State>? {
            while !pending.isEmpty {
                let bytes = pending.removeFirst()
                let message: StreamMessage<State>
                do {
                    message = try StreamMessage<State>.decode(bytes, replica: &replica)
                } catch where error.isRetryable {
                    // A patch that does not apply: resume after the last state handed on
                    // (the server sends a whole state first) rather than hand on a wrong one.
                    pending = []
                    lose(error)
                    return nil
                }
                guard case .update(let update) = message else { continue }
                // A connection that delivers counts as a success: the back-off starts over.
                failures = 0
                if position.admit(isSnapshot: update.kind == .snapshot, sequence: update.sequence, epoch: update.epoch) {
                    return update
                }
            }
            return nil
        }

        private mutating func connect() async throws {
            if let wait { try await Task.sleep(for: wait) }
            let deltas = client.streamOptions.deltas
            let endpoint = try StreamConnection.Endpoint(client.makeURL(
                path: ["v1", "spins", spin, "stream"],
                query: position.resumeQuery.map { URLQueryItem(name: $0.name, value: $0.value) }
                    + (deltas ? [URLQueryItem(name: "delta", value: "json-patch")] : [])))
            let token = try await client.currentToken()
            refreshAt = client.tokenProvider == nil ? nil
                : token.flatMap(JWTExpiry.seconds).map { JWTExpiry.refreshTime(expiry: $0) }
            let (options, slot) = (client.streamOptions, self.slot)
            var opened = try await offPool {
                try StreamConnection.open(endpoint, token: token, options: options, slot: slot)
            }
            let early = opened.early
            opened.early = []
            connection = opened
            // Kept across connections: messages of the last one may still wait in `pending`,
            // and a new connection starts with a whole state, which resets it.
            if deltas, replica == nil { replica = StreamReplica() }
            if !early.isEmpty { try handle(early) }
        }

        /// Past `refreshAt`, shortly before the token expires: asks the provider for a new
        /// token and sends it in-band (`{"type":"refresh","token":..}`); the server's
        /// `refreshed` is skipped like any message that is not a state. A failure here
        /// is left to the server: it closes the stream (4001) at expiry, and the stream
        /// reconnects with whatever token the provider gives then.
        private mutating func refreshIfDue() async throws {
            guard let due = refreshAt, Date().timeIntervalSince1970 >= due, connection != nil else { return }
            refreshAt = nil
            guard let token = try? await client.currentToken(),
                  let message = try? String(decoding: JSONEncoder().encode(["type": "refresh", "token": token]), as: UTF8.self)
            else { return }
            try sendText(message)
            refreshAt = JWTExpiry.seconds(token).map { JWTExpiry.refreshTime(expiry: $0) }
        }

        /// Sends one text message on the open connection.
        private mutating func sendText(_ message: String) throws(SpinClientError) {
            guard var current = connection else { throw .connectionFailed("not connected") }
            for case .send(let frame) in current.session.sendText(message) {
                do {
                    try current.socket.send(frame)
                } catch {
                    throw .connectionFailed(error.description)
                }
            }
            connection = current
        }

        private mutating func receive() async throws {
            guard let socket = connection?.socket else { return }
            let bytes: [UInt8]
            do {
                bytes = try await offPool { try socket.receive() }
            } catch let error as ClientSocketError {
                throw SpinClientError.connectionFailed(error.description)
            }
            guard !bytes.isEmpty else { throw SpinClientError.connectionFailed("closed by the server") }
            try handle(bytes)
        }

        /// Runs the codec over `bytes`: text messages are queued, pings answered, a close
        /// or a protocol error ends the connection (to be reconnected).
        private mutating func handle(_ bytes: [UInt8]) throws {
            guard var current = connection else { return }
            var closed: String?
            for action in current.session.receive(bytes) {
                switch action {
                case .message(.text(let text)): pending.append(Array(text.utf8))
                case .message(.binary): break
                case .send(let frame): try? current.socket.send(frame)
                case .pongReceived: break
                case .peerClosed(let code, let reason):
                    closed = "closed by the server (\(code.map { String($0.rawValue) } ?? "no code")) \(reason)"
                case .failed(let error): closed = "WebSocket protocol error: \(error)"
                case .closeConnection: closed = closed ?? "closed"
                }
            }
            connection = current
            // Messages that came before the close are still handed on.
            if let closed { throw SpinClientError.connectionFailed(closed) }
        }

        /// Drops the connection and schedules the next attempt.
        private mutating func lose(_ error: SpinClientError) {
            connection?.socket.shutdown()
            connection = nil
            slot.clear()
            let backoff = client.streamOptions.reconnect.delay(attempt: failures)
            wait = Swift.max(backoff, .seconds(error.retryAfter ?? 0))
            failures += 1
        }

        private mutating func finish() {
            finished = true
            connection?.socket.shutdown()
            connection = nil
            pending = []
            slot.cancel()
            worker = nil
        }

        /// Runs blocking `work` on the stream's worker thread. When the task is cancelled,
        /// the slot's socket is shut down (which ends a blocked read) and this throws
        /// `CancellationError` at once; what the work returns later is dropped.
        private mutating func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
            let worker = self.worker ?? BlockingWorker(name: "SpinClient \(spin) stream")
            self.worker = worker
            let slot = self.slot
            let resumer = Resumer<T>()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    resumer.set(continuation)
                    worker.submit { resumer.resume(with: Result { try work() }) }
                }
            } onCancel: {
                slot.cancel()
                resumer.resume(with: .failure(CancellationError()))
            }
        }
    }
}

/// Resumes a continuation once, with whichever result comes first: the work's, or the
/// cancellation's (which may come before the continuation is even set).
private final class Resumer<T: Sendable>: Sendable {
    private let state = Protected<(continuation: CheckedContinuation<T, any Error>?, early: Result<T, any Error>?, done: Bool)>(
        (nil, nil, false))

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            guard let early = state.early else {
                state.continuation = continuation
                return nil
            }
            state.early = nil
            return early
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(with result: Result<T, any Error>) {
        let continuation: CheckedContinuation<T, any Error>? = state.withLock { state in
            guard !state.done else { return nil }
            state.done = true
            guard let continuation = state.continuation else {
                state.early = result
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }
}
