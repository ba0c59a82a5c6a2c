import CZlib

/// A raw-DEFLATE (RFC 1951, no zlib/gzip wrapper) compressor over one zlib `z_stream`.
///
/// The `z_stream` lives in its own allocation because zlib keeps a pointer back to it;
/// `deinit` calls `deflateEnd`.
///
/// `@unchecked Sendable`: a stream is owned by exactly one `PerMessageDeflateCompressor`,
/// itself owned by one `WebSocketSession`, which the server drives from one connection's
/// serial queue; it is never used from two threads at once.
final class ZlibDeflateStream: @unchecked Sendable {
    private let stream: UnsafeMutablePointer<z_stream>

    /// The window size actually given to zlib (see `init`).
    let windowBits: Int32

    /// - Parameter windowBits: 8...15. zlib cannot produce raw DEFLATE with a 256-byte
    ///   window (deflateInit2 rejects -8 since zlib 1.2.9), so 8 is raised to 9, as Node's
    ///   zlib binding and Python's `websockets` do. Peers inflating with a 32 KiB window (all
    ///   common ones) are unaffected; this is the one documented deviation from a
    ///   negotiated `*_max_window_bits=8`.
    init?(windowBits: Int, level: Int32 = 6, memLevel: Int32 = 8) {
        precondition((8...15).contains(windowBits))
        self.windowBits = Int32(max(windowBits, 9))
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let rc = CZlib_deflateInit2(stream, level, Z_DEFLATED, -self.windowBits, memLevel,
                                    Z_DEFAULT_STRATEGY)
        guard rc == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            return nil
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compresses `input` and appends the output, ending with a sync flush (an empty stored
    /// block `00 00 ff ff`, RFC 7692 §7.2.1), to `output`. Returns false if zlib fails.
    func compress(_ input: UnsafeRawBufferPointer, flush: Int32 = Z_SYNC_FLUSH,
                  into output: inout [UInt8]) -> Bool {
        stream.pointee.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        // zlib writes into a scratch buffer appended in one copy (growing `output` with
        // zeros first is a generic loop per byte in a debug build).
        let capacity = max(4096, Int(deflateBound(stream, uLong(input.count))) + 16)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { scratch in
            while true {
                stream.pointee.next_out = scratch.baseAddress
                stream.pointee.avail_out = uInt(scratch.count)
                let rc = deflate(stream, flush)
                let left = Int(stream.pointee.avail_out)
                stream.pointee.next_out = nil
                output.append(contentsOf: UnsafeBufferPointer(start: scratch.baseAddress, count: scratch.count - left))
                // Z_BUF_ERROR only means "no progress possible", e.g. nothing left to flush.
                guard rc == Z_OK || rc == Z_BUF_ERROR || rc == Z_STREAM_END else { return false }
                // zlib: if deflate filled the whole output buffer, call again for the rest.
                if left > 0 { return true }
            }
        }
    }

    /// Forgets the LZ77 window (no context takeover).
    func reset() {
        deflateReset(stream)
    }
}
