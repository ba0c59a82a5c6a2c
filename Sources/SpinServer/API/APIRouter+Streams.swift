import SpinWire

extension APIRouter {
    /// How a stream route's request is carried: a WebSocket when it asks to upgrade (its
    /// `Origin` allowed and its handshake valid), server-sent events when it accepts them
    /// and the source offers them, else 426 naming both.
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
                    headers: request.headers.map { (name: $0.name, value: $0.value) })
                return .stream(source, .webSocket(accepted), identity)
            } catch {
                return .respond(APIResponse.error(.badWebSocketHandshake(error)).closingConnection())
            }
        }
        if source.offersSSE, request.headers["Accept"]?.contains("text/event-stream") ?? false {
            return .stream(source, .sse, identity)
        }
        return .respond(.error(.upgradeRequired(offersSSE: source.offersSSE)))
    }
}
