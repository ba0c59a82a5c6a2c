import SpinNet
import SpinWire

/// What an `OwnerRelay` tells the client connection's handler. Called on the client
/// connection's event loop, where the relay runs too.
protocol OwnerRelayDelegate: AnyObject {
    /// Nothing was written to the client: answer `error` instead.
    func relayFailed(_ error: APIError)
    /// Whether the client connection stays open after a response framed by length.
    func relayKeepsAlive() -> Bool
    /// The owner's response head (`status`, `bytes` long) was written to the client.
    /// For `.upgraded`, returns the client's bytes already read past its request (the
    /// first frames), which the relay sends on to the owner.
    func relayWroteHead(status: Int, bytes: Int, mode: OwnerRelay.Mode) -> [UInt8]
    /// The whole response (framed by length) was written; the connection goes on with
    /// `keepAlive` as its head said.
    func relayFinished(keepAlive: Bool)
    /// A stream ended, or the owner broke off a response: close the client connection.
    func relayEnded()
}

/// Sends one request to the node that owns its Spin (`RouteOutcome.proxy`) and relays
/// the answer to the client's connection.
///
/// - Plain requests: the owner's status and fields go back unchanged but for the
///   hop-by-hop ones, the body re-framed with `Content-Length`, so the client's
///   connection stays alive as it would with a local answer. The body passes through as
///   it arrives, never buffered whole.
/// - A WebSocket upgrade: the owner's `101` head, then the bytes both ways untouched
///   (frames, permessage-deflate and the close handshake are the client's and the
///   owner's business) until either side closes.
/// - A response without a length (server-sent events): its head with
///   `Connection: close`, then its bytes as they come until either side closes.
///
/// The owner's connection is a SpinNet connection on the client connection's event
/// loop (`Connection.connectOutgoing`): the connect is waited for by the event
/// loop, reads and writes are non-blocking, so a relayed stream costs two descriptors
/// and no thread, and both ends' callbacks run on one event loop without locks. Back-pressure follows each connection's watermarks: when the client reads
/// slowly the relay stops reading from the owner until the client's output drains, and
/// the other way round.
///
/// **Kept-alive connections to owners.** A plain request goes on a connection to its
/// owner that an earlier relay on the same event loop left open (`Connection.takeIdle`),
/// or on a new one; once a framed answer has been relayed whole and the owner keeps the
/// connection (`OwnerResponseHead.keepsConnection`), the connection is parked for the
/// next relay (`Connection.park`) for at most `idleKeep`, a third of the owner's
/// keep-alive timeout, so the owner does not close it first while it waits. A parked
/// connection the owner closed meanwhile is found before anything is written to it (a
/// peek at its socket) and a new one is made: that request was never sent. WebSocket
/// upgrades and event streams use a connection of their own to the end.
///
/// Failures before any byte reached the client answer 503 `spin_unavailable` with
/// `Retry-After: 1` (the owner refused, did not connect within `connectTimeout`, or
/// gave no answer within `responseTimeout`), but a POST the owner got and did not
/// answer (it closed or timed out: it may have applied it) is 502
/// `proxy_outcome_unknown`; a malformed or oversized answer is a 502. What happens
/// when the owner's connection ends before its answer is `NoAnswer.decide`: a POST
/// that was sent is never sent again, so an event is never applied twice; a read sent
/// on a kept-alive connection the owner was closing is sent once more on a new one.
///
/// `@unchecked Sendable`: confined to the client connection's event loop.
final class OwnerRelay: ConnectionHandler, @unchecked Sendable {
    /// How the owner's response continues after its head.
    enum Mode: Equatable {
        /// A body of known length (maybe none): the client connection may be kept alive.
        case framed
        /// `101 Switching Protocols`: raw bytes both ways.
        case upgraded
        /// Until the owner closes (an event stream).
        case streaming
    }

