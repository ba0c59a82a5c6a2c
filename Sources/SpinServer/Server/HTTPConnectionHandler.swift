#if canImport(Glibc)
import Glibc
#endif
import Logging
import SpinCore
import SpinNet
import SpinWire

/// Drives one connection: HTTP/1.1 requests (keep-alive, pipelining in order) through
/// the `APIRouter`, and the upgrade to a WebSocket or SSE stream.
///
/// `@unchecked Sendable`: every mutable property is only touched on the connection's
/// queue (SpinNet calls the handler there; results from Spins hop there with
/// `connection.execute`).
final class HTTPConnectionHandler: ConnectionHandler, @unchecked Sendable {
    private enum Mode {
        /// Parsing requests.
        case http
        /// A request is being answered; later pipelined requests wait in the parser.
        case responding
        case stream(StreamSession)
        case closed
    }

    private let connection: Connection
    private let context: ServerContext
    private var parser: HTTPRequestParser
    private var writer = HTTPResponseWriter()
    private var mode = Mode.http
    /// `requestHeadCompleted` was called for the request being read.
    private var headSignalled = false
    private var keepAliveDecision = KeepAliveDecision.keepAlive
    private var shuttingDown = false
    /// The peer shut its write side: answer every complete request, then close.
    private var peerEnded = false
    /// `pump` is on the stack: a response written synchronously from inside it must not
    /// call it again (its loop goes on by itself), or pipelined requests would recurse.
    private var pumping = false
    /// Reading is paused because too much pipelined input waits behind an answer.
    private var readingPaused = false
    /// The metrics label of the request being answered: its route's template, matched
    /// once when the request is handed to the router.
    private var routeLabel = "other"

    init(connection: Connection, context: ServerContext) {
        self.connection = connection
        self.context = context
        self.parser = HTTPRequestParser(limits: context.parserLimits)
    }

