import Foundation
import SpinStorage
import Testing

/// The Spins made at run time, as a storage directory keeps them (`spins.db`, through
/// `FileSpinStore`): made and deleted durably, journals that share one commit, a crash's
/// copy of the files that keeps what was synced, a damaged row refused, and a directory
/// of the release before (`spins.catalog`, files per Spin) moved in.
@Suite struct SpinDatabaseTests {
    typealias Store = FileSpinStoreTests

    /// Opens a store on `directory` and reads its made Spins, as start-up does.
    static func open(_ directory: String, repair: Bool = false) throws -> (FileSpinStore, [String: MadeSpin]) {
        let store = FileSpinStore(directory: directory)
        _ = try store.open()
        return (store, try store.madeSpins(repair: repair))
    }

    /// Readies a made Spin's journal, as recovery does.
    static func start(_ store: FileSpinStore, _ spin: String) throws -> StoredSpin {
        let stored = try store.read(spin: spin, repair: false)
        try store.startJournal(spin: spin, cuttingAt: stored.damage)
        return stored
    }

    /// What the files of `directory` hold now, as a power cut would leave them (what was
    /// handed to the OS; the copy is made while the store holds them open).
    static func crashCopy(of directory: String) throws -> String {
        let copy = Store.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name != ".lock" {
            try FileManager.default.copyItem(atPath: "\(directory)/\(name)", toPath: "\(copy)/\(name)")
        }
        return copy
    }

    @Test func madeSpins_AreReadBack_AndADeletedOneIsGoneWithItsJournal() throws {
        let directory = Store.temporaryDirectory()
        let (store, none) = try Self.open(directory)
        #expect(none.isEmpty)
        try store.make([("door-1", MadeSpin(kind: "door", joined: ["door-2": 7], outboxBase: 1_000), "e1"),
                        ("door-2", MadeSpin(kind: "door"), "e2")])
        let fresh = try Self.start(store, "door-1")
        #expect(fresh.epoch == "e1" && fresh.records.isEmpty && fresh.snapshot == nil)
        try store.append([Store.record(1)], spin: "door-1")
        try store.commit(spin: "door-1", sync: true)
        try store.delete("door-1")
        store.close()
        // No file per Spin: the database and its log, whatever the count.
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") }
        #expect(files.allSatisfy { $0.hasPrefix("spins.db") })

        let (again, made) = try Self.open(directory)
        #expect(made == ["door-2": MadeSpin(kind: "door")])
        // A name deleted may be made again: it starts from nothing, under its new epoch.
        try again.make([("door-1", MadeSpin(kind: "door", outboxBase: 2_000), "e3")])
        let remadeStored = try Self.start(again, "door-1")
        #expect(remadeStored.records.isEmpty && remadeStored.epoch == "e3")
        again.close()
        let (third, remade) = try Self.open(directory)
        #expect(remade["door-1"] == MadeSpin(kind: "door", outboxBase: 2_000))
        third.close()
    }