    private enum Phase: Equatable {
        case connecting
        case awaitingHead
        case body(remaining: Int)
        case piping
        case ended
    }

    /// The longest wait for the owner to accept the connection.
    static let connectTimeout = Duration.seconds(2)
    /// The longest wait for a whole plain response (for a stream: for its head).
    static let responseTimeout = Duration.seconds(30)
    /// How long the owner gets to close its connection after a complete response it
    /// answered with `Connection: close`.
    static let closeWait = Duration.seconds(2)
    /// How long a kept-alive connection to an owner waits for the next relay: a third
    /// of the owner's keep-alive timeout (`HTTPConnectionLimits.keepAliveTimeout`,
    /// 15 s), so the owner never closes an idle one first but when it stops.
    static let idleKeep = Duration.seconds(5)
    /// The most connections to one owner kept alive per event loop: enough for as
    /// many relays at once as a busy node has (each one takes its own); more are closed.
    static let idleLimit = 256
    /// The largest response head the owner may send.
    static let maxHeadBytes = 64 << 10
    /// The largest body relayed; a larger announced length is a 502.
    static let maxResponseBytes = 64 << 20

    private let client: Connection
    private weak var delegate: OwnerRelayDelegate?
    private let proxied: ProxiedRequest
    /// The request as sent to the owner.
    private let request: [UInt8]
    /// The request bytes not yet handed to the owner's connection: written a piece at
    /// a time as its output drains, so a body larger than `maxPendingOutput` fits too.
    private var unsent: ArraySlice<UInt8>
    /// The owner's connections kept alive on this loop, by host and port.
    private let poolKey: String
    private let spin: String
    private let method: HTTPMethod
    private let webSocket: Bool
    private let version: HTTPVersion
    private let responseTimeout: Duration

    private var phase = Phase.connecting
    private var attempt: OutgoingConnectAttempt?
    private var upstream: Connection?
    /// The owner's bytes until its head is complete.
    private var buffered: [UInt8] = []
    /// Keep-alive of the framed response being relayed.
    private var keepAlive = false
    /// The owner's connection was kept alive from an earlier relay.
    private var reused = false
    /// Some of the request was handed to the owner's connection.
    private var sent = false
    /// The request was sent again on a new connection (`NoAnswer.retry`).
    private var retried = false
    /// The owner ended its side of the connection.
    private var ownerEnded = false
    /// The owner keeps its connection after this response and sent nothing past it.
    private var ownerKeepsConnection = false
    private var ownerPaused = false
    private var clientPaused = false

    /// A relay of `request` as `proxied` says, to answer on `client`.
    ///
    /// - Parameter requestID: the `X-Request-Id` this node logs the request under, sent
    ///   to the owner when the client gave none, so both nodes log the same ID.
    /// - Parameter responseTimeout: the longest wait for a whole plain response.
    init(_ proxied: ProxiedRequest, for request: HTTPRequest, requestID: String, client: Connection,
         delegate: OwnerRelayDelegate, responseTimeout: Duration = OwnerRelay.responseTimeout) {
        self.client = client
        self.delegate = delegate
        self.proxied = proxied
        self.method = request.method
        self.webSocket = request.isUpgradeCandidate && request.headers.containsToken("websocket", in: "Upgrade")
        self.version = request.version
        self.responseTimeout = responseTimeout
        self.spin = Route.match(request.target.path).map { String($0.name) } ?? request.target.path
        self.request = Self.adjusted(proxied.bytes, version: request.version,
                                     requestID: request.headers[RequestID.header] == nil ? requestID : nil)
        self.unsent = self.request[...]
        self.poolKey = "\(proxied.owner.connectHost):\(proxied.owner.port)"
    }

    /// True once the response became a stream: the client's bytes go to the owner.
    var isPiping: Bool { phase == .piping }

    /// Connects to the owner and sends the request.
    func start() {
        guard !proxied.owner.tls else {
            fail(.proxyTLSUnsupported(spin: spin))
            return
        }
        connect()
    }