    func didOpen(_ connection: Connection) {
        context.metrics.connectionOpened()
    }

    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        switch mode {
        case .stream(let stream):
            stream.receive(bytes)
        case .http:
            parser.feed(bytes)
            pump()
        case .responding:
            // Pipelined bytes wait in the parser until the current answer is written;
            // past one full request's worth, stop reading (the kernel buffers push back).
            parser.feed(bytes)
            if parser.bufferedByteCount > context.parserLimits.maxHeaderBytes + context.parserLimits.maxBodySize {
                readingPaused = true
                connection.pauseReading()
            }
        case .closed:
            break
        }
    }

    func didReceiveEnd(on connection: Connection) {
        if case .stream(let stream) = mode {
            stream.finish()
        }
        peerEnded = true
        switch mode {
        case .http: pump()                  // what is complete gets answered, then close
        case .responding: break             // pump goes on after the answer
        case .stream, .closed: connection.closeAfterFlush()
        }
    }

    func didBecomeWritable(_ connection: Connection) {
        if case .stream(let stream) = mode { stream.writable() }
    }

    func didTimeOut(_ kind: TimeoutKind, on connection: Connection) {
        switch (mode, kind) {
        case (.stream(let stream), _):
            // Idle beyond the pings, or a reader stuck past the write-stall limit.
            stream.fail(.goingAway, reason: kind == .writeStalled ? "not reading" : "idle")
        case (_, .requestHead), (_, .bodyTooSlow):
            let error = APIError(status: 408, code: "request_timeout",
                                 message: kind == .requestHead ? "the request head took too long" : "the request body arrived too slowly")
            context.metrics.requestAnswered(route: "other", status: 408)
            writeError(error, version: .http1_1, method: .get)
            mode = .closed
        default:
            mode = .closed
        }
    }

    func shutdownRequested(on connection: Connection) {
        shuttingDown = true
        switch mode {
        case .http:
            if parser.phase == .idle {
                // An idle keep-alive connection: nothing to protect with a lingering
                // close once its output is gone, so the shutdown does not wait for it.
                mode = .closed
                if connection.pendingOutputBytes == 0 { connection.close() } else { connection.closeAfterFlush() }
            }
        case .responding:
            break   // the answer goes out with Connection: close
        case .stream(let stream):
            stream.shutdown()
        case .closed:
            break
        }
    }

    func didClose(_ connection: Connection, reason: CloseReason) {
        if case .stream(let stream) = mode { stream.connectionClosed() }
        mode = .closed
        context.metrics.connectionClosed()
    }

    // MARK: Requests

    private func pump() {
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        while case .http = mode {
            switch parser.next() {
            case .needMoreData:
                if peerEnded {
                    // Nothing more will come: every complete request is answered.
                    mode = .closed
                    connection.closeAfterFlush()
                    return
                }
                if parser.phase == .body && !headSignalled {
                    headSignalled = true
                    keepAliveDecision = connection.requestHeadCompleted(expectsBody: true)
                }
                return
            case .sendContinue:
                _ = connection.write(HTTPResponseWriter.continueResponse)
            case .request(let request):
                if headSignalled {
                    connection.requestBodyCompleted()
                } else {
                    keepAliveDecision = connection.requestHeadCompleted(expectsBody: false)
                }
                headSignalled = false
                handle(request)
            case .pausedForUpgrade:
                parser.declineUpgrade()
            case .finished:
                mode = .closed
                connection.closeAfterFlush()
            case .error(let error):
                context.metrics.requestAnswered(route: "other", status: error.status)
                context.logger.info("bad request", metadata: ["connection": "\(connection.id)", "status": "\(error.status)",
                                                               "code": "\(error.code)"])
                writeError(APIError(status: error.status, code: error.code, message: describe(error)),
                           version: .http1_1, method: .get)
                mode = .closed
            }
        }
    }

    private func handle(_ request: HTTPRequest) {
        mode = .responding
        let keepAlive = request.keepAlive && keepAliveDecision == .keepAlive && !shuttingDown
        var headers = request.headers.map { (name: $0.name, value: $0.value) }
        // RFC 9112 §3.2.2: an absolute-form target's authority is the request's host.
        if request.target.authority != nil {
            headers.removeAll { $0.name.caseInsensitiveEquals("Host") }
            headers.append((name: "Host", value: request.host))
        }
        // Browsers cannot set headers on a WebSocket: stream routes take the token as a
        // query parameter too (only they: elsewhere a header is always possible).
        if request.headers["Authorization"] == nil, request.target.path.hasSuffix("/stream"),
           let token = request.target.queryValue("access_token") {
            headers.append((name: "Authorization", value: "Bearer \(token)"))
        }
        let apiRequest = APIRequest(
            method: request.method.rawValue,
            path: request.target.path,
            query: request.target.queryItems.map { (name: $0.name, value: $0.value ?? "") },
            headers: headers,
            body: request.body)
        let started = ContinuousClock.now
        let connection = self.connection
        let matched = Route.match(request.target.path)
        routeLabel = matched?.route.template ?? "other"
        context.router.handle(apiRequest, matched: matched) { [self] outcome in
            connection.execute {
                self.finish(request, apiRequest: apiRequest, outcome: outcome, keepAlive: keepAlive, started: started)
            }
        }
    }

    private func finish(_ request: HTTPRequest, apiRequest: APIRequest, outcome: RouteOutcome, keepAlive: Bool,
                        started: ContinuousClock.Instant) {
        guard case .responding = mode else { return }   // the connection closed meanwhile
        switch outcome {
        case .respond(let response):
            respond(response, to: request, keepAlive: keepAlive && !shuttingDown, started: started)
        case .stateStream(let spin, let feed, let resume):
            let mayWrite = context.router.access.check(authorization: apiRequest.header("Authorization"), needs: .write) == nil
            openStream(request, source: .state(spin, feed, resume: resume, clientMayWrite: mayWrite),
                       keepAlive: keepAlive, started: started)
        case .gearStream(let gear):
            openStream(request, source: .gear(gear), keepAlive: keepAlive, started: started)
        case .echoStream:
            openStream(request, source: .echo, keepAlive: keepAlive, started: started)
        }
    }

    private func respond(_ response: APIResponse, to request: HTTPRequest, keepAlive: Bool, started: ContinuousClock.Instant) {
        let head = HTTPResponseHead(status: HTTPStatus(code: response.status),
                                    headers: HTTPHeaders(response.headers.map { ($0.name, $0.value) }))
        let responseContext = HTTPResponseContext(requestMethod: request.method, requestVersion: request.version,
                                                  keepAlive: keepAlive)
        let bytes = writer.response(head, body: response.body, context: responseContext, secondsSince1970: Self.now)
        _ = connection.write(bytes)
        record(request, status: response.status, bytes: bytes.count, started: started)
        if request.isUpgradeCandidate { parser.declineUpgrade() }
        connection.responseCompleted()
        guard keepAlive && request.keepAlive else {
            mode = .closed
            connection.closeAfterFlush()
            return
        }
        mode = .http
        if readingPaused {
            readingPaused = false
            connection.resumeReading()
        }
        if parser.bufferedByteCount > 0 { connection.requestHeadStarted() }
        pump()
    }

    private func openStream(_ request: HTTPRequest, source: StreamSource, keepAlive: Bool, started: ContinuousClock.Instant) {
        let fields = request.headers.map { (name: $0.name, value: $0.value) }
        let wantsWebSocket = request.isUpgradeCandidate && request.headers.containsToken("websocket", in: "Upgrade")
        let wantsSSE = !wantsWebSocket && source.offersSSE
            && (request.headers["Accept"]?.contains("text/event-stream") ?? false)

        if wantsWebSocket {
            guard context.origins.allows(origin: request.headers["Origin"], host: request.headers["Host"]) else {
                return respond(.error(.forbidden("WebSocket connections from origin \(request.headers["Origin"] ?? "") are not allowed")),
                               to: request, keepAlive: false, started: started)
            }
            let accepted: WebSocketHandshake.Accepted
            do {
                accepted = try WebSocketHandshake.accept(
                    method: request.method.rawValue,
                    httpVersion: (request.version.major, request.version.minor),
                    headers: fields)
            } catch {
                let failure = APIError(status: error.httpStatus, code: "bad_websocket_handshake",
                                       message: "the WebSocket handshake is invalid: \(error)",
                                       headers: error.responseHeaders.map { ($0.name, $0.value) })
                return respond(.error(failure), to: request, keepAlive: false, started: started)
            }
            let head = writer.switchingProtocols(headers: HTTPHeaders(accepted.headers.map { ($0.name, $0.value) }),
                                                 secondsSince1970: Self.now)
            _ = connection.write(head)
            let leftover = parser.acceptUpgrade()
            connection.enterStreamingMode()
            record(request, status: 101, bytes: head.count, started: started)
            let session = WebSocketSession(role: .server, limits: context.webSocketLimits, deflate: accepted.deflate)
            let stream = StreamSession(connection: connection, source: source, transport: .webSocket(session), context: context)
            mode = .stream(stream)
            stream.start()
            if !leftover.isEmpty { stream.receive(leftover) }
        } else if wantsSSE {
            if request.isUpgradeCandidate { parser.declineUpgrade() }
            let head = HTTPResponseHead(status: .ok, headers: HTTPHeaders([
                ("Content-Type", "text/event-stream"),
                ("Cache-Control", "no-cache"),
                ("X-Accel-Buffering", "no"),
            ]))
            let responseContext = HTTPResponseContext(requestMethod: request.method, requestVersion: request.version,
                                                      keepAlive: false)
            let streaming = writer.streamingResponse(head, context: responseContext, secondsSince1970: Self.now)
            _ = connection.write(streaming.head)
            connection.enterStreamingMode()
            record(request, status: 200, bytes: streaming.head.count, started: started)
            let stream = StreamSession(connection: connection, source: source, transport: .sse(streaming.body), context: context)
            mode = .stream(stream)
            stream.start()
        } else {
            let message = source.offersSSE
                ? "this route streams: open a WebSocket (Upgrade: websocket) or ask for server-sent events (Accept: text/event-stream)"
                : "this route is a WebSocket: open it with Upgrade: websocket"
            let error = APIError(status: 426, code: "upgrade_required", message: message,
                                 headers: [("Upgrade", "websocket"), ("Connection", "Upgrade")])
            respond(.error(error), to: request, keepAlive: keepAlive, started: started)
        }
    }

    /// The parser's message, with the configured limit where one was exceeded.
    private func describe(_ error: HTTPParserError) -> String {
        let limits = context.configuration.limits
        switch error {
        case .bodyTooLarge:
            return "the request body is larger than the limit of \(limits.maxBodyBytes) bytes (limits.maxBodyBytes)"
        case .headerSectionTooLarge:
            return "the request head is larger than the limit of \(limits.maxHeaderBytes) bytes (limits.maxHeaderBytes)"
        default:
            return error.message
        }
    }

    /// Answers an error the parser or a timer found, then closes.
    private func writeError(_ error: APIError, version: HTTPVersion, method: HTTPMethod) {
        let response = APIResponse.error(error)
        let head = HTTPResponseHead(status: HTTPStatus(code: response.status),
                                    headers: HTTPHeaders(response.headers.map { ($0.name, $0.value) }))
        let bytes = writer.response(head, body: response.body,
                                    context: HTTPResponseContext(requestMethod: method, requestVersion: version, keepAlive: false),
                                    secondsSince1970: Self.now)
        _ = connection.write(bytes)
        connection.closeAfterFlush()
    }

    /// One log line and the request metrics.
    private func record(_ request: HTTPRequest, status: Int, bytes: Int, started: ContinuousClock.Instant) {
        context.metrics.requestAnswered(route: routeLabel, status: status)
        let milliseconds = (ContinuousClock.now - started).seconds * 1000
        context.logger.info("\(request.method.rawValue) \(request.target.path) \(status)", metadata: [
            "method": "\(request.method.rawValue)",
            "path": "\(request.target.path)",
            "status": "\(status)",
            "bytes": "\(bytes)",
            "duration_ms": "\((milliseconds * 1000).rounded() / 1000)",
            "remote": "\(connection.remoteAddress?.description ?? "?")",
        ])
    }

    private static var now: Int { Int(time(nil)) }
}
