import CZlib

/// A raw-DEFLATE (RFC 1951) decompressor over one zlib `z_stream`, with a hard cap on
/// output so that a small input cannot expand without bound (a "compression bomb").
///
/// `deinit` calls `inflateEnd`.
///
/// `@unchecked Sendable`: a stream is owned by exactly one `PerMessageDeflateDecompressor`,
/// itself owned by one `WebSocketSession`, which the server drives from one connection's
/// serial queue; it is never used from two threads at once.
final class ZlibInflateStream: @unchecked Sendable {
    /// Why inflation stopped.
    enum Failure: Error, Hashable, Sendable {
        /// The output would pass `maxOutputCount`; inflation stopped at the limit.
        case outputLimitExceeded
        /// The input is not valid DEFLATE data.
        case invalidData
    }

    private let stream: UnsafeMutablePointer<z_stream>
    /// Whether the window survives a final block (BFINAL) for the next message.
    private let keepsWindowAcrossStreamEnd: Bool
    /// Set when a BFINAL block ended the DEFLATE stream inside the current message: the
    /// rest of that message's input (at least the appended 00 00 ff ff) is skipped.
    private var streamEndedInMessage = false

    /// - Parameters:
    ///   - windowBits: 9...15 (a larger window inflates anything a smaller one produced).
    ///   - keepsWindowAcrossStreamEnd: with context takeover, the LZ77 window is carried over
    ///     a stream that ended with BFINAL (RFC 7692 §7.2.3.4) by re-installing it as the
    ///     dictionary of the next stream.
    init?(windowBits: Int = 15, keepsWindowAcrossStreamEnd: Bool = true) {
        precondition((8...15).contains(windowBits))
        self.keepsWindowAcrossStreamEnd = keepsWindowAcrossStreamEnd
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard CZlib_inflateInit2(stream, -Int32(windowBits)) == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            return nil
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Inflates all of `input`, appending to `output`, and throws `.outputLimitExceeded` as
    /// soon as `output.count` would pass `maxOutputCount` (it never grows past
    /// `maxOutputCount + 1`, whatever the input expands to).
    func inflate(_ input: UnsafeRawBufferPointer, into output: inout [UInt8],
                 maxOutputCount: Int) throws(Failure) {
        if streamEndedInMessage { return }
        stream.pointee.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        // zlib writes into a scratch buffer that is then appended in one copy: growing
        // `output` with zeros first costs a generic loop per byte in a debug build, which
        // made the Autobahn deflate cases (12.*, 13.*) time out there.
        let capacity = max(256, min(input.count * 4, 64 * 1024))
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { scratch throws(Failure) in
            while true {
                let room = maxOutputCount + 1 - output.count
                guard room > 0 else { throw .outputLimitExceeded }
                let granted = min(scratch.count, room)
                let availableInBefore = stream.pointee.avail_in
                stream.pointee.next_out = scratch.baseAddress
                stream.pointee.avail_out = uInt(granted)
                let rc = CZlib.inflate(stream, Z_SYNC_FLUSH)
                let left = Int(stream.pointee.avail_out)
                stream.pointee.next_out = nil
                output.append(contentsOf: UnsafeBufferPointer(start: scratch.baseAddress, count: granted - left))
                if output.count > maxOutputCount { throw .outputLimitExceeded }
                switch rc {
                case Z_STREAM_END:
                    // A block with BFINAL set ended the DEFLATE stream (RFC 7692 §7.2.3.4): the
                    // rest of the input (the appended 00 00 ff ff) is ignored, and the next
                    // message starts a new stream.
                    restartAfterStreamEnd()
                    streamEndedInMessage = true
                    return
                case Z_OK, Z_BUF_ERROR:
                    let progressed = left < granted || stream.pointee.avail_in < availableInBefore
                    // Done once all input is consumed and zlib did not fill the output.
                    if stream.pointee.avail_in == 0 && left > 0 { return }
                    if !progressed && left > 0 { return }
                default:
                    throw .invalidData
                }
            }
        }
    }

    /// Marks the end of a message: input is inflated again from the next call on.
    func endMessage() {
        streamEndedInMessage = false
    }

    /// Forgets the LZ77 window (no context takeover).
    func reset() {
        inflateReset(stream)
    }

    private func restartAfterStreamEnd() {
        guard keepsWindowAcrossStreamEnd else {
            inflateReset(stream)
            return
        }
        var dictionary = [UInt8](repeating: 0, count: 32 * 1024)
        var length: uInt = 0
        let got = dictionary.withUnsafeMutableBufferPointer {
            inflateGetDictionary(stream, $0.baseAddress, &length) == Z_OK
        }
        inflateReset(stream)
        if got && length > 0 {
            _ = dictionary.withUnsafeBufferPointer {
                inflateSetDictionary(stream, $0.baseAddress, length)
            }
        }
    }
}