    /// A kept-alive connection to the owner (not for a stream, nor for a request sent
    /// again), else a new one.
    private func connect() {
        if !webSocket, !retried, let idle = client.takeIdle(key: poolKey, handler: self) {
            reused = true
            attach(idle)
            return
        }
        reused = false
        attempt = client.connectOutgoing(
            host: proxied.owner.connectHost, port: proxied.owner.port, timeout: Self.connectTimeout,
            handler: { _ in self },
            failed: { [weak self] _ in
                guard let self else { return }
                self.fail(.spinUnavailable(self.spin, retryAfter: 1))
            })
    }

    /// Ends the relay (the client connection closed or is closing): the owner's
    /// connection closes once what the client sent has left (a WebSocket close frame
    /// reaches the owner), nothing more is written to the client.
    func stop() {
        phase = .ended
        delegate = nil
        attempt?.cancel()
        attempt = nil
        upstream?.closeAfterFlush()
    }

    /// Bytes from the client while piping.
    func clientSent(_ bytes: [UInt8]) {
        guard phase == .piping, let upstream else { return }
        if upstream.write(bytes) == .aboveHighWatermark, !clientPaused {
            clientPaused = true
            client.pauseReading()
        }
    }

    /// The client's pending output drained: read from the owner again.
    func clientWritable() {
        guard ownerPaused else { return }
        ownerPaused = false
        upstream?.resumeReading()
    }

    // MARK: The owner's connection

    func didOpen(_ connection: Connection) {
        attempt = nil
        guard phase == .connecting else {
            connection.close()
            return
        }
        attach(connection)
    }

    /// Sends the request on `connection` (new or kept alive) and waits for the answer.
    private func attach(_ connection: Connection) {
        upstream = connection
        phase = .awaitingHead
        connection.setDeadline(.at(.now + responseTimeout))
        sendRequest()
    }

    /// Writes the request's next pieces until the owner's connection asks to wait.
    private func sendRequest() {
        while !unsent.isEmpty, let upstream {
            let piece = unsent.prefix(64 << 10)
            unsent = unsent.dropFirst(piece.count)
            let written = upstream.write(piece)
            if written != .closed { sent = true }
            guard written == .accepted else { return }
        }
    }

    func didReceive(_ bytes: [UInt8], on connection: Connection) {
        switch phase {
        case .awaitingHead:
            buffered += bytes
            readHead()
        case .body, .piping:
            forward(bytes[...])
        case .connecting, .ended:
            break
        }
    }

    func didReceiveEnd(on connection: Connection) {
        ownerEnded = true
        connection.close()   // the rest happens in didClose
    }

    func didBecomeWritable(_ connection: Connection) {
        sendRequest()
        guard clientPaused else { return }
        clientPaused = false
        client.resumeReading()
    }

    func shutdownRequested(on connection: Connection) {}

    func didClose(_ connection: Connection, reason: CloseReason) {
        upstream = nil
        switch phase {
        case .connecting, .awaitingHead:
            var ownerClosed = ownerEnded
            if case .reset = reason { ownerClosed = true }
            switch NoAnswer.decide(method: method, sent: sent, reused: reused, retried: retried,
                                   partial: !buffered.isEmpty, ownerClosed: ownerClosed) {
            case .retry:
                retried = true
                sent = false
                ownerEnded = false
                buffered = []
                unsent = request[...]
                phase = .connecting
                connect()
            case .outcomeUnknown:
                // Sent, but no answer (closed, reset or timed out): the owner may have
                // applied it. Not a 503, which promises nothing was applied: a 502 that
                // says so (read the state to know; never retried here).
                fail(.proxyOutcomeUnknown(spin: spin))
            case .unavailable:
                fail(.ownerUnavailable(spin: spin))
            }
        case .body, .piping:
            phase = .ended
            delegate?.relayEnded()
        case .ended:
            break
        }
    }

