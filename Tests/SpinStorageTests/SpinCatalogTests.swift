import Foundation
import SpinStorage
import Testing

/// The Spins made at run time, as a storage directory keeps them (`spins.catalog`): made
/// and deleted durably, a deletion a crash cut short finished at the next open, a torn
/// tail cut, corruption refused.
@Suite struct SpinCatalogTests {
    typealias Store = FileSpinStoreTests

    /// Opens a store on `directory` and reads its catalog, as start-up does.
    static func open(_ directory: String) throws -> (FileSpinStore, [String: MadeSpin]) {
        let store = FileSpinStore(directory: directory)
        _ = try store.open()
        return (store, try store.madeSpins(repair: false))
    }

    @Test func madeSpins_AreReadBack_AndADeletedOneIsGoneWithItsFiles() throws {
        let directory = Store.temporaryDirectory()
        let (store, none) = try Self.open(directory)
        #expect(none.isEmpty)
        try store.make("door-1", MadeSpin(kind: "door", joined: ["door-2": 7], outboxBase: 1_000))
        try store.make("door-2", MadeSpin(kind: "door"))
        _ = try store.read(spin: "door-1", repair: false)
        try store.startJournal(spin: "door-1", cuttingAt: nil)
        try store.writeEpoch("e1", spin: "door-1")
        try store.append([Store.record(1)], spin: "door-1")
        try store.commit(spin: "door-1", sync: true)
        #expect(FileManager.default.fileExists(atPath: "\(directory)/door-1.journal"))
        try store.delete("door-1")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/door-1.journal"))
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/door-1.epoch"))
        store.close()

        let (again, made) = try Self.open(directory)
        #expect(made == ["door-2": MadeSpin(kind: "door")])
        // A name deleted may be made again: it starts from nothing.
        try again.make("door-1", MadeSpin(kind: "door", outboxBase: 2_000))
        #expect(try again.read(spin: "door-1", repair: false).records.isEmpty)
        again.close()
        let (third, remade) = try Self.open(directory)
        #expect(remade["door-1"] == MadeSpin(kind: "door", outboxBase: 2_000))
        third.close()
    }

    @Test func aDeletionACrashCutShort_IsFinishedAtTheNextOpen() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make("door-1", MadeSpin(kind: "door"))
        try store.delete("door-1")
        store.close()
        // The crash: the record was synced, the files were not removed yet.
        FileManager.default.createFile(atPath: "\(directory)/door-1.journal", contents: Data([1, 2, 3]))
        FileManager.default.createFile(atPath: "\(directory)/door-1.epoch", contents: Data("e".utf8))
        let (again, made) = try Self.open(directory)
        #expect(made.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/door-1.journal"))
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/door-1.epoch"))
        again.close()
    }

    @Test func aNameMadeAgain_NeverFindsWhatADeletionLeft() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make("door-1", MadeSpin(kind: "door"))
        try store.delete("door-1")
        // Files a removal could not take (written back here as if it had failed).
        var bytes: [UInt8] = []
        JournalRecord.append(sequence: 1, payload: Array(#"{"type":"OPEN"}"#.utf8), continues: false, to: &bytes)
        FileManager.default.createFile(atPath: "\(directory)/door-1.journal", contents: Data(bytes))
        try store.make("door-1", MadeSpin(kind: "door"))
        #expect(try store.read(spin: "door-1", repair: false).records.isEmpty)
        store.close()
    }

    @Test func aTornTail_IsCut_AndCorruption_IsRefusedNamingTheFileAndOffset() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        try store.make("a", MadeSpin(kind: "door"))
        try store.make("b", MadeSpin(kind: "door"))
        store.close()
        let path = "\(directory)/spins.catalog"
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        // A torn tail: the last record cut short (never acknowledged).
        try whole.dropLast(3).write(to: URL(fileURLWithPath: path))
        let (torn, made) = try Self.open(directory)
        #expect(made.keys.sorted() == ["a"])
        torn.close()
        // Corruption: a flipped byte in the first record, with a whole record after it.
        var bytes = [UInt8](whole)
        bytes[12] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let corrupt = FileSpinStore(directory: directory)
        _ = try corrupt.open()
        #expect {
            _ = try corrupt.madeSpins(repair: false)
        } throws: { error in
            "\(error)".contains("spins.catalog is corrupt") && "\(error)".contains("at byte 0")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(bytes))
        corrupt.close()
    }

    @Test func theCatalog_IsRewritten_WhenItHoldsFarMoreRecordsThanSpins() throws {
        let directory = Store.temporaryDirectory()
        let (store, _) = try Self.open(directory)
        for index in 0..<700 {
            try store.make("s-\(index)", MadeSpin(kind: "door"))
            if index > 0 { try store.delete("s-\(index - 1)") }
        }
        store.close()
        let size = try FileManager.default.attributesOfItem(atPath: "\(directory)/spins.catalog")[.size] as? Int ?? 0
        // 1,399 records (about 106 KB) were written; the rewrite kept the one Spin, then what followed it.
        #expect(size < 50_000)
        let (again, made) = try Self.open(directory)
        #expect(made.keys.sorted() == ["s-699"])
        again.close()
    }
}
