/// The framing of one journal record (docs/OPERATIONS.md, "Durability"):
///
///     header: UInt32 LE   bit 31: more records of the same batch follow;
///                         bits 0-30: bytes of sequence + payload
///     crc32:  UInt32 LE   CRC-32 (IEEE) of sequence + payload
///     sequence: UInt64 LE the event's sequence in its Spin (0: a Gear outbox record,
///                         `OutboxRecord`, in the batch of the event that produced it)
///     payload             the event's JSON
///
/// A batch (`POST` of an array) is journaled all or none: every record but its last has
/// bit 31 set, and recovery keeps a batch only once its last record is there. Journals
/// written before the flag existed have it clear everywhere: one record, one batch.
///
/// What decoding stops at is either a **torn tail** (the process or machine died in the
/// middle of an append: everything from the bad record to the end of the file is one
/// unfinished write) or **corruption** (a bad record with an intact record after it: a
/// flipped bit, a bad sector, a file edited by hand). Only a torn tail may be cut without
/// asking: cutting at corruption would silently drop acknowledged events after it. How
/// the two are told apart is `classify` (JournalRecord+Damage.swift).
package enum JournalRecord {
    /// Records larger than this are garbage, not events (bodies are limited to a few MiB).
    static let maximumLength = 64 << 20
    static let continuesFlag: UInt32 = 1 << 31

    /// One record. `continues`: another record of the same batch follows it.
    package static func encode(sequence: UInt64, payload: [UInt8], continues: Bool = false) -> [UInt8] {
        var record: [UInt8] = []
        append(sequence: sequence, payload: payload, continues: continues, to: &record)
        return record
    }

    /// Appends `records` to `bytes`, each marked as continuing its batch unless it ends it
    /// (what a journal file and a database row hold).
    package static func append(_ records: [Record], to bytes: inout [UInt8]) {
        for record in records {
            append(sequence: record.sequence, payload: record.payload, continues: !record.endsBatch, to: &bytes)
        }
    }

    /// Appends one record to `bytes` (a batch is written with one `write`).
    package static func append(sequence: UInt64, payload: [UInt8], continues: Bool, to bytes: inout [UInt8]) {
        let start = bytes.count
        // Growth stays geometric: reserving the exact size here made every append to a
        // long buffer (a compaction rewriting thousands of records) copy it whole.
        if bytes.capacity < start + 16 + payload.count {
            bytes.reserveCapacity(max(start + 16 + payload.count, bytes.capacity * 2))
        }
        let length = UInt32(8 + payload.count) | (continues ? continuesFlag : 0)
        withUnsafeBytes(of: length.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(0)) { bytes += $0 }
        withUnsafeBytes(of: sequence.littleEndian) { bytes += $0 }
        bytes += payload
        let crc = CRC32.checksum(bytes[(start + 8)...])
        withUnsafeBytes(of: crc.littleEndian) { crcBytes in
            for index in 0..<4 { bytes[start + 4 + index] = crcBytes[index] }
        }
    }

    package struct Record: Sendable, Equatable {
        package var sequence: UInt64
        package var payload: [UInt8]
        /// The last record of its batch.
        package var endsBatch: Bool

        package init(sequence: UInt64, payload: [UInt8], endsBatch: Bool) {
            self.sequence = sequence
            self.payload = payload
            self.endsBatch = endsBatch
        }
    }

    /// Where and why decoding stopped short of the end of the file.
    package struct Damage: Sendable, Equatable, CustomStringConvertible {
        package enum Kind: Sendable, Equatable {
            /// An unfinished last write: safe to cut.
            case tornTail
            /// A bad record with more data after it: acknowledged events may follow.
            case corruption
        }

        package var kind: Kind
        /// The byte offset of the first record that is not kept.
        package var offset: Int
        /// What is wrong there.
        package var reason: String
        /// Bytes from `offset` to the end of the file.
        package var bytesAfter: Int

        package var description: String { "\(reason) at byte \(offset) (\(bytesAfter) bytes from there to the end)" }
    }

    package struct Decoded: Sendable {
        /// The records of complete batches, in file order.
        package var records: [Record]
        /// Bytes of whole batches from the start: where a cut would go.
        package var validLength: Int
        /// Nil when the whole file decoded.
        package var damage: Damage?
    }

    package static func decode(_ bytes: [UInt8]) -> Decoded {
        var records: [Record] = []
        var offset = 0
        /// Records of the batch being read, and where it started.
        var batch: [Record] = []
        var batchStart = 0
        var damage: Damage?
        /// What the bytes from `offset` on are: a torn tail unless an intact record follows
        /// (see `classify`).
        func damaged(_ reason: String) -> Damage {
            // The last event's sequence (outbox records have sequence 0).
            let last = batch.last(where: { $0.sequence != 0 })?.sequence ?? records.last(where: { $0.sequence != 0 })?.sequence
            return Damage(kind: classify(bytes, damageAt: offset, after: last), offset: offset,
                          reason: reason, bytesAfter: bytes.count - offset)
        }
        while offset < bytes.count {
            let remaining = bytes.count - offset
            guard remaining >= 16 else {
                damage = damaged("an incomplete record header")
                break
            }
            let header = readUInt32(bytes, at: offset)
            let length = Int(header & ~continuesFlag)
            let crc = readUInt32(bytes, at: offset + 4)
            guard length >= 8, length <= maximumLength else {
                damage = damaged("an impossible record length \(length)")
                break
            }
            guard remaining - 8 >= length else {
                damage = damaged("a record cut short")
                break
            }
            let body = bytes[(offset + 8)..<(offset + 8 + length)]
            guard CRC32.checksum(body) == crc else {
                damage = damaged("a record whose checksum does not match")
                break
            }
            // length >= 8: the sequence is whole.
            let sequence = readUInt64(bytes, at: offset + 8)
            let endsBatch = header & continuesFlag == 0
            if batch.isEmpty { batchStart = offset }
            batch.append(Record(sequence: sequence, payload: Array(body.dropFirst(8)), endsBatch: endsBatch))
            offset += 8 + length
            if endsBatch {
                records += batch
                batch.removeAll()
            }
        }
        if !batch.isEmpty {
            // Whole records of a batch whose last record never arrived: the batch was being
            // written when the process died. All or none: cut it with what followed.
            let tail = damage.map { $0.kind } ?? .tornTail
            damage = Damage(kind: tail, offset: batchStart,
                            reason: damage.map { "\($0.reason) inside a batch" } ?? "a batch without its last record",
                            bytesAfter: bytes.count - batchStart)
        }
        let validLength = damage?.offset ?? bytes.count
        return Decoded(records: records, validLength: validLength, damage: damage)
    }

    static func readUInt32<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, at offset: Int) -> UInt32 where Bytes.Index == Int {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    /// A little-endian UInt64 at `offset` (a sequence, a `SyncLog` frame's offset).
    static func readUInt64<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, at offset: Int) -> UInt64 where Bytes.Index == Int {
        UInt64(readUInt32(bytes, at: offset)) | UInt64(readUInt32(bytes, at: offset + 4)) << 32
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
