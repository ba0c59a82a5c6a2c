@testable import SpinStorage
import Testing

/// Torn tails and corruption as a crash and a bad disk leave them (JournalRecord+Damage).
@Suite struct JournalRecordDamageTests {
    static let payload = Array(#"{"type":"increaseLeft"}"#.utf8)

    /// Records from `first` on, `count` of them, in one byte string.
    static func journal(from first: UInt64 = 1, count: Int) -> [UInt8] {
        (0..<count).flatMap { JournalRecord.encode(sequence: first + UInt64($0), payload: payload) }
    }

    /// Where each record of `bytes` starts.
    static func starts(_ bytes: [UInt8]) -> [Int] {
        var starts: [Int] = []
        var offset = 0
        while offset + 16 <= bytes.count {
            starts.append(offset)
            offset += 8 + Int(JournalRecord.readUInt32(bytes, at: offset) & ~JournalRecord.continuesFlag)
        }
        return starts
    }

    /// `bytes` as a power cut may leave them: synced up to `durable`, and of the sectors
    /// written after it only those in `written` reached the disk (the others read zeros).
    static func afterPowerCut(_ bytes: [UInt8], durable: Int, written: Set<Int>) -> [UInt8] {
        var disk = bytes
        let sector = JournalRecord.sectorSize
        for index in (durable / sector)...((bytes.count - 1) / sector) where !written.contains(index) {
            for offset in max(durable, index * sector)..<min(bytes.count, (index + 1) * sector) { disk[offset] = 0 }
        }
        return disk
    }

    @Test func aZeroedTail_IsTorn() {
        let synced = Self.journal(count: 3)
        let decoded = JournalRecord.decode(synced + [UInt8](repeating: 0, count: 700))
        #expect(decoded.records.map(\.sequence) == [1, 2, 3])
        #expect(decoded.damage?.kind == .tornTail)
        #expect(decoded.damage?.offset == synced.count)
        #expect(decoded.damage?.reason == "an impossible record length 0")
    }

    @Test func zerosToASectorBoundary_ThenAFragment_IsTorn() {
        // The report's case: the unsynced tail's first sector never reached the disk, the
        // end of a later one did.
        let bytes = Self.journal(count: 40)
        let durable = Self.starts(bytes)[10]
        let fragment = Array(bytes[1024..<1060])
        let disk = Array(Self.afterPowerCut(bytes, durable: durable, written: [])[..<1024]) + fragment
        let decoded = JournalRecord.decode(disk)
        #expect(decoded.records.count == 10)
        #expect(decoded.damage?.kind == .tornTail)
        #expect(decoded.damage?.offset == durable)
        #expect(decoded.damage?.bytesAfter == disk.count - durable)
    }

    @Test func unsyncedSectorsInAnyOrder_AreTorn_EvenWithWholeRecordsInALaterOne() {
        let bytes = Self.journal(count: 60)
        for durableRecord in [3, 11, 12, 25] {
            let durable = Self.starts(bytes)[durableRecord]
            let first = durable / JournalRecord.sectorSize
            for written in [Set([first + 1]), [first + 2], [first, first + 2], [first + 1, first + 2]] {
                let disk = Self.afterPowerCut(bytes, durable: durable, written: written)
                let decoded = JournalRecord.decode(disk)
                #expect(decoded.damage?.kind == .tornTail, "synced to \(durable), sectors \(written.sorted())")
                #expect(decoded.records.count >= durableRecord)
                #expect(decoded.records.map(\.sequence) == (0..<decoded.records.count).map { UInt64($0 + 1) })
            }
        }
    }

    @Test func aPartialRecord_AndAFlippedBitInTheLastRecord_AreTorn() {
        let bytes = Self.journal(count: 4)
        let last = Self.starts(bytes)[3]
        #expect(JournalRecord.decode(Array(bytes.dropLast(5))).damage?.kind == .tornTail)
        #expect(JournalRecord.decode(Array(bytes.prefix(last + 11))).damage?.kind == .tornTail)
        var flipped = bytes
        flipped[bytes.count - 2] ^= 0x04
        let decoded = JournalRecord.decode(flipped)
        #expect(decoded.damage?.kind == .tornTail)
        #expect(decoded.damage?.offset == last)
    }

    @Test func damageFollowedByAnIntactRecord_IsCorruption() {
        let bytes = Self.journal(count: 8)
        let starts = Self.starts(bytes)
        var flipped = bytes
        flipped[starts[2] + 20] ^= 0x01
        #expect(JournalRecord.decode(flipped).damage?.kind == .corruption)
        #expect(JournalRecord.decode(flipped).damage?.offset == starts[2])
        // A length made longer than the file reads as a record cut short; the intact
        // records after it make it corruption (no acknowledged event is cut silently).
        var longer = bytes
        longer[starts[2] + 2] = 0x01
        #expect(JournalRecord.decode(longer).damage?.kind == .corruption)
        // Zeros that reach no sector boundary are no unwritten sector.
        var zeroed = bytes
        for offset in starts[2]..<(starts[2] + 30) { zeroed[offset] = 0 }
        #expect(JournalRecord.decode(zeroed).damage?.kind == .corruption)
    }

    @Test func somethingThatOnlyLooksLikeAHeader_IsNoIntactRecord() {
        let synced = Self.journal(count: 2)
        // A plausible length and sequence after garbage, but a checksum that does not match.
        var lookalike = JournalRecord.encode(sequence: 5, payload: Self.payload)
        lookalike[4] ^= 0xFF
        let decoded = JournalRecord.decode(synced + [0x7B, 0x22, 0x74, 0x79] + lookalike)
        #expect(decoded.damage?.kind == .tornTail)
        #expect(decoded.records.count == 2)
        // An intact record whose sequence is not above the last one is an old copy, not
        // a record that follows.
        let copy = JournalRecord.decode(synced + [0x01, 0x02] + JournalRecord.encode(sequence: 2, payload: Self.payload))
        #expect(copy.damage?.kind == .tornTail)
    }

    @Test func zeros_NeverMakeAnIntactRecord() {
        let zeros = [UInt8](repeating: 0, count: 4096)
        #expect(JournalRecord.intactRecord(in: zeros, after: -1, lastSequence: nil) == nil)
        // The smallest length a header may hold (8: the sequence alone) over zeros: the
        // checksum of eight zero bytes is not zero.
        let smallest: [UInt8] = [8, 0, 0, 0] + [UInt8](repeating: 0, count: 12)
        #expect(CRC32.checksum([UInt8](repeating: 0, count: 8)) != 0)
        #expect(JournalRecord.intactRecord(in: smallest, after: -1, lastSequence: nil) == nil)
        #expect(JournalRecord.intactRecord(in: Self.journal(count: 1), after: -1, lastSequence: nil) == 0)
    }

    @Test func anUnwrittenSector_IsZerosToABoundary_FromTheDamageOrOverAWholeSector() {
        var bytes = [UInt8](repeating: 0x41, count: 2048)
        for offset in 700..<1024 { bytes[offset] = 0 }
        #expect(JournalRecord.unwrittenSector(in: bytes, from: 700, to: 1100))
        #expect(!JournalRecord.unwrittenSector(in: bytes, from: 600, to: 1100))
        #expect(!JournalRecord.unwrittenSector(in: bytes, from: 700, to: 1000))
        for offset in 1024..<1536 { bytes[offset] = 0 }
        #expect(JournalRecord.unwrittenSector(in: bytes, from: 600, to: 1600))
    }
}
