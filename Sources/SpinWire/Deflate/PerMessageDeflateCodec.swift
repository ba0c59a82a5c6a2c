/// Compresses outgoing messages per RFC 7692 §7.2.1: DEFLATE with a sync flush, then the
/// trailing `00 00 ff ff` is removed. Without context takeover the window is reset after
/// every message (RFC 7692 §7.1.1).
package final class PerMessageDeflateCompressor: @unchecked Sendable {
    // @unchecked Sendable: owned by one WebSocketSession, driven from one connection's
    // serial queue (see ZlibDeflateStream).
    private let stream: ZlibDeflateStream
    private let noContextTakeover: Bool

    /// - Parameters:
    ///   - windowBits: the negotiated window of this endpoint's compressor (8 runs as 9).
    package init?(windowBits: Int, noContextTakeover: Bool, level: Int32 = 6, memoryLevel: Int32 = 8) {
        guard let stream = ZlibDeflateStream(windowBits: windowBits, level: level, memLevel: memoryLevel) else {
            return nil
        }
        self.stream = stream
        self.noContextTakeover = noContextTakeover
    }

    /// The compressed payload of one message (to send with RSV1 set).
    package func compress(_ message: UnsafeRawBufferPointer) throws(WebSocketError) -> [UInt8] {
        var output: [UInt8] = []
        guard stream.compress(message, into: &output) else { throw .compressionFailed }
        // RFC 7692 §7.2.1: remove the 4 octets 00 00 ff ff at the tail end.
        if output.count >= 4 && output[(output.count - 4)...].elementsEqual([0x00, 0x00, 0xFF, 0xFF]) {
            output.removeLast(4)
        }
        // RFC 7692 §7.2.3.6: an empty message compresses to a single 0x00 byte at least.
        if output.isEmpty { output = [0x00] }
        if noContextTakeover { stream.reset() }
        return output
    }

    /// The compressed payload of one message (to send with RSV1 set).
    package func compress(_ message: [UInt8]) throws(WebSocketError) -> [UInt8] {
        let result = message.withUnsafeBytes { buffer in
            Result { () throws(WebSocketError) in try compress(buffer) }
        }
        return try result.get()
    }
}

/// Decompresses incoming messages per RFC 7692 §7.2.2: the frames' payloads are inflated as
/// they arrive, `00 00 ff ff` is appended at the end of the message, and output is capped.
package final class PerMessageDeflateDecompressor: @unchecked Sendable {
    // @unchecked Sendable: owned by one WebSocketSession, driven from one connection's
    // serial queue (see ZlibInflateStream).
    private let stream: ZlibInflateStream
    private let noContextTakeover: Bool
    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// - Parameters:
    ///   - windowBits: the peer's negotiated window. 8 inflates with 9 because a zlib-based
    ///     peer compresses "8" with a 512-byte window (see `ZlibDeflateStream`).
    package init?(windowBits: Int, noContextTakeover: Bool) {
        guard let stream = ZlibInflateStream(windowBits: max(windowBits, 9),
                                             keepsWindowAcrossStreamEnd: !noContextTakeover) else {
            return nil
        }
        self.stream = stream
        self.noContextTakeover = noContextTakeover
    }

    /// Inflates one frame's payload of a compressed message into `output`. With
    /// `isFinal`, the message ends: the sync-flush tail is appended and, without context
    /// takeover, the window is reset.
    ///
    /// - Throws: `.decompressedMessageTooLarge` as soon as `output` would pass
    ///   `maxMessageSize`; `.invalidCompressedData` for bad DEFLATE data.
    package func decompress(_ payload: UnsafeRawBufferPointer, isFinal: Bool,
                            into output: inout [UInt8], maxMessageSize: Int) throws(WebSocketError) {
        do {
            try stream.inflate(payload, into: &output, maxOutputCount: maxMessageSize)
            if isFinal {
                // RFC 7692 §7.2.2: append 00 00 ff ff to the payload of the message.
                try Self.tail.withUnsafeBytes { tail in
                    try stream.inflate(tail, into: &output, maxOutputCount: maxMessageSize)
                }
                stream.endMessage()
                if noContextTakeover { stream.reset() }
            }
        } catch ZlibInflateStream.Failure.outputLimitExceeded {
            throw .decompressedMessageTooLarge
        } catch {
            throw .invalidCompressedData
        }
    }

    /// Inflates one frame's payload of a compressed message into `output` (see above).
    package func decompress(_ payload: [UInt8], isFinal: Bool, into output: inout [UInt8],
                            maxMessageSize: Int) throws(WebSocketError) {
        let result = payload.withUnsafeBytes { bytes in
            Result { () throws(WebSocketError) in
                try decompress(bytes, isFinal: isFinal, into: &output, maxMessageSize: maxMessageSize)
            }
        }
        try result.get()
    }

    /// Inflates one whole compressed message.
    package func decompress(_ message: [UInt8], maxMessageSize: Int) throws(WebSocketError) -> [UInt8] {
        var output: [UInt8] = []
        let result = message.withUnsafeBytes { buffer in
            Result { () throws(WebSocketError) in
                try decompress(buffer, isFinal: true, into: &output, maxMessageSize: maxMessageSize)
            }
        }
        try result.get()
        return output
    }
}
