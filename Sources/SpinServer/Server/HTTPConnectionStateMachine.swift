import SpinNet
import SpinWire

/// The HTTP/1.1 request cycle of one connection as a value: events in (bytes received,
/// the dispatch returned, a response written, the deadline reached, the peer's end,
/// shutdown), an `Action` out, and the connection deadline to arm in `deadline`. Generic
/// over the instant so every timeout is tested with a manual clock and no socket (the
/// Hummingbird `HTTPConnectionStateHandler.StateMachine` manner);
/// `HTTPConnectionHandler` is the thin driver that executes the actions on a SpinNet
/// connection.
///
/// States: `idle` (waiting for a request) → `readingHead` (a byte of it arrived) →
/// `readingBody` (head complete, body due at the minimum rate) → `processing` (dispatched;
/// no read deadline, a long poll is fine; later pipelined requests wait in the parser) →
/// `idle` or `readingHead` again once the answer is written, in order (RFC 9112 §9.3.2);
/// `streaming` after an upgrade (WebSocket, SSE); `closed` is terminal.
///
/// Deadlines: the first request head is due `headTimeout` after the accept, whether or
/// not a byte came before (a connection that never sends anything holds its slot no
/// longer than a slow one); later heads `headTimeout` after their first byte, and the
/// wait for that byte is `keepAliveTimeout` once the previous answer has left. A body
/// must average `minimumBodyRate` after the grace period. Reaching the deadline answers
/// 408 while a head or body was being read (RFC 9110 §15.5.9) and closes silently while
/// idle (nothing was asked).
///
/// The parser lives inside the machine: where the cycle is (idle, in a head, in a body,
/// upgrade pending) is the parser's state, the machine's decisions read it (read
/// pausing counts its buffered bytes, an upgrade takes its leftover bytes), and one value
/// keeps the two from ever disagreeing; it is also what the in-memory tests drive.
struct HTTPConnectionStateMachine<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// What the driver does next. Actions marked "then `next`" ask the driver to call
    /// `next(now:)` after performing them; the others end the event.
    enum Action: Equatable, Sendable {
        /// Nothing to do until the next event.
        case wait
        /// Write `100 Continue` (RFC 9110 §10.1.1), then `next`.
        case writeContinue
        /// Answer this request (call `responseWritten` once its answer is written, even
        /// from inside the dispatch), then `dispatchReturned` when the dispatch call
        /// returns.
        case dispatch(HTTPRequest)
        /// The request is malformed: answer `error.status` and close after flushing.
        case reject(HTTPParserError)
        /// The deadline passed while a request was being read: answer 408 and close.
        case timeOut(RequestTimeout)
        /// Too much pipelined input waits behind the answer: stop reading.
        case pauseReading
        /// The answer is written: read again, then `next`.
        case resumeReading
        /// Close once the output has left (lingering).
        case closeAfterFlush
        /// Close now: idle with nothing pending, nothing to protect.
        case close
        /// The stream's deadline passed: close it as idle (WebSocket 1001).
        case endIdleStream
        /// The peer ended a stream: finish it and close after flushing.
        case finishStream
        /// Shutdown while streaming: close the stream (WebSocket 1001).
        case shutDownStream
    }

    /// Which part of a request was too slow.
    enum RequestTimeout: Equatable, Sendable {
        case head
        case body
    }

    enum State: Equatable, Sendable {
        /// Waiting for a request. `since`: the accept for the first request (its head
        /// deadline runs from there), otherwise when the answer before was written.
        case idle(since: Instant, servedRequests: Bool)
        /// Part of a head arrived; due `headTimeout` after `since`.
        case readingHead(since: Instant)
        /// The head is complete; `received` bytes arrived since `since`.
        case readingBody(since: Instant, received: Int)
        /// A request was dispatched and is being answered.
        case processing
        /// Upgraded to a stream: only the stream's idle limit applies.
        case streaming
        case closed
    }

    let limits: HTTPConnectionLimits
    private(set) var state: State
    private(set) var parser: HTTPRequestParser
    /// Request heads completed on this connection.
    private(set) var requestCount = 0
    /// The driver is inside its `dispatch` call: an answer written synchronously from
    /// there must not start parsing the next pipelined request (that would recurse once
    /// per request); `dispatchReturned` goes on instead.
    private(set) var dispatching = false
    /// The request being answered may leave the connection open (its own
    /// `Connection` header, and not the last of `maxRequestsPerConnection`).
    private var requestKeepsAlive = false
    private(set) var shuttingDown = false
    /// When an idle connection closes during a graceful shutdown (`shutdownLinger`
    /// after it began).
    private var closingAt: Instant?
    /// How long a connection idle at a graceful shutdown stays open: a request a client
    /// sent as the shutdown began (on a new connection, or one kept alive) is still on
    /// its way, and is better answered (with `Connection: close`) than cut off unread.
    static var shutdownLinger: Duration { .milliseconds(100) }
    /// The peer shut its write side: every complete request is answered, then close.
    private(set) var peerEnded = false
    private(set) var readingPaused = false

    /// A machine for a connection accepted at `now`.
    init(limits: HTTPConnectionLimits, now: Instant) {
        self.limits = limits
        self.parser = HTTPRequestParser(limits: limits.parser)
        self.state = .idle(since: now, servedRequests: false)
    }

    /// Whether the answer being written may keep the connection open: the request's own
    /// wish, not the last one allowed, and no shutdown under way. Read when writing the
    /// answer's head (`Connection: close` otherwise).
    var keepAlive: Bool { requestKeepsAlive && !shuttingDown }

    /// True while a request is being answered.
    /// Matched, not compared: the synthesized `==` copies both states on every request.
    var isProcessing: Bool {
        if case .processing = state { true } else { false }
    }

    /// The connection deadline this state asks for (none once closed: the driver then
    /// leaves the last one armed until SpinNet's linger takes over).
    var deadline: ConnectionDeadline<Instant> {
        switch state {
        case .idle(let since, let served):
            if let closingAt {
                .at(closingAt)
            } else {
                served ? .afterDrain(limits.keepAliveTimeout) : .at(since.advanced(by: limits.headTimeout))
            }
        case .readingHead(let since):
            .at(since.advanced(by: limits.headTimeout))
        case .readingBody(let since, let received):
            bodyDeadline(since: since, received: received)
        case .processing, .closed:
            .none
        case .streaming:
            .inactivity(limits.streamIdleTimeout)
        }
    }

    // MARK: Events

    /// Bytes arrived (not while streaming: the stream takes those).
    mutating func received(_ bytes: [UInt8], now: Instant) -> Action {
        switch state {
        case .idle(let since, let served):
            guard !bytes.isEmpty else { return .wait }
            state = .readingHead(since: served ? now : since)
        case .readingBody(let since, let received):
            state = .readingBody(since: since, received: received + bytes.count)
        case .readingHead, .processing:
            break
        case .streaming, .closed:
            return .wait
        }
        parser.feed(bytes)
        if isProcessing {
            // Pipelined bytes wait in the parser until the answer is written; past one
            // full request's worth, stop reading (the kernel's buffers push back).
            if !readingPaused, parser.bufferedByteCount > limits.maxBufferedInput {
                readingPaused = true
                return .pauseReading
            }
            return .wait
        }
        return next(now: now)
    }

    /// Parses what is buffered and says what to do with it.
    mutating func next(now: Instant) -> Action {
        guard !dispatching else { return .wait }
        switch state {
        case .idle, .readingHead, .readingBody: break
        case .processing, .streaming, .closed: return .wait
        }
        while true {
            switch parser.next() {
            case .needMoreData:
                if peerEnded {
                    // Nothing more will come: every complete request was answered.
                    state = .closed
                    return .closeAfterFlush
                }
                switch (parser.phase, state) {
                case (.body, .readingBody):
                    break
                case (.body, _):
                    headCompleted(keepAlive: true)
                    state = .readingBody(since: now, received: 0)
                case (.head, .idle(let since, let served)):
                    state = .readingHead(since: served ? now : since)
                default:
                    break
                }
                return .wait
            case .sendContinue:
                return .writeContinue
            case .request(let request):
                if case .readingBody = state {
                    requestKeepsAlive = request.keepAlive && requestKeepsAlive
                } else {
                    headCompleted(keepAlive: request.keepAlive)
                }
                state = .processing
                dispatching = true
                return .dispatch(request)
            case .pausedForUpgrade:
                parser.declineUpgrade()
            case .finished:
                state = .closed
                return .closeAfterFlush
            case .error(let error):
                state = .closed
                return .reject(error)
            }
        }
    }

    /// The driver's dispatch call returned (its answer may have been written inside it).
    mutating func dispatchReturned(now: Instant) -> Action {
        dispatching = false
        return next(now: now)
    }

    /// The answer to the request being processed is written (`keepAlive`: whether its
    /// head let the connection stay open).
    mutating func responseWritten(keepAlive: Bool, now: Instant) -> Action {
        guard isProcessing else { return .wait }
        parser.declineUpgrade()   // a refused upgrade candidate: HTTP goes on
        guard keepAlive else {
            state = .closed
            return .closeAfterFlush
        }
        // A pipelined head already buffered is due from now; otherwise the keep-alive
        // wait starts once this answer has left.
        state = parser.bufferedByteCount > 0 ? .readingHead(since: now) : .idle(since: now, servedRequests: true)
        if readingPaused {
            readingPaused = false
            return .resumeReading
        }
        return next(now: now)
    }

    /// The request being processed became a WebSocket: returns the bytes read past it
    /// (the first frames).
    mutating func upgraded(now: Instant) -> [UInt8] {
        guard isProcessing else { return [] }
        state = .streaming
        return parser.acceptUpgrade()
    }

    /// The request being processed is answered with a stream of server-sent events.
    mutating func startedEventStream(now: Instant) {
        guard isProcessing else { return }
        parser.declineUpgrade()
        state = .streaming
    }

    /// The stream is open and subscribed: `.shutDownStream` if the server began shutting
    /// down while its request was being answered (the shutdown found no stream to close
    /// then), `.wait` otherwise.
    func streamOpened() -> Action {
        state == .streaming && shuttingDown ? .shutDownStream : .wait
    }

    /// The deadline of `deadline` passed.
    mutating func deadlineReached(now: Instant) -> Action {
        switch state {
        case .idle:
            state = .closed
            // Nothing was asked: the connection closes without a word.
            return closingAt != nil ? .close : .wait
        case .readingHead:
            state = .closed
            return .timeOut(.head)
        case .readingBody:
            state = .closed
            return .timeOut(.body)
        case .streaming:
            return .endIdleStream
        case .processing, .closed:
            state = .closed
            return .wait
        }
    }

    /// The peer shut its write side.
    mutating func peerClosed(now: Instant) -> Action {
        switch state {
        case .streaming:
            return .finishStream
        case .closed:
            return .closeAfterFlush
        case .processing:
            peerEnded = true
            return .wait   // the rest is answered after this answer
        case .idle, .readingHead, .readingBody:
            peerEnded = true
            return next(now: now)
        }
    }

    /// The server is shutting down gracefully at `now`.
    mutating func shutdownRequested(now: Instant) -> Action {
        shuttingDown = true
        switch state {
        case .idle:
            // A request may be on its way: it gets `shutdownLinger` to arrive (and is then
            // answered with Connection: close); a connection still idle then closes.
            closingAt = now.advanced(by: Self.shutdownLinger)
            return .wait
        case .readingHead, .readingBody, .processing, .closed:
            return .wait   // an answer in progress goes out with Connection: close
        case .streaming:
            return .shutDownStream
        }
    }

    /// The connection closed.
    mutating func closed() {
        state = .closed
    }

    // MARK: Helpers

    /// A head is complete: it counts against `maxRequestsPerConnection`.
    private mutating func headCompleted(keepAlive: Bool) {
        requestCount += 1
        requestKeepsAlive = keepAlive && requestCount < limits.maxRequestsPerConnection
    }

    /// The instant by which `received` bytes fall under the minimum rate: after the
    /// grace period, a body must average at least `minimumBodyRate` bytes/s since its
    /// head completed (Kestrel's MinRequestBodyDataRate rule).
    private func bodyDeadline(since: Instant, received: Int) -> ConnectionDeadline<Instant> {
        guard limits.minimumBodyRate > 0 else { return .none }
        let earned = Duration.seconds(Double(received) / Double(limits.minimumBodyRate))
        return .at(since.advanced(by: max(limits.bodyRateGracePeriod, earned)))
    }
}