    // MARK: Relaying

    /// Parses the owner's head once it is complete and writes the client's.
    private func readHead() {
        while phase == .awaitingHead {
            guard let parsed = OwnerResponseHead.parse(buffered, limit: Self.maxHeadBytes) else { return }
            guard case .success(let (head, length)) = parsed else {
                return fail(.proxyBadResponse(spin: spin, switchedProtocols: false))
            }
            let rest = buffered[length...]
            if (100...199).contains(head.status), head.status != 101 {
                buffered = Array(rest)   // an interim answer (100 Continue): the real one follows
                continue
            }
            buffered = []
            respond(head, rest: rest)
        }
    }

    private func respond(_ head: OwnerResponseHead, rest: ArraySlice<UInt8>) {
        let mode: Mode
        var remaining = 0
        if head.status == 101 {
            guard webSocket else {
                return fail(.proxyBadResponse(spin: spin, switchedProtocols: true))
            }
            mode = .upgraded
        } else if method == .head || head.status == 204 || head.status == 304 {
            mode = .framed
        } else if let length = head.contentLength {
            guard length <= Self.maxResponseBytes else {
                return fail(.proxyResponseTooLarge(spin: spin, limit: Self.maxResponseBytes))
            }
            mode = .framed
            remaining = length
        } else {
            mode = .streaming
        }
        keepAlive = mode == .framed && (delegate?.relayKeepsAlive() ?? false)
        ownerKeepsConnection = mode == .framed && version == .http1_1 && head.keepsConnection
        let bytes = head.clientHead(mode: mode, keepAlive: keepAlive)
        client.write(bytes)
        switch mode {
        case .framed:
            phase = .body(remaining: remaining)
            _ = delegate?.relayWroteHead(status: head.status, bytes: bytes.count, mode: mode)
        case .upgraded, .streaming:
            phase = .piping
            upstream?.setDeadline(.none)   // the client's stream deadline applies now
            let leftover = delegate?.relayWroteHead(status: head.status, bytes: bytes.count, mode: mode) ?? []
            if !leftover.isEmpty { clientSent(leftover) }
        }
        if phase == .body(remaining: 0) {
            complete()
        } else if !rest.isEmpty {
            forward(rest)
        }
    }

    /// Owner bytes after the head, to the client.
    private func forward(_ bytes: ArraySlice<UInt8>) {
        var bytes = bytes
        if phase == .ended { return }
        if case .body(let remaining) = phase {
            if bytes.count > remaining { ownerKeepsConnection = false }   // nor is the connection reusable
            bytes = bytes.prefix(remaining)   // anything past the length is not ours to pass on
            phase = .body(remaining: remaining - bytes.count)
        }
        if !bytes.isEmpty {
            switch client.write(Array(bytes)) {
            case .aboveHighWatermark:
                if !ownerPaused {
                    ownerPaused = true
                    upstream?.pauseReading()
                }
            case .closed:
                stop()
                return
            case .accepted:
                break
            }
        }
        if phase == .body(remaining: 0) { complete() }
    }

    /// The framed response is written whole. The owner's connection is parked for the
    /// next relay when the owner keeps it (before the client's next request is read,
    /// which may want it); else the owner closes it (its answer said so): closing first
    /// would leave this node's side in TIME_WAIT, and a busy relay would run out of
    /// ephemeral ports. An owner that does not close is cut off after `closeWait`.
    private func complete() {
        phase = .ended
        if ownerKeepsConnection, let upstream {
            self.upstream = nil
            client.park(upstream, key: poolKey, idle: Self.idleKeep, limit: Self.idleLimit)
        } else {
            upstream?.setDeadline(.at(.now + Self.closeWait))
        }
        let delegate = self.delegate
        self.delegate = nil
        delegate?.relayFinished(keepAlive: keepAlive)
    }

