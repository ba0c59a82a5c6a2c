import SpinWire

extension APIRouter {
    /// How a stream route's request is carried: a WebSocket when it asks to upgrade (its
    /// `Origin` allowed and its handshake valid), else server-sent events when the source
    /// offers them and the request's `Accept` takes them or is absent (RFC 9110), 406 when
    /// it rules them out; a WebSocket-only source (the echo) answers 426.
    func openStream(_ request: HTTPRequest, _ source: StreamSource, identity: Identity) -> RouteOutcome {
        let wantsWebSocket = request.isUpgradeCandidate && request.headers.containsToken("websocket", in: "Upgrade")
        if wantsWebSocket {
            guard origins.allows(origin: request.headers["Origin"], host: request.headers["Host"]) else {
                return .respond(APIResponse.error(.originNotAllowed(request.headers["Origin"])).closingConnection())
            }
            do {
                let accepted = try WebSocketHandshake.accept(
                    method: request.method.rawValue,
                    httpVersion: (request.version.major, request.version.minor),
                    headers: request.headers)
                return .stream(source, .webSocket(accepted), identity)
            } catch {
                return .respond(APIResponse.error(.badWebSocketHandshake(error)).closingConnection())
            }
        }
        guard source.offersSSE else { return .respond(.error(.upgradeRequired)) }
        // Server-sent events are the route's one plain-HTTP answer: sent to a client whose
        // Accept takes them (or that sends none), refused to one whose Accept rules them out.
        if let accept = request.headers["Accept"], !Self.takesEventStream(accept) {
            return .respond(.error(.notAcceptable(accept: accept)))
        }
        return .stream(source, .sse, identity)
    }

    /// Whether an `Accept` value takes `text/event-stream` (RFC 9110 §12.5.1): the most
    /// specific range that matches it (`text/event-stream`, else `text/*`, else `*/*`)
    /// decides, with a weight above 0 (`text/event-stream;q=0, */*` refuses it).
    static func takesEventStream(_ accept: String) -> Bool {
        var weights: [String: Double] = [:]
        for range in accept.split(separator: ",") {
            let parameters = range.split(separator: ";").map { $0.trimmingWhitespace().lowercased() }
            guard let mediaRange = parameters.first else { continue }
            let weight = parameters.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            weights[mediaRange] = max(weights[mediaRange] ?? 0, weight)
        }
        guard let weight = weights["text/event-stream"] ?? weights["text/*"] ?? weights["*/*"] else { return false }
        return weight > 0
    }
}
