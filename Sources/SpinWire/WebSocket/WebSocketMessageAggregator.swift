/// Reassembles data frames into messages (RFC 6455 §5.4), inflating permessage-deflate
/// messages (RFC 7692 §6.2) and validating text as UTF-8 fragment by fragment.
///
/// Feed it the data frames (text, binary, continuation) in arrival order; control frames
/// may be interleaved between fragments on the wire but are handled by the caller.
/// Errors fail fast: an invalid UTF-8 sequence is reported by the frame that proves it, a
/// size limit by the frame that passes it, and inflation stops at the decompressed limit.
package struct WebSocketMessageAggregator: Sendable {
    package var limits: WebSocketLimits
    private let decompressor: PerMessageDeflateDecompressor?

    /// The message being assembled, if a first frame without FIN has been seen.
    private var current: Partial?

    private struct Partial {
        var isText: Bool
        var isCompressed: Bool
        var wireSize = 0
        var fragmentCount = 0
        var payload: [UInt8] = []
        var utf8 = UTF8StreamValidator()
    }

    /// - Parameter decompressor: present when permessage-deflate was negotiated.
    package init(limits: WebSocketLimits = WebSocketLimits(),
                 decompressor: PerMessageDeflateDecompressor? = nil) {
        self.limits = limits
        self.decompressor = decompressor
    }

    /// Whether a fragmented message is in progress.
    package var isAssembling: Bool { current != nil }

    /// Checks the rules a data frame's header alone decides: fragmentation order, RSV1,
    /// fragment count and message size. `receive` applies them first; the session also
    /// applies them to a frame still arriving, so the same error wins either way.
    package func checkHeader(opcode: WebSocketOpcode, rsv1: Bool, payloadLength: Int) throws(WebSocketError) {
        let (fragments, size): (Int, Int)
        switch opcode {
        case .text, .binary:
            // RFC 6455 §5.4: the fragments of one message are not interleaved with another.
            if current != nil { throw .dataFrameDuringFragmentedMessage }
            // RFC 7692 §6: RSV1 means "compressed", only valid with the extension negotiated.
            if rsv1 && decompressor == nil { throw .reservedBitsSet }
            (fragments, size) = (0, 0)
        case .continuation:
            // RFC 6455 §5.4: a continuation frame continues a started message.
            guard let current else { throw .continuationWithoutStart }
            // RFC 7692 §6.1: RSV1 is set on the first frame of a message only.
            if rsv1 { throw .reservedBitsSet }
            (fragments, size) = (current.fragmentCount, current.wireSize)
        case .close, .ping, .pong:
            return
        }
        if fragments + 1 > limits.maxFragmentCount { throw .tooManyFragments }
        if size + payloadLength > limits.maxMessageSize { throw .messageTooLarge }
    }

    /// For a data frame still arriving: the UTF-8 state its payload continues from, if its
    /// bytes are text that can be checked before the frame completes (uncompressed text).
    package func utf8StateForIncomingFrame(opcode: WebSocketOpcode, rsv1: Bool) -> UTF8StreamValidator? {
        switch opcode {
        case .text where !rsv1 && current == nil:
            return UTF8StreamValidator()
        case .continuation:
            guard let current, current.isText, !current.isCompressed else { return nil }
            return current.utf8
        default:
            return nil
        }
    }

    /// Adds one data frame; returns the message once its final frame arrived. Control
    /// frames are ignored (nil).
    package mutating func receive(_ frame: WebSocketFrame) throws(WebSocketError) -> WebSocketMessage? {
        try checkHeader(opcode: frame.opcode, rsv1: frame.rsv1, payloadLength: frame.payload.count)
        var partial: Partial
        switch frame.opcode {
        case .text, .binary:
            partial = Partial(isText: frame.opcode == .text, isCompressed: frame.rsv1)
        case .continuation:
            partial = current!  // checkHeader: a message is in progress
            current = nil
        case .close, .ping, .pong:
            return nil
        }
        partial.fragmentCount += 1
        partial.wireSize += frame.payload.count

        let validatedUpTo = partial.payload.count
        if partial.isCompressed, let decompressor {
            try decompressor.decompress(frame.payload, isFinal: frame.fin, into: &partial.payload,
                                        maxMessageSize: limits.maxDecompressedMessageSize)
        } else if partial.payload.isEmpty {
            partial.payload = frame.payload  // single-frame message: no copy
        } else {
            partial.payload.append(contentsOf: frame.payload)
        }

        if partial.isText {
            // RFC 6455 §8.1: fail as soon as the bytes received so far are not UTF-8.
            let valid = partial.payload.withUnsafeBytes { bytes in
                partial.utf8.feed(UnsafeRawBufferPointer(rebasing: bytes[validatedUpTo...]))
            }
            if !valid || (frame.fin && !partial.utf8.isAtBoundary) { throw .invalidUTF8 }
        }

        guard frame.fin else {
            current = partial
            return nil
        }
        if partial.isText {
            return .text(String(decoding: partial.payload, as: UTF8.self))
        }
        return .binary(partial.payload)
    }
}
