/// One WebSocket connection's protocol logic after the upgrade: bytes in, actions out, no
/// sockets. The owner (the server's connection) writes what `.send` carries, delivers
/// `.message`s, and closes the socket on `.closeConnection`.
///
/// It combines `WebSocketFrameParser` (frame rules), `WebSocketMessageAggregator`
/// (fragmentation, UTF-8, limits, inflation), `WebSocketCloseStateMachine` (closing
/// handshake) and, when negotiated, permessage-deflate for both directions.
///
/// Confinement: the compressor and decompressor are zlib streams shared by copies of this
/// value; use one session value per connection, from one serial queue.
package struct WebSocketSession: Sendable {
    /// What the owner must do, in order.
    package enum Action: Hashable, Sendable {
        /// A complete message from the peer.
        case message(WebSocketMessage)
        /// Bytes to write to the connection (pong replies, close frames, outgoing messages).
        case send([UInt8])
        /// A Pong arrived (a keep-alive answer), with its application data.
        case pongReceived([UInt8])
        /// The peer sent a valid Close frame (code nil: no status code, i.e. 1005).
        case peerClosed(code: WebSocketCloseCode?, reason: String)
        /// The connection failed because of the peer's input; a Close with
        /// `error.closeCode` follows (if none was sent yet), then `.closeConnection`.
        case failed(WebSocketError)
        /// Close the TCP connection; nothing more will come out of this session.
        case closeConnection
    }

    package let role: WebSocketRole
    private var parser: WebSocketFrameParser
    private var aggregator: WebSocketMessageAggregator
    private var closing: WebSocketCloseStateMachine
    private let compressor: PerMessageDeflateCompressor?
    private let minimumCompressedSize: Int
    /// UTF-8 check of an uncompressed text frame still arriving: the state after the
    /// `checkedLength` payload bytes seen so far (validator nil: nothing to check).
    /// Reset whenever a frame completes.
    private var incoming: (validator: UTF8StreamValidator?, checkedLength: Int)?

    /// - Parameters:
    ///   - role: `.server` for the spin server (expects masked frames, sends unmasked).
    ///   - deflate: the parameters agreed in the handshake, or nil without the extension.
    package init(role: WebSocketRole = .server, limits: WebSocketLimits = WebSocketLimits(),
                 deflate: PerMessageDeflateParameters? = nil) {
        self.role = role
        var compressor: PerMessageDeflateCompressor?
        var decompressor: PerMessageDeflateDecompressor?
        if let deflate {
            let (ownBits, ownNoContext, peerBits, peerNoContext) = role == .server
                ? (deflate.serverMaxWindowBits, deflate.serverNoContextTakeover,
                   deflate.clientMaxWindowBits, deflate.clientNoContextTakeover)
                : (deflate.clientMaxWindowBits, deflate.clientNoContextTakeover,
                   deflate.serverMaxWindowBits, deflate.serverNoContextTakeover)
            compressor = PerMessageDeflateCompressor(windowBits: ownBits, noContextTakeover: ownNoContext,
                                                     level: deflate.compressionLevel,
                                                     memoryLevel: deflate.memoryLevel)
            decompressor = PerMessageDeflateDecompressor(windowBits: peerBits, noContextTakeover: peerNoContext)
        }
        self.compressor = compressor
        self.minimumCompressedSize = deflate?.minimumCompressedSize ?? .max
        parser = WebSocketFrameParser(role: role, limits: limits,
                                      allowsCompressedFrames: decompressor != nil)
        aggregator = WebSocketMessageAggregator(limits: limits, decompressor: decompressor)
        closing = WebSocketCloseStateMachine(role: role)
    }

    /// The closing-handshake state.
    package var state: WebSocketCloseStateMachine.State { closing.state }

    // MARK: Receiving

    /// Feeds bytes read from the connection and handles every complete frame in them.
    ///
    /// An owner that answers messages (an echo, a request/reply protocol) uses `append`
    /// and `nextActions` instead: with `receive`, a later frame that fails the
    /// connection has already sent the Close by the time the owner sees the message
    /// before it, so the answer is dropped (RFC 6455 §5.5.1: no data after a Close).
    package mutating func receive(_ bytes: [UInt8]) -> [Action] {
        append(bytes)
        return drain()
    }

    /// Feeds bytes read from the connection.
    package mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [Action] {
        guard closing.state != .closed else { return [] }
        parser.append(bytes)
        return drain()
    }

    /// Buffers bytes read from the connection without handling them; `nextActions`
    /// then handles them one frame at a time.
    package mutating func append(_ bytes: [UInt8]) {
        guard closing.state != .closed else { return }
        parser.append(bytes)
    }

    /// The actions of the next complete frame in the buffered bytes (a message, a pong
    /// to send, a close, a failure), or nil when no complete frame is buffered or the
    /// session is closed. Between two calls the owner may send: an answer to a message
    /// goes out before the next frame is even parsed, as it would had the frames
    /// arrived in two reads (Autobahn cases 3.2, 4.1.3, 5.15: an echo, then the
    /// failure a later frame in the same read causes).
    package mutating func nextActions() -> [Action]? {
        guard closing.state != .closed else { return nil }
        var actions: [Action] = []
        do {
            guard let frame = try parser.nextFrame() else {
                try checkIncomingFrame()
                return nil
            }
            incoming = nil
            try handle(frame, into: &actions)
        } catch {
            actions.append(.failed(error))
            append(closing.fail(error), to: &actions)
        }
        return actions
    }

    /// The TCP connection closed (or reset); the session is done.
    package mutating func connectionClosed() {
        closing.connectionClosed()
    }

    private mutating func drain() -> [Action] {
        var actions: [Action] = []
        while let next = nextActions() { actions += next }
        return actions
    }

    /// Fails fast on a data frame whose payload is still arriving: header-level message
    /// rules now, and for uncompressed text the UTF-8 of the bytes so far (RFC 6455 §8.1:
    /// invalid UTF-8 fails the connection; the bytes already prove it). The same checks
    /// run in the same order when the frame completes, so the first error is the same
    /// however the bytes were split.
    private mutating func checkIncomingFrame() throws(WebSocketError) {
        guard let pending = parser.pendingFrame(), !pending.header.opcode.isControl else { return }
        let header = pending.header
        if incoming == nil {
            try aggregator.checkHeader(opcode: header.opcode, rsv1: header.rsv1, payloadLength: header.payloadLength)
            incoming = (aggregator.utf8StateForIncomingFrame(opcode: header.opcode, rsv1: header.rsv1), 0)
        }
        guard var state = incoming, var validator = state.validator,
              pending.receivedPayloadLength > state.checkedLength else { return }
        let bytes = parser.pendingPayload(from: state.checkedLength)
        if !validator.feed(bytes) { throw .invalidUTF8 }
        state.validator = validator
        state.checkedLength = pending.receivedPayloadLength
        incoming = state
    }

    private mutating func handle(_ frame: WebSocketFrame, into actions: inout [Action]) throws(WebSocketError) {
        switch frame.opcode {
        case .text, .binary, .continuation:
            if let message = try aggregator.receive(frame) {
                actions.append(.message(message))
            }
        case .ping:
            // RFC 6455 §5.5.2/§5.5.3: answer a Ping with a Pong carrying the same data,
            // unless we already sent a Close.
            if closing.canSend {
                actions.append(.send(encodeFrame(.pong, frame.payload)))
            }
        case .pong:
            actions.append(.pongReceived(frame.payload))
        case .close:
            let payload = try WebSocketClosePayload(parsing: frame.payload)
            actions.append(.peerClosed(code: payload.code, reason: payload.reason))
            append(closing.closeReceived(payload), to: &actions)
        }
    }

    private mutating func append(_ closeActions: [WebSocketCloseStateMachine.Action],
                                 to actions: inout [Action]) {
        for action in closeActions {
            switch action {
            case .sendClose(let payload): actions.append(.send(encodeFrame(.close, payload.bytes)))
            case .closeConnection: actions.append(.closeConnection)
            }
        }
    }

    // MARK: Sending

    /// Encodes an outgoing message (compressed when negotiated and worthwhile). Returns no
    /// actions once a Close was sent (RFC 6455 §5.5.1: no data after Close).
    package mutating func send(_ message: WebSocketMessage) -> [Action] {
        switch message {
        case .text(let text):
            var text = text
            return text.withUTF8 { send(opcode: .text, payload: UnsafeRawBufferPointer($0)) }
        case .binary(let bytes):
            return bytes.withUnsafeBytes { send(opcode: .binary, payload: $0) }
        }
    }

    /// Encodes a text message.
    package mutating func sendText(_ text: String) -> [Action] { send(.text(text)) }

    /// Encodes a text message given as UTF-8 bytes (the caller vouches they are valid
    /// UTF-8, as encoded JSON is): no round trip through `String`.
    package mutating func sendText(utf8 bytes: [UInt8]) -> [Action] {
        bytes.withUnsafeBytes { send(opcode: .text, payload: $0) }
    }

    /// Encodes a binary message.
    package mutating func sendBinary(_ bytes: [UInt8]) -> [Action] { send(.binary(bytes)) }

    private mutating func send(opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer) -> [Action] {
        guard closing.canSend else { return [] }
        if let compressor, payload.count >= minimumCompressedSize {
            do {
                let compressed = try compressor.compress(payload)
                return [.send(encodeFrame(opcode, compressed, rsv1: true))]
            } catch {
                var actions: [Action] = [.failed(error)]
                append(closing.fail(error), to: &actions)
                return actions
            }
        }
        return [.send(WebSocketFrameEncoder.encode(opcode: opcode, payload: payload,
                                                   maskingKey: nextMaskingKey()))]
    }

    /// Encodes a Ping (at most 125 bytes of data, RFC 6455 §5.5).
    package mutating func ping(_ data: [UInt8] = []) -> [Action] {
        precondition(data.count <= 125, "RFC 6455 §5.5: control frame payload ≤ 125 bytes")
        guard closing.canSend else { return [] }
        return [.send(encodeFrame(.ping, data))]
    }

    /// Starts the closing handshake (RFC 6455 §7.1.2). Nothing if a Close was already sent.
    package mutating func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") -> [Action] {
        precondition(code.isValidOnWire, "close code \(code) may not be sent (RFC 6455 §7.4.1)")
        var actions: [Action] = []
        append(closing.close(WebSocketClosePayload(code: code, reason: reason)), to: &actions)
        return actions
    }

    private func encodeFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], rsv1: Bool = false) -> [UInt8] {
        WebSocketFrameEncoder.encode(opcode: opcode, payload: payload, rsv1: rsv1,
                                     maskingKey: nextMaskingKey())
    }

    /// RFC 6455 §5.3: a client masks every frame with a fresh unpredictable key; a server
    /// never masks.
    private func nextMaskingKey() -> UInt32? {
        role == .client ? UInt32.random(in: .min ... .max) : nil
    }
}
