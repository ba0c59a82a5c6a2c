/// Telling a torn tail from corruption (docs/OPERATIONS.md, "Durability").
///
/// A torn tail is what a crash leaves of writes that were never synced, and so never
/// acknowledged: a record cut short, a checksum that does not match, and, after a power
/// cut, zeros. A disk writes a file's unsynced 512-byte sectors in any order, so a later
/// sector may have reached the disk and an earlier one not: the tail then reads as zeros
/// up to a sector boundary, followed by the fragment of a later sector, which may hold
/// whole records. Corruption is damage with an intact record after it that no such
/// sector explains.
extension JournalRecord {
    /// The unit a disk writes whole (and in any order, when nothing forces an order).
    static let sectorSize = 512

    /// What the damage found at `offset` (the first record that does not decode) is:
    /// `.tornTail` when no intact record follows it (`intactRecord`), or when the damage
    /// reaches a sector boundary as zeros (`unwrittenSector`): an earlier sector that
    /// never reached the disk while a later one did. Otherwise `.corruption`.
    /// - Parameter lastSequence: the sequence of the last record before `offset`, if any.
    package static func classify(_ bytes: [UInt8], damageAt offset: Int, after lastSequence: UInt64?) -> Damage.Kind {
        guard let intact = intactRecord(in: bytes, after: offset, lastSequence: lastSequence) else { return .tornTail }
        return unwrittenSector(in: bytes, from: offset, to: intact) ? .tornTail : .corruption
    }

    /// The offset of the first intact record that starts after `offset`, trying every
    /// byte: a plausible length (8 up to `maximumLength`, within the file), a sequence
    /// above `lastSequence` (journals only grow) and a matching checksum. A run of zeros
    /// is never one (length 0). Linear in the bytes after `offset`: most offsets fail at
    /// the length, and the checksum is computed only for the few that pass.
    package static func intactRecord(in bytes: [UInt8], after offset: Int, lastSequence: UInt64?) -> Int? {
        var start = offset + 1
        while start + 16 <= bytes.count {
            defer { start += 1 }
            let length = Int(readUInt32(bytes, at: start) & ~continuesFlag)
            guard length >= 8, length <= maximumLength, length <= bytes.count - start - 8 else { continue }
            let sequence = UInt64(readUInt32(bytes, at: start + 8)) | UInt64(readUInt32(bytes, at: start + 12)) << 32
            if let lastSequence, sequence <= lastSequence { continue }
            if CRC32.checksum(bytes[(start + 8)..<(start + 8 + length)]) == readUInt32(bytes, at: start + 4) { return start }
        }
        return nil
    }

    /// Whether the bytes from `offset` to `end` hold zeros up to a sector boundary: from
    /// `offset` itself, or over a whole sector. (Records never do: a header holds a
    /// length of at least 8, and payloads are JSON.)
    package static func unwrittenSector(in bytes: [UInt8], from offset: Int, to end: Int) -> Bool {
        var boundary = (offset / sectorSize + 1) * sectorSize
        while boundary <= min(end, bytes.count) {
            if bytes[max(offset, boundary - sectorSize)..<boundary].allSatisfy({ $0 == 0 }) { return true }
            boundary += sectorSize
        }
        return false
    }
}
