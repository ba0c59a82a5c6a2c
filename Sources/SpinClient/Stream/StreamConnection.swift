import Foundation
import SpinCore
import SpinNet
import SpinWire
import SpinConcurrency

/// One open WebSocket of a state stream: a blocking socket, the client side of the
/// package's WebSocket codec, and the bytes that came with the handshake's answer.
struct StreamConnection: Sendable {
    let socket: ClientSocket
    var session: WebSocketSession
    /// Frames that arrived in the same read as the 101 response.
    var early: [UInt8]

    /// Where a stream connects: host, port and request target.
    struct Endpoint: Sendable, Hashable {
        var host: String
        var port: Int
        /// The request target: percent-encoded path and query.
        var target: String

        /// The endpoint of `url` (`http`/`ws`; `https`/`wss` are refused: this client
        /// has no TLS on its own socket).
        init(_ url: URL) throws(SpinClientError) {
            guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
                  let host = components.host, !host.isEmpty else {
                throw .unsupportedURL("\(url.absoluteString): no host")
            }
            switch components.scheme?.lowercased() {
            case "http", "ws": break
            case "https", "wss":
                throw .unsupportedURL("\(url.absoluteString): the state stream supports http:// (ws://) only; "
                                      + "reach a TLS server through a local TLS-terminating proxy")
            default:
                throw .unsupportedURL("\(url.absoluteString): the scheme must be http")
            }
            self.host = host
            port = components.port ?? 80
            let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            target = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        }

        /// The `Host` header: the host, and the port unless it is 80.
        var hostHeader: String {
            let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
            return port == 80 ? name : "\(name):\(port)"
        }
    }

    /// Large enough for the state of any hosted Spin; the server's own limit on what it
    /// sends is its business.
    static let limits = WebSocketLimits(maxFrameSize: 16 << 20, maxMessageSize: 16 << 20)

    /// Connects and completes the opening handshake (RFC 6455 §4.1). Blocks: run it off
    /// the cooperative pool. `slot` receives the socket as soon as it exists, so that a
    /// cancelling task can shut it down. A refusal throws the server's error
    /// (`SpinClientError.rejected`, with `Retry-After`).
    static func open(_ endpoint: Endpoint, token: String?, options: StreamOptions,
                     slot: SocketSlot) throws -> StreamConnection {
        let socket: ClientSocket
        do {
            socket = try ClientSocket.connect(host: endpoint.host, port: endpoint.port,
                                              timeoutSeconds: options.connectTimeoutSeconds,
                                              idleTimeoutSeconds: options.idleTimeoutSeconds)
        } catch {
            throw SpinClientError.connectionFailed(error.description)
        }
        try slot.install(socket)
        let handshake = WebSocketClientHandshake()
        var request = "GET \(endpoint.target) HTTP/1.1\r\n"
        for header in handshake.requestHeaders(host: endpoint.hostHeader) {
            request += "\(header.name): \(header.value)\r\n"
        }
        if let token { request += "Authorization: Bearer \(token)\r\n" }
        request += "\r\n"
        var buffer: [UInt8] = []
        do {
            try socket.send(Array(request.utf8))
            var parsed = try ResponseHead.parse(buffer)
            while parsed == nil {
                let more = try socket.receive()
                guard !more.isEmpty else { throw SpinClientError.connectionFailed("closed during the handshake") }
                buffer += more
                parsed = try ResponseHead.parse(buffer)
            }
            guard let (head, length) = parsed else { throw SpinClientError.connectionFailed("no response") }
            guard head.status == 101 else {
                throw SpinClientError.from(status: head.status, body: try readBody(of: head, after: buffer[length...], socket),
                                           retryAfter: head.headers["Retry-After"])
            }
            _ = try handshake.validate(status: head.status, headers: head.headers)
            return StreamConnection(socket: socket, session: WebSocketSession(role: .client, limits: limits),
                                    early: Array(buffer[length...]))
        } catch let error as ClientSocketError {
            throw SpinClientError.connectionFailed(error.description)
        } catch let failure as WebSocketClientHandshake.Failure {
            throw SpinClientError.unexpectedResponse(status: 101, detail: "invalid WebSocket handshake: \(failure)")
        }
    }

    /// The body of a refusal, by its `Content-Length` (the server always sends one), for
    /// its error JSON; at most 64 KiB.
    private static func readBody(of head: ResponseHead, after start: ArraySlice<UInt8>,
                                 _ socket: ClientSocket) throws(ClientSocketError) -> [UInt8] {
        let length = min(head.headers["Content-Length"].flatMap { Int($0) } ?? 0, 64 << 10)
        var body = Array(start)
        while body.count < length {
            let more = try socket.receive()
            if more.isEmpty { break }
            body += more
        }
        return Array(body.prefix(length))
    }
}

/// The socket a stream's iterator is using, reachable from a cancellation handler: a
/// cancelled slot shuts down the socket it holds and any installed later.
final class SocketSlot: Sendable {
    private let state = Protected<(socket: ClientSocket?, cancelled: Bool)>((nil, false))

    /// Holds `socket` from now on; throws `CancellationError` (after shutting it down)
    /// when the slot was cancelled.
    func install(_ socket: ClientSocket) throws(CancellationError) {
        let cancelled = state.withLock { state in
            state.socket = socket
            return state.cancelled
        }
        if cancelled {
            socket.shutdown()
            throw CancellationError()
        }
    }

    /// Forgets the socket (it is no longer in use).
    func clear() {
        state.withLock { $0.socket = nil }
    }

    /// Shuts down the current socket and every later one.
    func cancel() {
        let socket = state.withLock { state in
            state.cancelled = true
            return state.socket
        }
        socket?.shutdown()
    }
}