    @Test func oneSyncedCommit_MakesEverySpinsRowsDurable_AndWhatNoCommitTookIsNotThere() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make([("a", MadeSpin(kind: "door"), "ea"), ("b", MadeSpin(kind: "door"), "eb"),
                        ("c", MadeSpin(kind: "door"), "ec")])
        for spin in ["a", "b", "c"] { _ = try Self.start(store, spin) }
        try store.append([Store.record(1)], spin: "a")
        try store.append([Store.record(1), Store.record(2)], spin: "b")
        // a's commit is b's too (one transaction, one sync).
        try store.commit(spin: "a", sync: true)
        try store.commit(spin: "b", sync: true)
        try store.append([Store.record(1)], spin: "c")
        // The power cut: c's row was never committed.
        let copy = try Self.crashCopy(of: directory)
        store.close()
        let (crashed, made) = try Self.open(copy)
        #expect(made.keys.sorted() == ["a", "b", "c"])
        #expect(try crashed.read(spin: "a", repair: false).records.map(\.sequence) == [1])
        #expect(try crashed.read(spin: "b", repair: false).records.map(\.sequence) == [1, 2])
        #expect(try crashed.read(spin: "c", repair: false).records.isEmpty)
        crashed.close()
    }

    @Test func aDiscardedWrite_PutsTheOtherSpinsOfItsTransactionInDoubt_UntilTheyGoBack() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make([("a", MadeSpin(kind: "door"), "ea"), ("b", MadeSpin(kind: "door"), "eb")])
        for spin in ["a", "b"] { _ = try Self.start(store, spin) }
        try store.append([Store.record(1)], spin: "a")
        try store.commit(spin: "a", sync: true)
        try store.append([Store.record(2)], spin: "a")
        try store.append([Store.record(1)], spin: "b")
        // a's failure takes the transaction back, b's row with it: b's commit must not
        // say it is durable.
        store.discardUncommitted(spin: "a")
        #expect(throws: SpinDatabase.InDoubt.self) { try store.commit(spin: "b", sync: true) }
        store.discardUncommitted(spin: "b")
        #expect(try store.reopen(spin: "b") == nil)
        try store.append([Store.record(1)], spin: "b")
        try store.commit(spin: "b", sync: true)
        try store.append([Store.record(2)], spin: "a")
        try store.commit(spin: "a", sync: true)
        #expect(try store.read(spin: "a", repair: false).records.map(\.sequence) == [1, 2])
        #expect(try store.read(spin: "b", repair: false).records.map(\.sequence) == [1])
        store.close()
    }

    @Test func compaction_ReplacesTheSnapshotAndTheRows_AndTheJournalGoesOn() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make([("a", MadeSpin(kind: "door"), "ea")])
        _ = try Self.start(store, "a")
        for sequence in 1...5 as ClosedRange<UInt64> {
            try store.append([Store.record(sequence)], spin: "a")
            try store.commit(spin: "a", sync: true)
        }
        try store.compact(spin: "a", snapshot: Array(#"{"sequence":3}"#.utf8), records: [Store.record(4), Store.record(5)])
        try store.append([Store.record(6)], spin: "a")
        try store.commit(spin: "a", sync: true)
        store.close()
        let (again, _) = try Self.open(directory)
        let stored = try again.read(spin: "a", repair: false)
        #expect(stored.snapshot == Array(#"{"sequence":3}"#.utf8))
        #expect(stored.records.map(\.sequence) == [4, 5, 6])
        again.close()
    }

    @Test func aDamagedRow_IsRefusedNamingTheDatabaseAndSpin_UnlessRepairing() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make([("a", MadeSpin(kind: "door"), "ea")])
        _ = try Self.start(store, "a")
        for sequence in 1...3 as ClosedRange<UInt64> {
            try store.append([Store.record(sequence)], spin: "a")
            try store.commit(spin: "a", sync: true)
        }
        store.close()
        // A flipped byte in row 2 (sequence 2), rows 1 and 3 intact.
        let db = try SQLiteConnection(path: "\(directory)/spins.db")
        try db.execute("UPDATE batches SET records = CAST(zeroblob(length(records)) AS BLOB) WHERE spin = 'a' AND n = 2")
        db.close()
        let (damaged, _) = try Self.open(directory)
        #expect {
            _ = try damaged.read(spin: "a", repair: false)
        } throws: { error in
            "\(error)".contains("spins.db") && "\(error)".contains("spin 'a'") && error is JournalCorruption
        }
        let repaired = try damaged.read(spin: "a", repair: true)
        #expect(repaired.records.map(\.sequence) == [1])
        try damaged.startJournal(spin: "a", cuttingAt: repaired.damage)
        try damaged.append([Store.record(2)], spin: "a")
        try damaged.commit(spin: "a", sync: true)
        #expect(try damaged.read(spin: "a", repair: false).records.map(\.sequence) == [1, 2])
        damaged.close()
    }

    @Test func aRestingSpin_IsLeftOnDisk_AtStart_AndFoundByName_WithWhereItRests_UntilWoken_WhateverIsTakenBackLater() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make([("a", MadeSpin(kind: "door", resting: .init(sequence: 0, consumed: [:])), "ea"),
                        ("b", MadeSpin(kind: "door"), "eb")])
        _ = try Self.start(store, "b")
        try store.rest("b", sequence: 4, consumed: ["a": 2])
        // a wakes; then a shared transaction is taken back: a stays awake all the same.
        _ = try Self.start(store, "a")
        try store.append([Store.record(1)], spin: "a")
        store.discardUncommitted(spin: "a")
        store.close()
        let (again, made) = try Self.open(directory)
        // A start reads the Spins that do not rest: b stays on disk, found by name.
        #expect(made.keys.sorted() == ["a"])
        #expect(made["a"]?.resting == nil)
        #expect(try again.madeSpin(named: "b")?.resting == MadeSpin.Resting(sequence: 4, consumed: ["a": 2]))
        #expect(try again.madeSpin(named: "c") == nil)
        // Unless its kind's Spins share a Gear: then it is read, resting.
        #expect(try again.madeSpins(repair: false, including: ["door"])["b"]?.resting == MadeSpin.Resting(sequence: 4, consumed: ["a": 2]))
        again.close()
    }

    @Test func madeSpins_AreCounted_AndPagedByName_InByteOrder_WithinAPrefix() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        let names = ["door-b", "door-a", "door-Z", "lamp-1", "door-c", "doo"]
        try store.make(names.map { ($0, MadeSpin(kind: "door", resting: .init(sequence: 3, consumed: [:])), "e") })
        #expect(try store.madeSpinCounts() == ["door": 6])
        let first = try store.madeSpins(prefix: "door-", after: nil, limit: 2)
        #expect(first.map(\.name) == ["door-Z", "door-a"])
        #expect(first.map(\.sequence) == [3, 3])
        #expect(try store.madeSpins(prefix: "door-", after: "door-a", limit: 5).map(\.name) == ["door-b", "door-c"])
        #expect(try store.madeSpins(prefix: "", after: "door-c", limit: 5).map(\.name) == ["lamp-1"])
        #expect(try store.madeSpins(prefix: "x", after: nil, limit: 5).isEmpty)
        try store.delete("door-a")
        #expect(try store.madeSpinCounts() == ["door": 5])
        store.close()
    }

    @Test func aSuspension_IsKeptInTheDatabase_UntilRemoved() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make([("a", MadeSpin(kind: "door"), "ea")])
        #expect(try store.suspension(of: "a") == nil)
        try store.storeSuspension(Array("held".utf8), of: "a")
        store.close()
        let (again, _) = try Self.open(directory)
        #expect(try again.suspension(of: "a") == Array("held".utf8))
        again.removeSuspension(of: "a")
        #expect(try again.suspension(of: "a") == nil)
        again.close()
    }

    @Test func aDatabaseOfANewerRelease_IsRefusedChangingNothing() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        store.close()
        let db = try SQLiteConnection(path: "\(directory)/spins.db")
        try db.execute("PRAGMA user_version = 99")
        db.close()
        #expect {
            _ = try Self.open(directory)
        } throws: { error in
            "\(error)".contains("written by a newer release (schema version 99")
        }
        // The directory's lock was let go: a second try says the same, not "locked".
        #expect {
            _ = try Self.open(directory)
        } throws: { error in
            "\(error)".contains("newer release")
        }
    }

    // MARK: The release before

    /// Writes the directory a release before this one left: a catalog and files per Spin.
    static func writeLegacy(_ directory: String, catalog: [[String: Any]], files: [String: [UInt8]]) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var bytes: [UInt8] = []
        for (index, entry) in catalog.enumerated() {
            let payload = try JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys])
            JournalRecord.append(sequence: UInt64(index + 1), payload: Array(payload), continues: false, to: &bytes)
        }
        FileManager.default.createFile(atPath: "\(directory)/spins.catalog", contents: Data(bytes))
        for (name, contents) in files { FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(contents)) }
    }

    static func journal(_ sequences: [UInt64]) -> [UInt8] {
        var bytes: [UInt8] = []
        for sequence in sequences {
            JournalRecord.append(sequence: sequence, payload: Array(#"{"type":"OPEN"}"#.utf8), continues: false, to: &bytes)
        }
        return bytes
    }

    @Test func aDirectoryOfTheReleaseBefore_IsMovedIn_WithItsHistory_AndItsFilesGo() throws {
        let directory = Store.temporaryDirectory()
        try Self.writeLegacy(directory, catalog: [
            ["made": "door-1", "kind": "door", "joined": ["twin-1": 3], "outboxBase": 1_000],
            ["made": "door-2", "kind": "door", "joined": [:], "outboxBase": 2_000],
            ["made": "door-3", "kind": "door", "joined": [:], "outboxBase": 3_000],
            ["deleted": "door-3"],
        ], files: [
            // door-1: a snapshot at 2, then 3 and 4, then a torn tail (never acknowledged).
            "door-1.snapshot.json": Array(#"{"sequence":2}"#.utf8),
            "door-1.journal": Self.journal([3, 4]) + [9, 0, 0],
            "door-1.epoch": Array("old-epoch".utf8),
            "door-1.suspended": Array("held".utf8),
            // What a deletion a crash cut short left.
            "door-3.journal": Self.journal([1]),
        ])
        let (store, made) = try Self.open(directory)
        #expect(made == ["door-1": MadeSpin(kind: "door", joined: ["twin-1": 3], outboxBase: 1_000),
                         "door-2": MadeSpin(kind: "door", outboxBase: 2_000)])
        #expect(store.migratedSpins == 2)
        let stored = try store.read(spin: "door-1", repair: false)
        #expect(stored.records.map(\.sequence) == [3, 4])
        #expect(stored.snapshot == Array(#"{"sequence":2}"#.utf8))
        #expect(stored.epoch == "old-epoch")
        #expect(try store.suspension(of: "door-1") == Array("held".utf8))
        store.close()
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") }
        #expect(left.allSatisfy { $0.hasPrefix("spins.db") }, "\(left)")
        // The next start finds nothing more to move.
        let (again, madeAgain) = try Self.open(directory)
        #expect(again.migratedSpins == 0 && madeAgain.count == 2)
        again.close()
    }

    @Test func aCorruptJournalOfTheReleaseBefore_IsRefusedNamingItsFile_ChangingNothing() throws {
        let directory = Store.temporaryDirectory()
        var corrupt = Self.journal([1, 2])
        corrupt[12] ^= 0xFF
        try Self.writeLegacy(directory, catalog: [["made": "door-1", "kind": "door", "joined": [:], "outboxBase": 1]],
                             files: ["door-1.journal": corrupt])
        let store = FileSpinStore(directory: directory)
        _ = try store.open()
        #expect {
            _ = try store.madeSpins(repair: false)
        } throws: { error in
            "\(error)".contains("door-1.journal")
        }
        store.close()
        #expect(FileManager.default.fileExists(atPath: "\(directory)/spins.catalog"))
        #expect(FileManager.default.fileExists(atPath: "\(directory)/door-1.journal"))
        // --repair cuts it and moves the Spin in.
        let (repaired, made) = try Self.open(directory, repair: true)
        #expect(made.keys.sorted() == ["door-1"])
        #expect(try repaired.read(spin: "door-1", repair: false).records.isEmpty)
        repaired.close()
    }
}
