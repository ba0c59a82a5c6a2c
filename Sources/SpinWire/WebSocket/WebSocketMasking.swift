/// The masking transform of RFC 6455 §5.3: octet i of the payload is XORed with octet
/// i mod 4 of the masking key. The same call masks and unmasks.
enum WebSocketMasking {
    /// XORs `count` bytes from `source` into `destination` (which may equal `source`) with
    /// `key`, whose big-endian bytes are the four key octets in wire order.
    @inline(__always)
    static func apply(key: UInt32, from source: UnsafeRawPointer,
                      to destination: UnsafeMutableRawPointer, count: Int) {
        // The key repeated in memory (wire) order, so one 64-bit XOR masks eight bytes.
        let k32 = key.bigEndian
        let k64 = UInt64(k32) | (UInt64(k32) << 32)
        var i = 0
        while i + 8 <= count {
            let word = source.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            destination.storeBytes(of: word ^ k64, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        // i is a multiple of 8 (so of 4): the key phase restarts at octet 0.
        withUnsafeBytes(of: k32) { keyBytes in
            while i < count {
                let byte = source.load(fromByteOffset: i, as: UInt8.self) ^ keyBytes[i & 3]
                destination.storeBytes(of: byte, toByteOffset: i, as: UInt8.self)
                i += 1
            }
        }
    }

    /// Masks or unmasks `bytes` in place.
    static func apply(key: UInt32, to bytes: inout [UInt8]) {
        let count = bytes.count
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            apply(key: key, from: base, to: base, count: count)
        }
    }
}
