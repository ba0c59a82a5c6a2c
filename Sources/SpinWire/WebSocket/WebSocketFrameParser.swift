/// Splits a byte stream into WebSocket frames (RFC 6455 §5.2), in the manner of swift-nio's
/// `WSParser.parseStep`: push bytes with `append`, then call `parseStep()` (or `nextFrame()`)
/// until it reports that more data is needed.
///
/// Per-frame rules are enforced here, as early as the header allows (before the payload is
/// buffered): masking by role, reserved bits, reserved opcodes, control-frame rules, the
/// 64-bit length MSB and `WebSocketLimits.maxFrameSize`. Message-level rules (fragmentation,
/// UTF-8, message limits) belong to `WebSocketMessageAggregator`.
///
/// After an error the parser stays failed and throws the same error again.
package struct WebSocketFrameParser: Sendable {
    /// Result of one parse step.
    package enum ParseResult: Hashable, Sendable {
        /// The buffered bytes do not yet hold a whole frame.
        case insufficientData
        /// One complete frame, removed from the buffer.
        case frame(WebSocketFrame)
    }

    /// The role of this endpoint: a server expects masked frames, a client unmasked ones.
    package let role: WebSocketRole
    package var limits: WebSocketLimits
    /// Whether RSV1 may be set on text and binary frames (permessage-deflate negotiated).
    package var allowsCompressedFrames: Bool

    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var failure: WebSocketError?

    package init(role: WebSocketRole = .server, limits: WebSocketLimits = WebSocketLimits(),
                 allowsCompressedFrames: Bool = false) {
        self.role = role
        self.limits = limits
        self.allowsCompressedFrames = allowsCompressedFrames
    }

    /// Bytes received but not yet returned as part of a frame.
    package var bufferedByteCount: Int { buffer.count - readIndex }

    /// Adds received bytes to the parse buffer.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfWorthwhile()
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes to the parse buffer.
    package mutating func append(_ bytes: [UInt8]) {
        compactIfWorthwhile()
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next complete frame, or nil when more bytes are needed.
    package mutating func nextFrame() throws(WebSocketError) -> WebSocketFrame? {
        switch try parseStep() {
        case .insufficientData: return nil
        case .frame(let frame): return frame
        }
    }

    /// Parses at most one frame from the buffered bytes.
    package mutating func parseStep() throws(WebSocketError) -> ParseResult {
        if let failure { throw failure }
        do {
            return try parseFrame()
        } catch {
            failure = error
            throw error
        }
    }

    /// The header fields of a frame, known before its payload has arrived.
    package struct Header: Hashable, Sendable {
        package var fin: Bool
        package var rsv1: Bool
        package var opcode: WebSocketOpcode
        package var maskingKey: UInt32?
        package var payloadLength: Int
        /// Bytes of header on the wire (2 to 14).
        var headerLength: Int
    }

    /// A frame whose header is complete but whose payload has not fully arrived.
    package struct PendingFrame: Hashable, Sendable {
        package var header: Header
        /// How many payload bytes are already buffered (less than `header.payloadLength`).
        package var receivedPayloadLength: Int
    }

    /// The frame being received, when its header is complete (and valid) but not its
    /// payload. Lets the session check a long text frame's UTF-8 as it arrives.
    package func pendingFrame() -> PendingFrame? {
        guard failure == nil, let header = try? parseHeader() else { return nil }
        let received = buffer.count - readIndex - header.headerLength
        guard received < header.payloadLength else { return nil }
        return PendingFrame(header: header, receivedPayloadLength: received)
    }

    /// The unmasked payload bytes of the pending frame from `offset` to what has arrived.
    package func pendingPayload(from offset: Int) -> [UInt8] {
        guard let pending = pendingFrame(), offset < pending.receivedPayloadLength else { return [] }
        let start = readIndex + pending.header.headerLength
        return payload(start: start, offset: offset, count: pending.receivedPayloadLength - offset,
                       maskingKey: pending.header.maskingKey)
    }

    private mutating func parseFrame() throws(WebSocketError) -> ParseResult {
        guard let header = try parseHeader() else { return .insufficientData }
        let available = buffer.count - readIndex
        guard available >= header.headerLength + header.payloadLength else { return .insufficientData }
        let payload = payload(start: readIndex + header.headerLength, offset: 0,
                              count: header.payloadLength, maskingKey: header.maskingKey)
        readIndex += header.headerLength + header.payloadLength
        if readIndex == buffer.count {
            // Keep a modest buffer for the next reads; release a large one (a big frame must
            // not pin its memory for the life of an idle connection).
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            readIndex = 0
        }
        return .frame(WebSocketFrame(fin: header.fin, rsv1: header.rsv1, opcode: header.opcode,
                                     maskingKey: header.maskingKey, payload: payload))
    }

    /// Unmasked bytes `offset..<offset+count` of a payload starting at buffer index `start`.
    private func payload(start: Int, offset: Int, count: Int, maskingKey: UInt32?) -> [UInt8] {
        guard count > 0 else { return [] }
        guard let key = maskingKey else {
            return Array(buffer[(start + offset)..<(start + offset + count)])
        }
        // RFC 6455 §5.3: octet i uses key octet i mod 4; rotate the key to start at `offset`.
        let shift = UInt32((offset & 3) * 8)
        let rotated = shift == 0 ? key : (key << shift) | (key >> (32 - shift))
        return buffer.withUnsafeBytes { source in
            [UInt8](unsafeUninitializedCapacity: count) { destination, initialized in
                WebSocketMasking.apply(key: rotated, from: source.baseAddress! + start + offset,
                                       to: UnsafeMutableRawPointer(destination.baseAddress!),
                                       count: count)
                initialized = count
            }
        }
    }

    /// Parses and validates the header at `readIndex`; nil if not all of it has arrived.
    private func parseHeader() throws(WebSocketError) -> Header? {
        let available = buffer.count - readIndex
        guard available >= 2 else { return nil }
        let b0 = buffer[readIndex]
        let b1 = buffer[readIndex + 1]

        let fin = b0 & 0x80 != 0
        let rsv1 = b0 & 0x40 != 0
        // RFC 6455 §5.2: opcodes 0x3-0x7 and 0xB-0xF are reserved → fail.
        guard let opcode = WebSocketOpcode(rawValue: b0 & 0x0F) else {
            throw .unknownOpcode(b0 & 0x0F)
        }
        // RFC 6455 §5.2: RSV2/RSV3 MUST be 0 unless an extension defines them (none here).
        if b0 & 0x30 != 0 { throw .reservedBitsSet }
        // RFC 7692 §6: RSV1 ("compressed") only with permessage-deflate, only on the first
        // frame of a data message; §6.1: never on control frames.
        if rsv1 && (!allowsCompressedFrames || opcode == .continuation || opcode.isControl) {
            throw .reservedBitsSet
        }
        let masked = b1 & 0x80 != 0
        // RFC 6455 §5.1: client-to-server frames are masked, server-to-client frames are not.
        switch role {
        case .server where !masked: throw .unmaskedClientFrame
        case .client where masked: throw .maskedServerFrame
        default: break
        }
        let length7 = Int(b1 & 0x7F)
        if opcode.isControl {
            // RFC 6455 §5.5: control frames MUST have a payload of 125 bytes or less and
            // MUST NOT be fragmented.
            if !fin { throw .fragmentedControlFrame }
            if length7 > 125 { throw .controlFrameTooLong }
        }

        var headerLength = 2
        let payloadLength: Int
        switch length7 {
        case 126:
            // RFC 6455 §5.2: 126 → the following 2 bytes are the length (minimal encoding is
            // not required of the peer, so it is not checked).
            guard available >= 4 else { return nil }
            payloadLength = Int(buffer[readIndex + 2]) << 8 | Int(buffer[readIndex + 3])
            headerLength = 4
        case 127:
            // RFC 6455 §5.2: 127 → the following 8 bytes, "the most significant bit MUST be 0".
            guard available >= 10 else { return nil }
            var value: UInt64 = 0
            for i in 2..<10 { value = value << 8 | UInt64(buffer[readIndex + i]) }
            if value & (1 << 63) != 0 { throw .invalidPayloadLength }
            guard value <= UInt64(Int.max / 2) else { throw .frameTooLarge }
            payloadLength = Int(value)
            headerLength = 10
        default:
            payloadLength = length7
        }
        if payloadLength > limits.maxFrameSize { throw .frameTooLarge }

        var maskingKey: UInt32?
        if masked {
            guard available >= headerLength + 4 else { return nil }
            var key: UInt32 = 0
            for i in 0..<4 { key = key << 8 | UInt32(buffer[readIndex + headerLength + i]) }
            maskingKey = key
            headerLength += 4
        }
        return Header(fin: fin, rsv1: rsv1, opcode: opcode, maskingKey: maskingKey,
                      payloadLength: payloadLength, headerLength: headerLength)
    }

    /// Drops consumed bytes once they are at least half of the buffer, so appends stay
    /// amortised O(n) without moving a large unread tail often.
    private mutating func compactIfWorthwhile() {
        if readIndex > 0 && readIndex >= buffer.count - readIndex {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}
