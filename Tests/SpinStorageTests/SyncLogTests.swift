import Foundation
import SpinStorage
import Testing

/// `journals.log` (`SyncLog`): its frames, and how a start puts them back into journal
/// files, as values.
@Suite struct SyncLogTests {
    static func batch(_ sequences: ClosedRange<UInt64>) -> [UInt8] {
        var bytes: [UInt8] = []
        JournalRecord.append(sequences.map { FileSpinStoreTests.record($0, endsBatch: $0 == sequences.upperBound) }, to: &bytes)
        return bytes
    }

    static func log(_ frames: [SyncLog.Frame]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, frame) in frames.enumerated() {
            SyncLog.append(spin: frame.spin, offset: frame.offset, batch: frame.batch, number: UInt64(index + 1), to: &bytes)
        }
        return bytes
    }

    @Test func frames_AreReadBack_AndATornTailIsNotAFrame() {
        let first = SyncLog.Frame(spin: "c0", offset: 0, batch: Self.batch(1...2))
        let second = SyncLog.Frame(spin: "ünïcode-spin", offset: 77, batch: Self.batch(3...3))
        let bytes = Self.log([first, second])
        let decoded = SyncLog.decode(bytes)
        #expect(decoded.frames == [first, second] && decoded.damage == nil)
        // A write cut short (never synced, never acknowledged): the frames before it.
        for cut in [bytes.count - 1, bytes.count - 20] {
            let torn = SyncLog.decode(Array(bytes[..<cut]))
            #expect(torn.frames == [first])
            #expect(torn.damage?.kind == .tornTail)
        }
    }

    /// An append larger than a frame may carry is cut between records; a start puts the
    /// frames back together (a record never straddles two).
    @Test func aLargeAppend_IsCutIntoFrames_BetweenRecords() {
        #expect(SyncLog.frameLimit < 64 << 20)   // below what a record may be
        let payload = Array(repeating: UInt8(ascii: "x"), count: 1000)
        var records: [UInt8] = []
        JournalRecord.append((1...40).map { JournalRecord.Record(sequence: $0, payload: payload, endsBatch: $0 == 40) }, to: &records)
        var bytes: [UInt8] = []
        let last = SyncLog.appendFrames(spin: "big", offset: 100, records: records[...], numberedAfter: 7, limit: 16_000, to: &bytes)
        let decoded = SyncLog.decode(bytes)
        let frames = decoded.frames
        #expect(decoded.damage == nil)
        #expect(frames.count == 3 && last == 10)
        #expect(frames.allSatisfy { $0.batch.count <= 16_000 })
        #expect(frames.map(\.offset) == [100, 100 + frames[0].batch.count, 100 + frames[0].batch.count + frames[1].batch.count])
        #expect(frames.flatMap(\.batch) == records)
        // Back into a file that had only what came before the append.
        let before = Self.batch(1...1)
        var shifted: [UInt8] = []
        _ = SyncLog.appendFrames(spin: "big", offset: before.count, records: records[...], numberedAfter: 0, limit: 16_000, to: &shifted)
        #expect(SyncLog.reconcile(file: before, frames: SyncLog.decode(shifted).frames) == .extend(cut: before.count, bytes: records))
        // A record larger than the limit gets a frame of its own.
        var alone: [UInt8] = []
        _ = SyncLog.appendFrames(spin: "big", offset: 0, records: records[...], numberedAfter: 0, limit: 500, to: &alone)
        #expect(SyncLog.decode(alone).frames.count == 40)
    }

    /// A frame holds the Spin's journal records, each with its own length and checksum: a
    /// frame cut short (the log's unsynced tail after a power cut) still holds intact
    /// records, and that is a torn tail, not corruption. Damage with an intact frame after
    /// it is corruption.
    @Test func aFrameCutShort_IsATornTail_ThoughTheRecordsInItAreIntact() {
        let first = SyncLog.Frame(spin: "levels", offset: 0, batch: Self.batch(1...1))
        let second = SyncLog.Frame(spin: "levels", offset: 40, batch: Self.batch(2...30))
        let bytes = Self.log([first, second])
        let secondStart = bytes.count - (16 + 2 + 6 + 8 + second.batch.count)
        for cut in [bytes.count - 1, bytes.count - 300, secondStart + 200] {
            let decoded = SyncLog.decode(Array(bytes[..<cut]))
            #expect(decoded.frames == [first])
            #expect(decoded.damage?.kind == .tornTail, "cut at \(cut)")
        }
        // A checksum that fails in the middle of the second frame, with the rest intact.
        var flipped = bytes
        flipped[secondStart + 100] ^= 0x01
        #expect(SyncLog.decode(flipped).damage?.kind == .tornTail)
        // A flipped bit in the first frame, with the second whole after it: corruption.
        var early = bytes
        early[20] ^= 0x01
        #expect(SyncLog.decode(early).damage?.kind == .corruption)
    }

    @Test func aFrameThatIsNoFrame_IsCorruption_NotATornTail() {
        // A checksum that matches over a payload that is not a frame: written by something else.
        var bytes: [UInt8] = []
        JournalRecord.append(sequence: 1, payload: [1, 2, 3], continues: false, to: &bytes)
        #expect(SyncLog.decode(bytes).damage?.kind == .corruption)
        var notRecords: [UInt8] = []
        SyncLog.append(spin: "c0", offset: 0, batch: [9, 9, 9, 9], number: 1, to: &notRecords)
        #expect(SyncLog.decode(notRecords).damage?.kind == .corruption)
        var huge: [UInt8] = []
        SyncLog.append(spin: "c0", offset: Int.max - 3, batch: Self.batch(1...1), number: 1, to: &huge)
        #expect(SyncLog.decode(huge).damage?.kind == .corruption)
    }

    @Test func aFileThatHoldsEveryFrame_IsLeftAsItIs() {
        let one = Self.batch(1...1), two = Self.batch(2...3)
        let frames = [SyncLog.Frame(spin: "c", offset: 0, batch: one), SyncLog.Frame(spin: "c", offset: one.count, batch: two)]
        #expect(SyncLog.reconcile(file: one + two, frames: frames) == .holdsAll)
        // More than the log has (written after its last write, never acknowledged): kept too.
        #expect(SyncLog.reconcile(file: one + two + Self.batch(4...4), frames: frames) == .holdsAll)
    }

    @Test func whatAFileLost_IsAppended_WhereItsWholeBatchesEnd() {
        let one = Self.batch(1...1), two = Self.batch(2...3), three = Self.batch(4...4)
        let frames = [SyncLog.Frame(spin: "c", offset: one.count, batch: two),
                      SyncLog.Frame(spin: "c", offset: one.count + two.count, batch: three)]
        // Nothing of them reached the file.
        #expect(SyncLog.reconcile(file: one, frames: frames) == .extend(cut: one.count, bytes: two + three))
        // Half of the second batch did (a torn tail): cut, then appended whole.
        #expect(SyncLog.reconcile(file: one + two.prefix(20), frames: frames) == .extend(cut: one.count, bytes: two + three))
        // After a power cut the unsynced sectors read as zeros.
        #expect(SyncLog.reconcile(file: one + [UInt8](repeating: 0, count: 700), frames: frames)
            == .extend(cut: one.count, bytes: two + three))
        // The file itself gone (its data never synced): made again from the log.
        let all = [SyncLog.Frame(spin: "c", offset: 0, batch: one)] + frames
        #expect(SyncLog.reconcile(file: [], frames: all) == .extend(cut: 0, bytes: one + two + three))
    }

    /// One append may carry many batches (every batch a turn completed): the file may
    /// have kept some of them whole, and only the rest is appended.
    @Test func anAppendOfManyBatches_ThatTheFileKeptInPart_IsAppendedFromWhereItStopped() {
        let one = Self.batch(1...1), two = Self.batch(2...3), three = Self.batch(4...4), four = Self.batch(5...5)
        let frames = [SyncLog.Frame(spin: "c", offset: one.count, batch: two + three + four)]
        #expect(SyncLog.reconcile(file: one + two + three.prefix(5), frames: frames)
            == .extend(cut: one.count + two.count, bytes: three + four))
        #expect(SyncLog.reconcile(file: one + two + three + four, frames: frames) == .holdsAll)
        // What the file kept of it must be the log's bytes.
        guard case .mismatch = SyncLog.reconcile(file: one + Self.batch(9...10), frames: frames) else {
            Issue.record("an append whose start differs from the file's must not be taken")
            return
        }
    }

    @Test func corruptionTheLogCovers_IsCut_AndWhatItHidIsBack() {
        let one = Self.batch(1...1), two = Self.batch(2...2), three = Self.batch(3...3)
        var file = one + two + three
        file[one.count + 12] ^= 0xFF   // a flipped bit in the second batch, an intact one after it
        let frames = [SyncLog.Frame(spin: "c", offset: one.count, batch: two),
                      SyncLog.Frame(spin: "c", offset: one.count + two.count, batch: three)]
        #expect(SyncLog.reconcile(file: file, frames: frames) == .extend(cut: one.count, bytes: two + three))
    }

    @Test func framesThatDoNotFit_AreAMismatch() {
        let one = Self.batch(1...1), two = Self.batch(2...2)
        // The file's bytes differ from the log's at the same place.
        let other = Self.batch(7...7)
        guard case .mismatch(let differs) = SyncLog.reconcile(file: one + other,
                                                              frames: [SyncLog.Frame(spin: "c", offset: one.count, batch: two)]) else {
            Issue.record("a batch that differs must not be taken")
            return
        }
        #expect(differs.contains("differ"))
        // The file ends before the log's batches begin: what lay between is lost.
        guard case .mismatch(let gap) = SyncLog.reconcile(file: one, frames: [SyncLog.Frame(spin: "c", offset: one.count + 40, batch: two)]) else {
            Issue.record("a gap must not be papered over")
            return
        }
        #expect(gap.contains("byte \(one.count)") && gap.contains("byte \(one.count + 40)"))
    }
}