    private func fail(_ error: APIError) {
        guard phase != .ended else { return }
        phase = .ended
        attempt = nil
        upstream?.close()
        let delegate = self.delegate
        self.delegate = nil
        delegate?.relayFailed(error)
    }

    /// The forwarded request with the client's HTTP version (an HTTP/1.0 client gets
    /// a body it can read: never chunked) and `X-Request-Id` when given.
    private static func adjusted(_ bytes: [UInt8], version: HTTPVersion, requestID: String?) -> [UInt8] {
        guard let lineEnd = bytes.firstIndex(of: 10) else { return bytes }
        var line = Array(bytes[...lineEnd])
        if version == .http1_0, line.count >= 10 {
            line.replaceSubrange((line.count - 10)..., with: Array("HTTP/1.0\r\n".utf8))
        }
        let id = requestID.map { Array("\(RequestID.header): \($0)\r\n".utf8) } ?? []
        return line + id + bytes[(lineEnd + 1)...]
    }
}

/// The owner's response head, as far as relaying needs it.
struct OwnerResponseHead: Equatable {
    /// The status line as sent, without its CRLF.
    var statusLine: String
    var status: Int
    var fields: HTTPHeaders

    /// Fields a relay never passes on, plus the framing it redoes.
    private static let dropped = ProxiedRequest.hopByHop.union(["content-length"])

    /// The head at the start of `bytes` and its length with the blank line; nil while
    /// incomplete; a failure when it is not a response head or is longer than `limit`.
    static func parse(_ bytes: [UInt8], limit: Int) -> Result<(OwnerResponseHead, Int), HTTPReceivedResponseHead.Malformed>? {
        do {
            guard let (head, length) = try HTTPReceivedResponseHead.parse(bytes, limit: limit) else { return nil }
            return .success((OwnerResponseHead(statusLine: head.statusLine, status: head.status, fields: head.fields), length))
        } catch {
            return .failure(error)
        }
    }

    /// Whether the owner keeps the connection open after this response (RFC 9112 §9.3):
    /// an HTTP/1.1 answer without the `close` connection option.
    var keepsConnection: Bool {
        statusLine.hasPrefix("HTTP/1.1 ") && !connectionOptions.contains("close")
    }

    /// `Content-Length`, when present and valid.
    var contentLength: Int? {
        fields["Content-Length"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The head written to the client. `.upgraded`: as the owner sent it (its `Upgrade`
    /// and `Connection` belong to the switch); otherwise without hop-by-hop fields, with
    /// `Content-Length` (framed) or the owner's `Transfer-Encoding` (streaming), and the
    /// client connection's own `Connection`.
    func clientHead(mode: Mode, keepAlive: Bool) -> [UInt8] {
        var head: [UInt8] = []
        head.reserveCapacity(256)
        head.appendHeadLine(statusLine)
        if mode == .upgraded {
            for field in fields { head.appendHeadField(field.name, field.value) }
            head.appendHeadLine("")
            return head
        }
        let named = connectionOptions
        for field in fields {
            let name = field.name.lowercased()
            guard !Self.dropped.contains(name), !named.contains(name) else { continue }
            head.appendHeadField(field.name, field.value)
        }
        switch mode {
        case .framed:
            if let length = fields["Content-Length"], status != 204, status != 304 { head.appendHeadField("Content-Length", length) }
            head.appendHeadLine(keepAlive ? "Connection: keep-alive" : "Connection: close")
        case .streaming:
            if let encoding = fields["Transfer-Encoding"] { head.appendHeadField("Transfer-Encoding", encoding) }
            head.appendHeadLine("Connection: close")
        case .upgraded:
            break
        }
        head.appendHeadLine("")
        return head
    }

    /// The options the owner's `Connection` fields name (lower case).
    private var connectionOptions: Set<String> {
        ProxiedRequest.namedInConnection(fields.values(for: "Connection"))
    }

    typealias Mode = OwnerRelay.Mode
}
