#if canImport(Glibc)
import Glibc
#endif
import Logging
import SpinCore
import SpinNet
import SpinWire

/// Drives one connection: a thin driver that feeds SpinNet's events to the
/// `HTTPConnectionStateMachine` (requests, keep-alive, pipelining in order, timeouts),
/// performs the actions it returns, answers requests through the `APIRouter`, and hands
/// an upgraded connection to its `StreamSession`.
///
/// `@unchecked Sendable`: every mutable property is only touched on the connection's
/// queue (SpinNet calls the handler there; results from Spins hop there with
/// `connection.execute`).
final class HTTPConnectionHandler: ConnectionHandler, @unchecked Sendable {
    private let connection: Connection
    private let context: ServerContext
    private var machine: HTTPConnectionStateMachine<ContinuousClock.Instant>
    private var writer = HTTPResponseWriter()
    /// The stream an upgrade opened (WebSocket, SSE), until the connection is handed
    /// over to it (`handOver`): from then on the stream hears the connection's callbacks,
    /// not this handler.
    private var stream: StreamSession?
    /// The request being relayed to its Spin's owner, and how it was received.
    private var relay: OwnerRelay?
    private var relayed: (request: HTTPRequest, keepAlive: Bool, started: ContinuousClock.Instant)?
    /// The deadline last armed on the connection (armed again only when it changes).
    private var armedDeadline = ConnectionDeadline<ContinuousClock.Instant>.none
    /// The metrics label of the request being answered: its route's template, matched
    /// once when the router admits the request.
    private var routeLabel = "other"
    /// The ID of the request being answered (`X-Request-Id`), and what makes new ones.
    private var requestID = ""
    /// The subject of the request being handled (its credentials'), for its log line.
    private var subject: String?
    private var requestIDs = RequestID.Generator()
    /// The spans of the request being answered, when the process traces.
    private var trace: RequestTrace?
    private var requestCounting = RequestCounting()
    /// The part of a large response not yet handed to the connection (written a piece at
    /// a time as its output drains: `send`), and what follows once it is.
    private var unsent: ArraySlice<UInt8> = []
    private var afterUnsent: (() -> Void)?

    init(connection: Connection, context: ServerContext) {
        self.connection = connection
        self.context = context
        self.machine = HTTPConnectionStateMachine(limits: context.httpLimits, now: connection.openedAt)
    }