/// `FileSpinStore` with shared syncs: one `fdatasync` of the log for every Spin a turn
/// wrote, and what a power cut took from the journal files back from the log.
@Suite struct FileSpinStoreSharedSyncTests {
    static let spins = ["c0", "c1", "c2"]

    static func open(_ directory: String, sharesSyncs: Bool = true) throws -> FileSpinStore {
        let store = FileSpinStore(directory: directory, sharesSyncs: sharesSyncs)
        _ = try store.open()
        for spin in spins {
            let stored = try store.read(spin: spin, repair: false)
            try store.startJournal(spin: spin, cuttingAt: stored.damage)
        }
        try store.markInUse()
        return store
    }

    static func logBytes(_ directory: String) throws -> [UInt8] {
        try DurableFiles.read("\(directory)/\(SyncLog.fileName)") ?? []
    }

    /// What a power cut leaves of a journal file that was never synced after `length`.
    static func cut(_ directory: String, _ spin: String, to length: Int) {
        #expect(truncate("\(directory)/\(spin).journal", off_t(length)) == 0)
    }

    @Test func oneSyncedCommit_PutsEverySpinsBatchesInTheLog_AndAPowerCutLosesNone() throws {
        let directory = FileSpinStoreTests.temporaryDirectory()
        let store = try Self.open(directory)
        for (index, spin) in Self.spins.enumerated() {
            try store.append([FileSpinStoreTests.record(1)], spin: spin)
            try store.append([FileSpinStoreTests.record(2, endsBatch: false), FileSpinStoreTests.record(UInt64(3 + index))], spin: spin)
        }
        try store.commit(spin: "c0", sync: true)
        // The log took all three Spins' batches in that one commit; the others have none left.
        let frames = SyncLog.decode(try Self.logBytes(directory)).frames
        #expect(frames.map(\.spin) == ["c0", "c0", "c1", "c1", "c2", "c2"])
        try store.commit(spin: "c1", sync: true)
        try store.commit(spin: "c2", sync: true)
        #expect(SyncLog.decode(try Self.logBytes(directory)).frames.count == 6)
        store.close()
        // The power cut: the journal files lose everything (never synced), the log keeps it.
        for spin in Self.spins { Self.cut(directory, spin, to: 0) }
        let again = try Self.open(directory)
        for (index, spin) in Self.spins.enumerated() {
            #expect(try again.read(spin: spin, repair: false).records
                == [FileSpinStoreTests.record(1), FileSpinStoreTests.record(2, endsBatch: false), FileSpinStoreTests.record(UInt64(3 + index))])
        }
        // Put back, synced, and the log emptied; what was done is told (for the log).
        #expect(try Self.logBytes(directory).isEmpty)
        #expect(again.recoveredLog?.frames == 6 && again.recoveredLog?.extended == Self.spins)
        again.close()
        let third = try Self.open(directory)
        #expect(third.recoveredLog == nil)
        third.close()
    }

    @Test func aCheckpoint_SyncsTheFiles_AndEmptiesTheLog() throws {
        let directory = FileSpinStoreTests.temporaryDirectory()
        let store = try Self.open(directory)
        store.checkpointBytes = 200
        var sequence: UInt64 = 0
        for _ in 0..<20 {
            for spin in Self.spins {
                sequence += 1
                try store.append([FileSpinStoreTests.record(sequence)], spin: spin)
            }
            try store.commit(spin: "c1", sync: true)
        }
        // Never more than one checkpoint's worth: the files hold the rest, synced.
        #expect(try Self.logBytes(directory).count < 400)
        try store.markClean()
        #expect(try Self.logBytes(directory).isEmpty)
        store.close()
        let again = try Self.open(directory)
        #expect(try again.read(spin: "c2", repair: false).records.count == 20)
        again.close()
    }

    @Test func batchesNeverCommitted_AfterAFailure_NeverReachTheLog() throws {
        let directory = FileSpinStoreTests.temporaryDirectory()
        let store = try Self.open(directory)
        try store.append([FileSpinStoreTests.record(1)], spin: "c0")
        try store.commit(spin: "c0", sync: true)
        try store.append([FileSpinStoreTests.record(2)], spin: "c0")
        store.discardUncommitted(spin: "c0")
        try store.append([FileSpinStoreTests.record(1)], spin: "c1")
        try store.commit(spin: "c1", sync: true)
        #expect(SyncLog.decode(try Self.logBytes(directory)).frames.map(\.spin) == ["c0", "c1"])
        // Taken back after the failure: a checkpoint, so nothing discarded lingers in the log.
        _ = try store.reopen(spin: "c0")
        #expect(try Self.logBytes(directory).isEmpty)
        try store.append([FileSpinStoreTests.record(2)], spin: "c0")
        try store.commit(spin: "c0", sync: true)
        store.close()
        let again = try Self.open(directory)
        #expect(try again.read(spin: "c0", repair: false).records == [FileSpinStoreTests.record(1), FileSpinStoreTests.record(2)])
        again.close()
    }

    @Test func aCompaction_LeavesNoBatchOfTheOldFileInTheLog() throws {
        let directory = FileSpinStoreTests.temporaryDirectory()
        let store = try Self.open(directory)
        for sequence in UInt64(1)...5 { try store.append([FileSpinStoreTests.record(sequence)], spin: "c0") }
        try store.append([FileSpinStoreTests.record(1)], spin: "c1")
        try store.commit(spin: "c0", sync: true)
        try store.compact(spin: "c0", snapshot: Array(#"{"sequence":4}"#.utf8), records: [FileSpinStoreTests.record(5)])
        #expect(try Self.logBytes(directory).isEmpty)
        try store.append([FileSpinStoreTests.record(6)], spin: "c0")
        try store.commit(spin: "c0", sync: true)
        store.close()
        // The new file loses what came after the compaction; the log has it, at the new offsets.
        let compacted = try #require(try DurableFiles.read("\(directory)/c0.journal"))
        var five: [UInt8] = []
        JournalRecord.append([FileSpinStoreTests.record(5)], to: &five)
        #expect(Array(compacted.prefix(five.count)) == five)
        Self.cut(directory, "c0", to: five.count)
        let again = try Self.open(directory)
        #expect(try again.read(spin: "c0", repair: false).records == [FileSpinStoreTests.record(5), FileSpinStoreTests.record(6)])
        #expect(try again.read(spin: "c1", repair: false).records == [FileSpinStoreTests.record(1)])
        again.close()
    }

    @Test func aCompactionInTwoSteps_LeavesTheTailSynced_AndTheLogEmpty() throws {
        let directory = FileSpinStoreTests.temporaryDirectory()
        let store = try Self.open(directory)
        for sequence in UInt64(1)...3 { try store.append([FileSpinStoreTests.record(sequence)], spin: "c0") }
        try store.commit(spin: "c0", sync: true)
        let cut = try #require(store.compactionCut(spin: "c0") ?? nil)
        let prepared = try store.prepareCompaction(spin: "c0", cut: cut, snapshot: Array(#"{"sequence":2}"#.utf8),
                                                   records: [FileSpinStoreTests.record(3)])
        // Meanwhile the Spin goes on, through the log.
        try store.append([FileSpinStoreTests.record(4)], spin: "c0")
        try store.commit(spin: "c0", sync: true)
        #expect(try store.finishCompaction(prepared, syncsCommits: true))
        #expect(try Self.logBytes(directory).isEmpty)
        try store.append([FileSpinStoreTests.record(5)], spin: "c0")
        try store.commit(spin: "c0", sync: true)
        store.close()
        var kept: [UInt8] = []
        JournalRecord.append([FileSpinStoreTests.record(3), FileSpinStoreTests.record(4)], to: &kept)
        Self.cut(directory, "c0", to: kept.count)
        let again = try Self.open(directory)
        #expect(try again.read(spin: "c0", repair: false).records.map(\.sequence) == [3, 4, 5])
        again.close()
    }

    @Test func aLogThatDoesNotFit_RefusesTheStart_ChangingNothing() throws {
        let directory = FileSpinStoreTests.temporaryDirectory()
        let store = try Self.open(directory)
        try store.append([FileSpinStoreTests.record(1)], spin: "c0")
        try store.append([FileSpinStoreTests.record(2)], spin: "c0")
        try store.commit(spin: "c0", sync: true)
        store.close()
        // The journal's first batch lost (as if the disk lost what the last checkpoint synced).
        let log = try Self.logBytes(directory)
        let frames = SyncLog.decode(log).frames
        #expect(frames.count == 2)
        let onlyTheSecond = SyncLogTests.log([frames[1]])
        try DurableFiles.replace("\(directory)/\(SyncLog.fileName)", with: onlyTheSecond)
        Self.cut(directory, "c0", to: 0)
        #expect {
            _ = try FileSpinStore(directory: directory, sharesSyncs: true).open()
        } throws: { error in
            "\(error)".contains(SyncLog.fileName) && "\(error)".contains("c0.journal") && "\(error)".contains("move")
        }
        #expect(try Self.logBytes(directory) == onlyTheSecond)
        #expect(try DurableFiles.read("\(directory)/c0.journal") == [])
    }

    @Test func aStoreThatSyncsEachFile_PutsTheLogBack_ThenRemovesIt() throws {
        let directory = FileSpinStoreTests.temporaryDirectory()
        let store = try Self.open(directory)
        try store.append([FileSpinStoreTests.record(1)], spin: "c2")
        try store.commit(spin: "c2", sync: true)
        store.close()
        Self.cut(directory, "c2", to: 0)
        // Restarted under `fsync: none`.
        let again = try Self.open(directory, sharesSyncs: false)
        #expect(try again.read(spin: "c2", repair: false).records == [FileSpinStoreTests.record(1)])
        #expect(!DurableFiles.exists("\(directory)/\(SyncLog.fileName)"))
        again.close()
    }
}
