#if canImport(Glibc)
import Glibc
#endif
import SpinCore
import SpinConcurrency
import SpinNet
import SpinWire

/// Drives one connection: a thin driver that feeds SpinNet's events to the
/// `HTTPConnectionStateMachine` (requests, keep-alive, pipelining in order, timeouts),
/// performs the actions it returns, and moves bytes: a request to the `APIRouter`
/// (admitted there, observed by `RequestObservers`), its answer to the connection, a
/// relayed one to its Spin's owner (`OwnerRelay`), an upgraded connection to its
/// `StreamSession`.
///
/// `@unchecked Sendable`: every mutable property is only touched on the connection's
/// event loop (SpinNet calls the handler there; results from Spins hop there with
/// `connection.execute`).
final class HTTPConnectionHandler: ConnectionHandler, @unchecked Sendable {
    /// A request relayed to its Spin's owner, and how it was received.
    private struct Relayed {
        let relay: OwnerRelay
        let request: HTTPRequest
        let keepAlive: Bool
    }

    /// The part of a large response not yet handed to the connection (written a piece at
    /// a time as its output drains: `send`), and what follows once it is.
    private struct Unsent {
        var bytes: ArraySlice<UInt8>
        let then: () -> Void
    }

    private let connection: Connection
    private let context: ServerContext
    private var machine: HTTPConnectionStateMachine<ContinuousClock.Instant>
    private var writer = HTTPResponseWriter()
    /// The stream an upgrade opened (WebSocket, SSE), until the connection is handed
    /// over to it (`handOver`): from then on the stream hears the connection's callbacks,
    /// not this handler.
    private var stream: StreamSession?
    /// The request being relayed to its Spin's owner.
    private var relayed: Relayed?
    /// The deadline last armed on the connection (armed again only when it changes).
    private var armedDeadline = ConnectionDeadline<ContinuousClock.Instant>.none
    /// The request being answered: its ID, count, spans and log line.
    private var observers: RequestObservers
    private var unsent: Unsent?

    init(connection: Connection, context: ServerContext) {
        self.connection = connection
        self.context = context
        self.machine = HTTPConnectionStateMachine(limits: context.httpLimits, now: connection.openedAt)
        self.observers = RequestObservers(metrics: context.metrics, tracer: context.tracer,
                                          log: AccessLog(logger: context.logger, remote: connection.remoteAddress))
    }

