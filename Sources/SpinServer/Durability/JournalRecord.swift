/// The framing of one journal record (DESIGN.md §3, Durability):
///
///     length: UInt32 LE   bytes of sequence + payload
///     crc32:  UInt32 LE   CRC-32 (IEEE) of sequence + payload
///     sequence: UInt64 LE the event's sequence in its Spin
///     payload             the event's JSON
///
/// A record whose length runs past the end of the file, or whose CRC does not match, is
/// a torn write (the process died mid-append): decoding stops there and reports how much
/// of the file is valid, so recovery cuts the tail.
package enum JournalRecord {
    /// Records larger than this are garbage, not events (bodies are limited to a few MiB).
    static let maximumLength = 64 << 20

    package static func encode(sequence: UInt64, payload: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(8 + payload.count)
        withUnsafeBytes(of: sequence.littleEndian) { body += $0 }
        body += payload
        var record: [UInt8] = []
        record.reserveCapacity(8 + body.count)
        withUnsafeBytes(of: UInt32(body.count).littleEndian) { record += $0 }
        withUnsafeBytes(of: CRC32.checksum(body).littleEndian) { record += $0 }
        record += body
        return record
    }

    package struct Decoded: Sendable {
        package var records: [(sequence: UInt64, payload: [UInt8])]
        /// Bytes of whole, valid records from the start; the rest is a torn tail.
        package var validLength: Int
    }

    package static func decode(_ bytes: [UInt8]) -> Decoded {
        var records: [(sequence: UInt64, payload: [UInt8])] = []
        var offset = 0
        while bytes.count - offset >= 16 {
            let length = Int(readUInt32(bytes, at: offset))
            let crc = readUInt32(bytes, at: offset + 4)
            guard length >= 8, length <= maximumLength, bytes.count - offset - 8 >= length else { break }
            let body = bytes[(offset + 8)..<(offset + 8 + length)]
            guard CRC32.checksum(body) == crc else { break }
            var sequence: UInt64 = 0
            for (index, byte) in body.prefix(8).enumerated() { sequence |= UInt64(byte) << (8 * UInt64(index)) }
            records.append((sequence, Array(body.dropFirst(8))))
            offset += 8 + length
        }
        return Decoded(records: records, validLength: offset)
    }

    private static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }
}

/// CRC-32 as zlib, PNG and Ethernet compute it (polynomial 0xEDB88320, reflected).
package enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        (0..<8).reduce(UInt32(index)) { crc, _ in crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }

    package static func checksum<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return crc ^ 0xFFFF_FFFF
    }
}