    func didOpen(_ connection: Connection) {
        context.metrics.connectionOpened()
        armDeadline()
    }

    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        if let relay, relay.isPiping {
            relay.clientSent(bytes)
            return
        }
        run(machine.received(bytes, now: .now))
    }

    func didReceiveEnd(on connection: Connection) {
        run(machine.peerClosed(now: .now))
    }

    func didBecomeWritable(_ connection: Connection) {
        if afterUnsent != nil { return sendUnsent() }
        relay?.clientWritable()
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
        unsent = []
        afterUnsent = nil
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
                requestID = requestIDs.make()
                context.metrics.requestAnswered(route: "other", status: error.status)
                context.logger.info("bad request", metadata: ["connection": "\(connection.id)", "status": .stringConvertible(error.status),
                                                               "code": "\(error.code)", "request_id": "\(requestID)"])
                writeError(.malformedRequest(error, limit: limit(exceededBy: error)), version: .http1_1, method: .get)
                return
            case .timeOut(let part):
                let error = APIError.requestTimeout(inBody: part == .body)
                requestID = requestIDs.make()
                context.metrics.requestAnswered(route: "other", status: 408)
                writeError(error, version: .http1_1, method: .get)
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
                if relay != nil {
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

    private func handle(_ request: HTTPRequest) {
        let keepAlive = machine.keepAlive
        let started = ContinuousClock.now
        let connection = self.connection
        let admission = context.router.admit(request)
        routeLabel = admission.label
        requestID = requestIDs.id(for: request.headers[RequestID.header])
        trace = context.tracer.map {
            RequestTrace(tracer: $0, method: request.method.rawValue, route: routeLabel, requestID: requestID)
        }
        subject = admission.subject
        context.router.handle(request, admission: admission, trace: trace) { [self] outcome in
            connection.execute {
                self.finish(request, outcome: outcome, keepAlive: keepAlive, started: started)
            }
        }
    }

    private func finish(_ request: HTTPRequest, outcome: RouteOutcome, keepAlive: Bool, started: ContinuousClock.Instant) {
        guard machine.isProcessing else { return }   // the connection closed meanwhile
        switch outcome {
        case .respond(let response):
            respond(response, to: request, keepAlive: keepAlive && machine.keepAlive && !response.closesConnection
                        && !context.router.cluster.isLeaving,
                    started: started)
        case .stream(let source, let upgrade, let identity):
            openStream(request, source: source, upgrade: upgrade, identity: identity, started: started)
        case .proxy(let proxied):
            let relay = OwnerRelay(proxied, for: request, requestID: requestID, client: connection, delegate: self)
            self.relay = relay
            relayed = (request, keepAlive, started)
            context.metrics.requestProxied(route: routeLabel)
            relay.start()
        }
    }

    /// Stops the relay in progress, if any (its owner connection closes).
    private func endRelay() {
        relay?.stop()
        relay = nil
        relayed = nil
    }

    private func respond(_ response: APIResponse, to request: HTTPRequest, keepAlive: Bool, started: ContinuousClock.Instant) {
        var response = response
        if let error = response.error { response.body = APIResponse.error(error, requestID: requestID).body }
        let head = HTTPResponseHead(status: HTTPStatus(code: response.status),
                                    headers: headers(response.headers))
        let responseContext = HTTPResponseContext(requestMethod: request.method, requestVersion: request.version,
                                                  keepAlive: keepAlive)
        let bytes = writer.response(head, body: response.body, context: responseContext, secondsSince1970: Self.now)
        record(request, status: response.status, bytes: bytes.count, started: started)
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
        unsent = bytes[...]
        afterUnsent = then
        sendUnsent()
    }

    /// The largest piece of a response written at once: a fraction of SpinNet's high
    /// watermark, so that the pending output stays far below `maxPendingOutput`.
    private static let piece = 64 << 10

    private func sendUnsent() {
        while !unsent.isEmpty {
            let piece = unsent.prefix(Self.piece)
            unsent = unsent.dropFirst(piece.count)
            switch connection.write(piece) {
            case .accepted: continue
            case .aboveHighWatermark: if !unsent.isEmpty { return }   // `didBecomeWritable` goes on
            case .closed:
                unsent = []
                afterUnsent = nil
                return
            }
        }
        let then = afterUnsent
        afterUnsent = nil
        then?()
    }

    /// Switches the connection to the stream the router accepted.
    private func openStream(_ request: HTTPRequest, source: StreamSource, upgrade: StreamUpgrade, identity: Identity,
                            started: ContinuousClock.Instant) {
        switch upgrade {
        case .webSocket(let accepted):
            let head = writer.switchingProtocols(headers: headers(accepted.headers),
                                                 secondsSince1970: Self.now)
            _ = connection.write(head)
            let leftover = machine.upgraded(now: .now)
            armDeadline()
            record(request, status: 101, bytes: head.count, started: started)
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
            let head = HTTPResponseHead(status: .ok, headers: headers([
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            ]))
            let responseContext = HTTPResponseContext(requestMethod: request.method, requestVersion: request.version,
                                                      keepAlive: false)
            let streaming = writer.streamingResponse(head, context: responseContext, secondsSince1970: Self.now)
            _ = connection.write(streaming.head)
            armDeadline()
            record(request, status: 200, bytes: streaming.head.count, started: started)
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

    /// The parser's message, with the configured limit where one was exceeded.
    /// The configured limit a refused request exceeded, which its message names.
    private func limit(exceededBy error: HTTPParserError) -> Int? {
        let limits = context.configuration.limits
        switch error {
        case .bodyTooLarge: return limits.maxBodyBytes
        case .headerSectionTooLarge: return limits.maxHeaderBytes
        default: return nil
        }
    }

    /// Answers an error the parser or a deadline found, then closes.
    private func writeError(_ error: APIError, version: HTTPVersion, method: HTTPMethod) {
        let response = APIResponse.error(error, requestID: requestID)
        let head = HTTPResponseHead(status: HTTPStatus(code: response.status), headers: headers(response.headers))
        let bytes = writer.response(head, body: response.body,
                                    context: HTTPResponseContext(requestMethod: method, requestVersion: version, keepAlive: false),
                                    secondsSince1970: Self.now)
        _ = connection.write(bytes)
        connection.closeAfterFlush()
    }

    /// A response's headers with the request's `X-Request-Id`.
    private func headers(_ given: HTTPHeaders) -> HTTPHeaders {
        var fields = HTTPHeaders(minimumCapacity: given.count + 1)
        fields.append(contentsOf: given)
        fields.append(name: RequestID.header, value: requestID)
        return fields
    }

    /// One log line, the request metrics and the end of its trace. Numbers are logged as
    /// numbers (JSON logs write them unquoted).
    private func record(_ request: HTTPRequest, status: Int, bytes: Int, started: ContinuousClock.Instant) {
        requestCounting.count(route: routeLabel, status: status, in: context.metrics)
        trace?.finish(status: status)
        trace = nil
        let milliseconds = (ContinuousClock.now - started).seconds * 1000
        // Built only when the line is logged (the metadata is an autoclosure).
        context.logger.info("\(request.method.rawValue) \(request.target.path) \(status)",
                            metadata: logMetadata(request, status: status, bytes: bytes, milliseconds: milliseconds))
    }

    /// The request's log line's fields; `sub` names who sent it (audit: accepted and
    /// refused writes alike) when its credentials name a subject.
    private func logMetadata(_ request: HTTPRequest, status: Int, bytes: Int, milliseconds: Double) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)",
            "path": "\(request.target.path)",
            "status": .stringConvertible(status),
            "bytes": .stringConvertible(bytes),
            "duration_ms": .stringConvertible((milliseconds * 1000).rounded() / 1000),
            "remote": "\(connection.remoteAddress?.description ?? "?")",
            "request_id": "\(requestID)",
        ]
        if let subject { metadata["sub"] = "\(subject)" }
        return metadata
    }

    private static var now: Int { Int(time(nil)) }
}

extension HTTPConnectionHandler: OwnerRelayDelegate {
    func relayFailed(_ error: APIError) {
        guard let relayed else { return }
        relay = nil
        self.relayed = nil
        respond(.error(error), to: relayed.request, keepAlive: relayed.keepAlive && machine.keepAlive,
                started: relayed.started)
    }

    func relayKeepsAlive() -> Bool {
        guard let relayed else { return false }
        return relayed.keepAlive && machine.keepAlive && relayed.request.keepAlive && !context.router.cluster.isLeaving
    }

    func relayWroteHead(status: Int, bytes: Int, mode: OwnerRelay.Mode) -> [UInt8] {
        guard let relayed else { return [] }
        record(relayed.request, status: status, bytes: bytes, started: relayed.started)
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
        relay = nil
        relayed = nil
        run(machine.responseWritten(keepAlive: keepAlive, now: .now))
    }

    func relayEnded() {
        relay = nil
        relayed = nil
        connection.closeAfterFlush()
    }
}
