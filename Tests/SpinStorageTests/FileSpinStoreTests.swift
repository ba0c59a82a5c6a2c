import Foundation
import SpinStorage
import Testing

@Suite struct FileSpinStoreTests {
    static func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "spin-store-\(UUID().uuidString)"
    }

    static func record(_ sequence: UInt64, endsBatch: Bool = true) -> JournalRecord.Record {
        JournalRecord.Record(sequence: sequence, payload: Array(#"{"type":"increase"}"#.utf8), endsBatch: endsBatch)
    }

    /// Opens a store on `directory` and readies `spin`'s journal, as recovery does.
    static func make(_ directory: String, spin: String = "counter") throws -> (FileSpinStore, StoredSpin) {
        let store = FileSpinStore(directory: directory)
        return (store, try ready(store, spin: spin))
    }

    /// What a new store on `directory` reads of the counter's journal (then closed), as a
    /// restart would.
    static func readBack(_ directory: String) throws -> StoredSpin {
        let again = FileSpinStore(directory: directory)
        _ = try again.open()
        defer { again.close() }
        return try again.read(spin: "counter", repair: false)
    }

    /// Opens `store` and readies `spin`'s journal, as recovery does; what it read.
    static func ready(_ store: some SpinStore, spin: String) throws -> StoredSpin {
        _ = try store.open()
        let stored = try store.read(spin: spin, repair: false)
        try store.startJournal(spin: spin, cuttingAt: stored.damage)
        try store.markInUse()
        return stored
    }

    @Test func committedBatches_AreReadBack_AfterAStop_WithTheCleanMark() throws {
        let directory = Self.temporaryDirectory()
        let (store, empty) = try Self.make(directory)
        #expect(empty.records.isEmpty && empty.snapshot == nil && empty.epoch == nil && empty.damage == nil)
        try store.writeEpoch("e1", spin: "counter")
        try store.append([Self.record(1)], spin: "counter")
        try store.append([Self.record(2, endsBatch: false), Self.record(3)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        try store.markClean()
        store.close()

        let again = FileSpinStore(directory: directory)
        #expect(try again.open() == true)
        let stored = try again.read(spin: "counter", repair: false)
        #expect(stored.records == [Self.record(1), Self.record(2, endsBatch: false), Self.record(3)])
        #expect(stored.epoch == "e1")
        again.close()
    }

    @Test func aStoreInUse_WasNotStoppedCleanly() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        store.close()
        #expect(try FileSpinStore(directory: directory).open() == false)
    }

    @Test func aSecondStore_OnTheSameDirectory_CannotOpen() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        #expect {
            _ = try FileSpinStore(directory: directory).open()
        } throws: { error in
            "\(error)".contains("one storage directory serves one server") && "\(error)".contains("pid \(getpid())")
        }
        store.close()
        let third = FileSpinStore(directory: directory)
        _ = try third.open()
        third.close()
    }

    @Test func whatWasNotCommitted_IsDiscarded_AfterAFailure() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        try store.append([Self.record(1)], spin: "counter")
        try store.commit(spin: "counter", sync: false)
        try store.append([Self.record(2)], spin: "counter")
        store.discardUncommitted(spin: "counter")
        try store.probe()
        try store.reopen(spin: "counter")
        try store.append([Self.record(2)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        store.close()
        let bytes = try #require(FileManager.default.contents(atPath: directory + "/counter.journal"))
        #expect(JournalRecord.decode(Array(bytes)).records.map(\.sequence) == [1, 2])
    }

    @Test func corruption_IsRefused_NamingTheFile_UnlessRepairing() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        try store.append((1...4).map { Self.record($0) }, spin: "counter")
        try store.commit(spin: "counter", sync: true)
        store.close()
        let path = directory + "/counter.journal"
        var bytes = Array(try #require(FileManager.default.contents(atPath: path)))
        let recordLength = JournalRecord.encode(sequence: 1, payload: Self.record(1).payload).count
        bytes[recordLength + 20] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let again = FileSpinStore(directory: directory)
        _ = try again.open()
        #expect {
            _ = try again.read(spin: "counter", repair: false)
        } throws: { error in
            (error as? JournalCorruption)?.damage.offset == recordLength && "\(error)".contains(path)
        }
        #expect(Array(try #require(FileManager.default.contents(atPath: path))) == bytes)
        let repaired = try again.read(spin: "counter", repair: true)
        #expect(repaired.records.map(\.sequence) == [1])
        #expect(repaired.damage?.kind == .corruption)
        try again.startJournal(spin: "counter", cuttingAt: repaired.damage)
        #expect(FileManager.default.contents(atPath: path)?.count == recordLength)
        again.close()
    }

    @Test func aPowerCutTail_ZerosThenWholeRecords_IsCut_WithoutAsking() throws {
        // Synced: records 1-3. Unsynced and torn: the sector after them never reached the
        // disk (zeros), the next one did, with whole records of the unacknowledged tail.
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        try store.append((1...3).map { Self.record($0) }, spin: "counter")
        try store.commit(spin: "counter", sync: true)
        store.close()
        let path = directory + "/counter.journal"
        let synced = Array(try #require(FileManager.default.contents(atPath: path)))
        let tail = (4...40).flatMap { JournalRecord.encode(sequence: $0, payload: Self.record($0).payload) }
        var disk = synced + tail
        for offset in synced.count..<512 { disk[offset] = 0 }
        try Data(disk).write(to: URL(fileURLWithPath: path))

        let again = FileSpinStore(directory: directory)
        _ = try again.open()
        let stored = try again.read(spin: "counter", repair: false)
        #expect(stored.records.map(\.sequence) == [1, 2, 3])
        #expect(stored.damage?.kind == .tornTail)
        try again.startJournal(spin: "counter", cuttingAt: stored.damage)
        #expect(Array(try #require(FileManager.default.contents(atPath: path))) == synced)
        again.close()
    }

    @Test func compaction_ReplacesTheSnapshotAndTheJournal() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        try store.append((1...5).map { Self.record($0) }, spin: "counter")
        try store.commit(spin: "counter", sync: true)
        try store.compact(spin: "counter", snapshot: Self.compactedSnapshot, records: [Self.record(4), Self.record(5)])
        try store.append([Self.record(6)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        store.close()
        let stored = try Self.readBack(directory)
        #expect(stored.snapshot == Self.compactedSnapshot)
        #expect(stored.records.map(\.sequence) == [4, 5, 6])
    }

    static let compactedSnapshot = Array(#"{"sequence":3,"epoch":"e","state":{}}"#.utf8)

    /// Events 1...5 committed, and a compaction to the snapshot of 3 prepared.
    static func prepareCompaction(_ store: FileSpinStore) throws -> FileSpinStore.PreparedCompaction {
        try store.append((1...5).map { Self.record($0) }, spin: "counter")
        try store.commit(spin: "counter", sync: true)
        let cut = try #require(store.compactionCut(spin: "counter") ?? nil)
        return try store.prepareCompaction(spin: "counter", cut: cut, snapshot: compactedSnapshot,
                                           records: [Self.record(4), Self.record(5)])
    }

    @Test func aCompactionInTwoSteps_KeepsWhatWasWrittenBetweenThem() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        let prepared = try Self.prepareCompaction(store)
        // Written while the compaction was being prepared: one batch synced, one not yet.
        try store.append([Self.record(6)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        try store.append([Self.record(7)], spin: "counter")
        #expect(try store.finishCompaction(prepared, syncsCommits: true))
        try store.commit(spin: "counter", sync: true)
        try store.append([Self.record(8)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        store.close()
        let stored = try Self.readBack(directory)
        #expect(stored.snapshot == Self.compactedSnapshot)
        #expect(stored.records.map(\.sequence) == [4, 5, 6, 7, 8])
        #expect(!FileManager.default.fileExists(atPath: directory + "/counter.journal.tmp"))
    }

    @Test func aCompactionStoppedBetweenItsSteps_LeavesTheOldJournal_WhichTheSnapshotFits() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        _ = try Self.prepareCompaction(store)
        try store.append([Self.record(6)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        store.close()  // as a crash would: the prepared journal was never renamed
        let stored = try Self.readBack(directory)
        #expect(stored.snapshot == Self.compactedSnapshot)
        // Recovery skips the records the snapshot covers (1...3).
        #expect(stored.records.map(\.sequence) == [1, 2, 3, 4, 5, 6])
    }

    @Test func aCompactionPrepared_IsNotFinishedOnAJournalReopenedMeanwhile() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        let prepared = try Self.prepareCompaction(store)
        try store.reopen(spin: "counter")
        #expect(try !store.finishCompaction(prepared, syncsCommits: true))
        #expect(!FileManager.default.fileExists(atPath: directory + "/counter.journal.tmp"))
        store.close()
    }

    @Test func aSuspension_IsStored_UntilRemoved() throws {
        let directory = Self.temporaryDirectory()
        let (store, _) = try Self.make(directory)
        #expect(try store.suspension(of: "counter") == nil)
        try store.storeSuspension(Array("{}".utf8), of: "counter")
        #expect(try store.suspension(of: "counter") == Array("{}".utf8))
        store.removeSuspension(of: "counter")
        #expect(try store.suspension(of: "counter") == nil)
        store.close()
    }
}
