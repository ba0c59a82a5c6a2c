import SpinStorage
import Testing

@Suite struct JournalRecordTests {
    static let empty = Array("{}".utf8)

    @Test func crc32_MatchesTheStandardCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    @Test func records_RoundTrip_WithTheirBatchBoundaries() {
        let bytes = JournalRecord.encode(sequence: 1, payload: Array(#"{"type":"reset"}"#.utf8))
            + JournalRecord.encode(sequence: 2, payload: Self.empty, continues: true)
            + JournalRecord.encode(sequence: 3, payload: Array(#"{"type":"increase"}"#.utf8))
        let decoded = JournalRecord.decode(bytes)
        #expect(decoded.records.map(\.sequence) == [1, 2, 3])
        #expect(decoded.records.map(\.endsBatch) == [true, false, true])
        #expect(decoded.records.last.map { String(decoding: $0.payload, as: UTF8.self) } == #"{"type":"increase"}"#)
        #expect(decoded.validLength == bytes.count)
        #expect(decoded.damage == nil)
    }

    @Test func anUnfinishedLastWrite_IsATornTail() {
        let first = JournalRecord.encode(sequence: 1, payload: Self.empty)
        let second = JournalRecord.encode(sequence: 2, payload: Self.empty)
        for torn in [first + second.dropLast(3), first + second.prefix(5), first + second.prefix(12) + [UInt8](repeating: 0, count: 40)] {
            let decoded = JournalRecord.decode(torn)
            #expect(decoded.records.count == 1)
            #expect(decoded.validLength == first.count)
            #expect(decoded.damage?.kind == .tornTail)
        }
        // The last record's checksum is wrong: its write did not finish.
        var last = second
        last[last.count - 1] ^= 0xFF
        #expect(JournalRecord.decode(first + last).damage?.kind == .tornTail)
    }

    @Test func aFlippedByteWithRecordsAfterIt_IsCorruption_NamingItsOffset() {
        let records = (1...4).map { JournalRecord.encode(sequence: UInt64($0), payload: Array(#"{"type":"increaseLeft"}"#.utf8)) }
        var bytes = records.flatMap { $0 }
        bytes[records[0].count + 20] ^= 0x01
        let decoded = JournalRecord.decode(bytes)
        #expect(decoded.records.map(\.sequence) == [1])
        #expect(decoded.damage?.kind == .corruption)
        #expect(decoded.damage?.offset == records[0].count)
        #expect(decoded.damage?.bytesAfter == bytes.count - records[0].count)
        // A damaged length field with data after it is corruption too.
        var header = records.flatMap { $0 }
        header[records[0].count + 3] = 0x7F
        #expect(JournalRecord.decode(header).damage?.kind == .corruption)
    }

    @Test func aBatchWithoutItsLastRecord_IsCutWhole() {
        let first = JournalRecord.encode(sequence: 1, payload: Self.empty)
        let batch = JournalRecord.encode(sequence: 2, payload: Self.empty, continues: true)
            + JournalRecord.encode(sequence: 3, payload: Self.empty, continues: true)
        let decoded = JournalRecord.decode(first + batch + JournalRecord.encode(sequence: 4, payload: Self.empty).prefix(9))
        #expect(decoded.records.map(\.sequence) == [1])
        #expect(decoded.validLength == first.count)
        #expect(decoded.damage?.kind == .tornTail)
        #expect(JournalRecord.decode(first + batch).validLength == first.count)
    }
}