    func didOpen(_ connection: Connection) {
        context.metrics.connectionOpened()
        armDeadline()
    }

    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        if let relayed, relayed.relay.isPiping {
            relayed.relay.clientSent(bytes)
            return
        }
        run(machine.received(bytes, now: .now))
    }

    func didReceiveEnd(on connection: Connection) {
        run(machine.peerClosed(now: .now))
    }

    func didBecomeWritable(_ connection: Connection) {
        if unsent != nil { return sendUnsent() }
        relayed?.relay.clientWritable()
    }

    func didReachDeadline(on connection: Connection) {
        run(machine.deadlineReached(now: .now))
    }

    /// Never armed here: a stream's pings are the stream's, after the hand-over.
    func didReachAlarm(on connection: Connection) {}

    func shutdownRequested(on connection: Connection) {
        run(machine.shutdownRequested(now: .now))
    }

    func didClose(_ connection: Connection, reason: CloseReason) {
        // A large response cut short: its bytes, and the continuation that holds this
        // handler, go with the connection.
        unsent = nil
        endRelay()
        machine.closed()
        context.metrics.connectionClosed()
    }

    // MARK: Actions

    /// Performs `action` and those that follow it, then arms the deadline the machine
    /// is left asking for.
    private func run(_ action: HTTPConnectionStateMachine<ContinuousClock.Instant>.Action) {
        var action = action
        while true {
            switch action {
            case .wait:
                armDeadline()
                return
            case .writeContinue:
                _ = connection.write(HTTPResponseWriter.continueResponse)
                action = machine.next(now: .now)
            case .dispatch(let request):
                handle(request)   // the deadline is armed when the dispatch returns
                action = machine.dispatchReturned(now: .now)
            case .reject(let error):
                observers.refuse(status: error.status, parserError: error, connection: connection.id)
                writeError(.malformedRequest(error, limit: limit(exceededBy: error)))
                return
            case .timeOut(let part):
                observers.refuse(status: 408, connection: connection.id)
                writeError(.requestTimeout(inBody: part == .body))
                return
            case .pauseReading:
                connection.pauseReading()
                return
            case .resumeReading:
                connection.resumeReading()
                action = machine.next(now: .now)
            case .closeAfterFlush:
                connection.closeAfterFlush()
                return
            case .close:
                connection.close()
                return
            case .endIdleStream:
                stream?.fail(.goingAway, reason: "idle")
                endRelay()
                return
            case .finishStream:
                stream?.finish()
                endRelay()
                connection.closeAfterFlush()
                return
            case .shutDownStream:
                stream?.shutdown()
                if relayed != nil {
                    // A relayed stream ends with the connection: the client reconnects.
                    endRelay()
                    connection.closeAfterFlush()
                }
                return
            }
        }
    }

    /// Arms the machine's deadline on the connection when it changed. A closed machine
    /// leaves the last one armed: a connection flushing its last answer keeps the
    /// deadline it had (a 400 to a client that never reads ends at the head deadline)
    /// until SpinNet's linger takes over.
    private func armDeadline() {
        if case .closed = machine.state { return }
        let deadline = machine.deadline
        guard !Self.same(deadline, armedDeadline) else { return }
        armedDeadline = deadline
        connection.setDeadline(deadline)
    }

    /// `==` on deadlines, compiled here for this clock: SpinNet's generic `==` called from
    /// this module runs unspecialised and looks up type metadata on every request. A case
    /// it does not know compares unequal (the deadline is armed again: correct, if slower).
    private static func same(_ lhs: ConnectionDeadline<ContinuousClock.Instant>,
                             _ rhs: ConnectionDeadline<ContinuousClock.Instant>) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none): true
        case let (.at(left), .at(right)): left == right
        case let (.inactivity(left), .inactivity(right)): left == right
        case let (.afterDrain(left), .afterDrain(right)): left == right
        default: false
        }
    }

    // MARK: Requests

    /// Hands `request` to the router (admitted there once: its route, its caller), and
    /// its outcome back to this loop.
    private func handle(_ request: HTTPRequest) {
        let keepAlive = machine.keepAlive
        let started = Monotonic.nanoseconds
        let connection = self.connection
        let admission = context.router.admit(request)
        let trace = observers.begin(request, admission, readable: connection.turnStarted, started: started)
        context.router.handle(request, admission: admission, trace: trace) { [self] outcome in
            connection.execute {
                self.finish(request, outcome: outcome, keepAlive: keepAlive)
            }
        }
    }

    private func finish(_ request: HTTPRequest, outcome: RouteOutcome, keepAlive: Bool) {
        guard machine.isProcessing else { return }   // the connection closed meanwhile
        switch outcome {
        case .respond(let response):
            respond(response, to: request, keepAlive: keepAlive && machine.keepAlive && !response.closesConnection
                        && !context.router.cluster.isLeaving)
        case .stream(let source, let upgrade, let identity):
            openStream(request, source: source, upgrade: upgrade, identity: identity)
        case .proxy(let proxied):
            let relay = OwnerRelay(proxied, for: request, requestID: observers.current.id, client: connection, delegate: self)
            relayed = Relayed(relay: relay, request: request, keepAlive: keepAlive)
            context.metrics.requestProxied(route: observers.current.route)
            relay.start()
        }
    }

    /// Stops the relay in progress, if any (its owner connection closes).
    private func endRelay() {
        relayed?.relay.stop()
        relayed = nil
    }

    /// Writes the answer to `request`, stamped with its ID, and observes it; the state
    /// machine goes on once it is handed to the connection.
    private func respond(_ response: APIResponse, to request: HTTPRequest, keepAlive: Bool) {
        let bytes = written(response, HTTPResponseContext(requestMethod: request.method, requestVersion: request.version,
                                                          keepAlive: keepAlive))
        observers.end(request, status: response.status, bytes: bytes.count, stages: response.stages)
        send(bytes) { [self] in run(machine.responseWritten(keepAlive: keepAlive && request.keepAlive, now: .now)) }
    }

    /// Writes `bytes`, then calls `then`: at once when they fit below the connection's
    /// high watermark (every response but a large one), else a piece at a time as the
    /// output drains, so that a response of any size is sent whole (never cut at
    /// `maxPendingOutput`) and the next pipelined response waits for it.
    private func send(_ bytes: [UInt8], then: @escaping () -> Void) {
        guard bytes.count > Self.piece else {
            _ = connection.write(bytes)
            return then()
        }
        unsent = Unsent(bytes: bytes[...], then: then)
        sendUnsent()
    }

    /// The largest piece of a response written at once: a fraction of SpinNet's high
    /// watermark, so that the pending output stays far below `maxPendingOutput`.
    private static let piece = 64 << 10

    private func sendUnsent() {
        while let bytes = unsent?.bytes, !bytes.isEmpty {
            let piece = bytes.prefix(Self.piece)
            unsent?.bytes = bytes.dropFirst(piece.count)
            switch connection.write(piece) {
            case .accepted: continue
            case .aboveHighWatermark: if unsent?.bytes.isEmpty == false { return }   // `didBecomeWritable` goes on
            case .closed:
                unsent = nil
                return
            }
        }
        let then = unsent?.then
        unsent = nil
        then?()
    }

    /// Switches the connection to the stream the router accepted.
    private func openStream(_ request: HTTPRequest, source: StreamSource, upgrade: StreamUpgrade, identity: Identity) {
        switch upgrade {
        case .webSocket(let accepted):
            let head = writer.switchingProtocols(headers: observers.stamped(accepted.headers), secondsSince1970: Self.now)
            _ = connection.write(head)
            let leftover = machine.upgraded(now: .now)
            armDeadline()
            observers.end(request, status: 101, bytes: head.count)
            let session = WebSocketSession(role: .server, limits: context.webSocketLimits, deflate: accepted.deflate)
            let stream = StreamSession(connection: connection, source: source, transport: .webSocket(session), context: context,
                                       identity: identity)
            self.stream = stream
            stream.start()
            if !leftover.isEmpty { stream.receive(leftover) }
            run(machine.streamOpened())
            handOver(to: stream)
        case .sse:
            machine.startedEventStream(now: .now)
            let head = HTTPResponseHead(status: .ok, headers: observers.stamped([
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            ]))
            let responseContext = HTTPResponseContext(requestMethod: request.method, requestVersion: request.version,
                                                      keepAlive: false)
            let streaming = writer.streamingResponse(head, context: responseContext, secondsSince1970: Self.now)
            _ = connection.write(streaming.head)
            armDeadline()
            observers.end(request, status: 200, bytes: streaming.head.count)
            let stream = StreamSession(connection: connection, source: source, transport: .sse(streaming.body), context: context,
                                       identity: identity)
            self.stream = stream
            stream.start()
            run(machine.streamOpened())
            handOver(to: stream)
        }
    }

    /// From now on the stream drives the connection (`StreamSession+ConnectionHandler`):
    /// this handler is released once the call that opened the stream returns.
    private func handOver(to stream: StreamSession) {
        connection.replaceHandler(stream)
    }

    /// The configured limit a refused request exceeded, which its message names.
    private func limit(exceededBy error: HTTPParserError) -> Int? {
        let limits = context.configuration.limits
        switch error {
        case .bodyTooLarge: return limits.maxBodyBytes
        case .headerSectionTooLarge: return limits.maxHeaderBytes
        default: return nil
        }
    }

    /// `response` as it leaves, stamped with the request's ID: an error's body written again
    /// with it, and `X-Request-Id` after the response's own fields.
    private func written(_ response: APIResponse, _ context: HTTPResponseContext) -> [UInt8] {
        writer.response(HTTPResponseHead(status: HTTPStatus(code: response.status), headers: response.headers),
                        body: observers.body(of: response), context: context, secondsSince1970: Self.now,
                        lastField: observers.idField)
    }

    /// Answers an error the parser or a deadline found, then closes.
    private func writeError(_ error: APIError) {
        let bytes = written(APIResponse.error(error),
                            HTTPResponseContext(requestMethod: .get, requestVersion: .http1_1, keepAlive: false))
        _ = connection.write(bytes)
        connection.closeAfterFlush()
    }

    private static var now: Int { Int(time(nil)) }
}

