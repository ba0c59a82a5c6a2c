import Foundation
@testable import SpinStorage
import Testing

/// The history a storage directory keeps beside its journals (`history.db`): segments by
/// the sequence they end at, found from any sequence, trimmed by age, removed with their
/// Spin; nothing created by reading.
@Suite struct HistoryDatabaseTests {
    static func directory() -> String {
        let path = NSTemporaryDirectory() + "spin-history-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func segment(_ first: UInt64, _ last: UInt64, time: Int64 = 1000) -> HistorySegment {
        HistorySegment(first: first, last: last, lastTime: time, base: first == 1 ? nil : Array("{\"sequence\":\(first - 1)}".utf8),
                       records: JournalRecord.encode(sequence: first, payload: Array("{}".utf8)))
    }

    @Test func segments_AreFoundFromAnySequence_InOrder() throws {
        let path = Self.directory()
        let database = HistoryDatabase(directory: path)
        // Reading a history nobody kept creates nothing.
        #expect(try database.history(of: "a", from: 0, limit: 10).isEmpty)
        #expect(try database.archived(spin: "a") == nil)
        #expect(!FileManager.default.fileExists(atPath: database.path))

        try database.archive([Self.segment(1, 10), Self.segment(11, 20)], spin: "a")
        try database.archive([Self.segment(21, 25)], spin: "a")
        try database.archive([Self.segment(1, 10)], spin: "b")
        #expect(try database.archived(spin: "a") == 1...25)
        #expect(try database.history(of: "a", from: 10, limit: 10).map(\.first) == [1, 11, 21])
        #expect(try database.history(of: "a", from: 11, limit: 1) == [Self.segment(11, 20)])
        #expect(try database.history(of: "a", from: 26, limit: 10).isEmpty)
        // The same end again replaces it (a segment written again after a restart).
        try database.archive([Self.segment(16, 20, time: 7)], spin: "a")
        #expect(try database.history(of: "a", from: 20, limit: 1).first?.first == 16)
        database.close()

        // Reopened: still there; the oldest trimmed by time, a Spin's removed with it.
        let again = HistoryDatabase(directory: path)
        #expect(try again.trim(before: 500) == 1)
        #expect(try again.history(of: "a", from: 0, limit: 10).map(\.last) == [10, 25])
        try again.delete(spin: "a")
        #expect(try again.archived(spin: "a") == nil && again.archived(spin: "b") == 1...10)
        again.close()
    }

    @Test func theFileStore_KeepsHistoryApart_AndDeletingAMadeSpinRemovesIt() throws {
        let path = Self.directory()
        let store = FileSpinStore(directory: path)
        _ = try store.open()
        try store.make([(name: "door-1", spin: MadeSpin(kind: "door"), epoch: "e")])
        try store.archive([Self.segment(1, 10)], spin: "door-1")
        #expect(try store.archived(spin: "door-1") == 1...10)
        try store.delete("door-1")
        #expect(try store.archived(spin: "door-1") == nil)
        store.close()
    }
}