/// A relayed request's end, as its `OwnerRelay` reports it: the state machine goes on
/// as for a request answered here.
extension HTTPConnectionHandler: OwnerRelayDelegate {
    func relayFailed(_ error: APIError) {
        guard let relayed else { return }
        self.relayed = nil
        respond(.error(error), to: relayed.request, keepAlive: relayed.keepAlive && machine.keepAlive)
    }

    func relayKeepsAlive() -> Bool {
        guard let relayed else { return false }
        return relayed.keepAlive && machine.keepAlive && relayed.request.keepAlive && !context.router.cluster.isLeaving
    }

    func relayWroteHead(status: Int, bytes: Int, mode: OwnerRelay.Mode) -> [UInt8] {
        guard let relayed else { return [] }
        observers.end(relayed.request, status: status, bytes: bytes)
        switch mode {
        case .framed:
            return []
        case .upgraded:
            let leftover = machine.upgraded(now: .now)
            armDeadline()
            run(machine.streamOpened())
            return leftover
        case .streaming:
            machine.startedEventStream(now: .now)
            armDeadline()
            run(machine.streamOpened())
            return []
        }
    }

    func relayFinished(keepAlive: Bool) {
        relayed = nil
        run(machine.responseWritten(keepAlive: keepAlive, now: .now))
    }

    func relayEnded() {
        relayed = nil
        connection.closeAfterFlush()
    }
}
