import Foundation

/// The embedded storage backend: one directory of files (docs/OPERATIONS.md, "Durability").
///
/// The Spins made at run time, however many, live in one database beside the files,
/// `spins.db` (`SpinDatabase`: SQLite, in write-ahead-log mode, one sync per turn for all
/// of them). The configured Spins, a few that the config lists, each have files of their
/// own. Files, per configured Spin:
/// - `<name>.journal`: append-only records of applied events (`JournalRecord` framing),
///   every event after the snapshot's sequence, batches whole, with the Gear events each
///   batch propagated (`OutboxRecord`, records of sequence 0) in its batch;
/// - `<name>.snapshot.json`: the host's snapshot document (`{"sequence":N,"epoch":..,"state":..}`),
///   the state the journal starts from, rewritten when the journal is compacted;
/// - `<name>.epoch`: the epoch of the Spin's history;
/// - `<name>.suspended`: the host's suspension document, while the Spin is suspended;
///
/// and for the directory: `.lock` (one server per directory, `flock`), `.clean`,
/// present only while no server runs and the last one stopped cleanly, and `spins.db`
/// (with `spins.db-wal`, its log). A directory of the release before kept the made Spins
/// in files too, listed in `spins.catalog` (`SpinCatalogFile`): the first start moves
/// them into the database (`madeSpins`).
///
/// Durability: `commit(sync: true)` is `fdatasync` of the journal file, or, when syncs are
/// shared (`sharesSyncs`: `storage.fsync` `always` and `batch`), of `journals.log`, one
/// log for every configured Spin (`SyncLog`: one sync for all the Spins a turn wrote;
/// the journal files are synced at checkpoints, and a start after a crash puts what the
/// log holds back into them). Snapshots, epochs and compacted journals are written
/// beside the old file, synced and renamed over it (`DurableFiles.replace`). Every name
/// created, renamed or removed (and every directory created) is synced into its
/// directory before anything that depends on it is acknowledged
/// (`DurableFiles.fsyncDirectory`).
package final class FileSpinStore: SpinStore, @unchecked Sendable {
    // The journals and the lock are confined to the host journal's serial section (or to
    // start-up, before any Spin runs); the suspension methods touch only their own files.
    package let directory: String
    /// Appends go to files (the page cache): quick enough for a network thread.
    package var writesLocally: Bool { true }
    private var lock: DirectoryLock?
    private var journals: [String: JournalFile] = [:]
    /// The Spins made at run time.
    private let database: SpinDatabase
    /// The history kept beside the journals (`storage.history` days or all).
    private let historyDatabase: HistoryDatabase
    /// Reused for the bytes of each row appended to the database.
    private var rowBuffer: [UInt8] = []
    /// How many made Spins the last `madeSpins` moved from the files of an older release
    /// into the database (for the log).
    package private(set) var migratedSpins = 0

    // The shared sync log (`SyncLog`), when `sharesSyncs`.
    /// Whether synced commits of the journal files go through `journals.log`.
    package let sharesSyncs: Bool
    private var log: AppendOnlyFile?
    /// Bytes in the log now, and the frames written to it since it was last emptied.
    private var logBytes = 0
    private var logFrames: UInt64 = 0
    /// Counts the writes to the log (never reset): a journal whose batches the write
    /// numbered `n` took is durable once `logSynced >= n`.
    private var logWrites: UInt64 = 0
    private var logSynced: UInt64 = 0
    /// Journals with batches staged for the log's next write.
    private var logPending: [JournalFile] = []
    /// Reused for the bytes of each write to the log.
    private var logScratch: [UInt8] = []
    /// A write or sync of the log failed: no commit is synced through it until a
    /// checkpoint (`reopen`) has made the journal files durable and emptied it.
    private var logFailure: FileError?
    /// A compaction renamed a journal and its directory was not synced: before the log is.
    private var directoryUnsynced = false
    /// Journals written since the last checkpoint (their files to sync at the next), and
    /// released ones whose files could not be synced.
    private var unsyncedFiles: [JournalFile] = []
    private var releasedUnsynced: [JournalFile] = []
    /// The log's size that starts a checkpoint; raised after one that failed.
    package var checkpointBytes = 64 << 20 {
        didSet { checkpointAt = checkpointBytes }
    }
    private var checkpointAt = 64 << 20
    /// What the last `open` put back from a log a crash left (nil: none was there).
    package private(set) var recoveredLog: RecoveredLog?
    package struct RecoveredLog: Sendable {
        /// The frames read, the Spins they name, those whose files lacked some of them.
        package var frames: Int
        package var spins: Set<String>
        package var extended: [String]
        /// The log's torn tail (never synced, never acknowledged).
        package var tornBytes: Int
    }
    /// Whether the last server stopped cleanly (`open`): else a journal file may hold
    /// bytes only the page cache had (a `kill -9`), which `startJournal` syncs.
    private var openedClean = false

    /// One Spin's open journal.
    private final class JournalFile {
        let spin: String
        var file: AppendOnlyFile
        /// Bytes in the file, and how many of them were committed.
        var length: Int
        var committedLength: Int
        /// Reused for the bytes of each batch (written with one `write`).
        var buffer: [UInt8] = []
        /// A compaction may have renamed a new journal over this one and the new file
        /// could not be opened: `file` may be the removed one. Nothing is written or
        /// committed until `reopen` opens the file at the path again.
        var stale = false
        /// Counts the files this journal had: a compaction prepared for one file
        /// (`PreparedCompaction`) is not finished on another.
        var generation = 0
        /// A compaction renamed a new file over the journal and the directory was not
        /// synced since: the next sync syncs it too (see `finishCompaction`).
        var renameUnsynced = false
        /// Bytes of the file known to be on stable storage (`sharesSyncs`).
        var syncedLength: Int
        /// Batches appended and not in the log yet (`sharesSyncs`), each as its offset in
        /// the file (UInt64 LE), its length (UInt32 LE) and its bytes.
        var staged: [UInt8] = []
        /// In `logPending`; in `unsyncedFiles`.
        var pending = false
        var unsynced = false
        /// The write to the log (`logWrites`) that took its last batches.
        var logged: UInt64 = 0

        init(spin: String, file: AppendOnlyFile, length: Int) {
            self.spin = spin
            self.file = file
            self.length = length
            self.committedLength = length
            self.syncedLength = length
        }
    }

    /// - Parameter sharesSyncs: synced commits of the configured Spins' journal files go
    ///   through one log (`SyncLog`); the server's choice under `storage.fsync` `always`
    ///   and `batch`. A log left by a crash is put back into the files at `open` either way.
    package init(directory: String, sharesSyncs: Bool = false) {
        self.directory = directory
        self.database = SpinDatabase(directory: directory)
        self.historyDatabase = HistoryDatabase(directory: directory)
        self.sharesSyncs = sharesSyncs
    }

    package var location: String { "storage directory \(directory)" }

    private func journalPath(_ spin: String) -> String { "\(directory)/\(spin).journal" }

    /// The journal file's path, or where the database keeps the journal of a made Spin.
    package func journalName(of spin: String) -> String {
        database.holds(spin) ? database.journalName(of: spin) : journalPath(spin)
    }
    private func snapshotPath(_ spin: String) -> String { "\(directory)/\(spin).snapshot.json" }
    private func epochPath(_ spin: String) -> String { "\(directory)/\(spin).epoch" }
    private func suspensionPath(_ spin: String) -> String { "\(directory)/\(spin).suspended" }
    private var cleanPath: String { "\(directory)/.clean" }
    private var logPath: String { "\(directory)/\(SyncLog.fileName)" }

    // MARK: Opening and recovery

    /// Creates the directory if missing (each level synced into its parent), takes its
    /// lock, opens the made Spins' database and tells whether `.clean` was there.
    package func open() throws -> Bool {
        try DurableFiles.createDirectories(directory)
        do {
            lock = try DirectoryLock(directory: directory)
        } catch {
            throw OpenFailure(directory: directory, reason: error)
        }
        do {
            try database.open()
            try recoverLog()
        } catch {
            log = nil
            try? database.close()
            lock?.unlock()
            lock = nil
            throw error
        }
        openedClean = DurableFiles.exists(cleanPath)
        return openedClean
    }

    /// Puts what `journals.log` holds back into the journal files (`SyncLog.reconcile`),
    /// syncs every file it names and empties it; then opens it when syncs are shared, and
    /// removes it when they are not. Refuses, changing nothing, when the log is corrupt
    /// or does not fit a journal file: it may hold acknowledged events.
    private func recoverLog() throws {
        recoveredLog = nil
        if let bytes = try DurableFiles.read(logPath), !bytes.isEmpty {
            let decoded = SyncLog.decode(bytes)
            if let damage = decoded.damage, damage.kind == .corruption {
                throw SyncLogDamaged(path: logPath, problem: "\(damage)")
            }
            var order: [String] = []
            var frames: [String: [SyncLog.Frame]] = [:]
            for frame in decoded.frames {
                if frames[frame.spin] == nil { order.append(frame.spin) }
                frames[frame.spin, default: []].append(frame)
            }
            // Everything is checked before anything is written.
            var plans: [(String, SyncLog.Reconciled)] = []
            for spin in order {
                let plan = SyncLog.reconcile(file: try DurableFiles.read(journalPath(spin)) ?? [], frames: frames[spin] ?? [])
                if case .mismatch(let reason) = plan {
                    throw SyncLogDamaged(path: logPath, problem: "it does not fit \(journalPath(spin)) (Spin \(spin)): \(reason)")
                }
                plans.append((spin, plan))
            }
            var recovered = RecoveredLog(frames: decoded.frames.count, spins: Set(order), extended: [],
                                         tornBytes: decoded.damage?.bytesAfter ?? 0)
            for (spin, plan) in plans {
                let file = try AppendOnlyFile(path: journalPath(spin))
                if case .extend(let cut, let bytes) = plan {
                    try file.truncate(to: cut)
                    try file.append(bytes)
                    recovered.extended.append(spin)
                }
                // Also when it held everything: after a `kill -9` only the page cache may.
                try file.sync()
            }
            try DurableFiles.fsyncDirectory(directory)
            let emptied = try AppendOnlyFile(path: logPath)
            try emptied.truncate(to: 0)
            try emptied.sync()
            recoveredLog = recovered
        }
        if sharesSyncs {
            let existed = DurableFiles.exists(logPath)
            log = try AppendOnlyFile(path: logPath)
            if !existed { try DurableFiles.fsyncDirectory(directory) }
        } else if DurableFiles.exists(logPath) {
            try DurableFiles.remove(logPath)
        }
    }

    /// `journals.log` is damaged, or does not fit a journal file: it may hold acknowledged
    /// events that the journal files lack.
    package struct SyncLogDamaged: Error, CustomStringConvertible {
        package let path: String
        package let problem: String
        package var description: String {
            """
            \(path): \(problem). It holds the batches the configured Spins' journals got since they \
            were last synced, and nothing was changed. Restore the storage directory from a backup, or \
            move \(path) aside to start without it (the events only it holds are then lost)
            """
        }
    }

    /// The directory's lock could not be taken.
    package struct OpenFailure: Error, CustomStringConvertible {
        package let directory: String
        package let reason: DirectoryLock.Failure

        package var description: String { "storage directory \(directory): \(reason)" }
    }

    package func read(spin: String, repair: Bool) throws -> StoredSpin {
        if database.holds(spin) { return try database.read(spin: spin, repair: repair) }
        let decoded = JournalRecord.decode(try DurableFiles.read(journalPath(spin)) ?? [])
        if let damage = decoded.damage, damage.kind == .corruption, !repair {
            throw JournalCorruption(spin: spin, journal: journalPath(spin), damage: damage,
                                    intactThrough: decoded.records.last?.sequence)
        }
        let epoch = try DurableFiles.read(epochPath(spin)).map { String(decoding: $0, as: UTF8.self) }
        let (records, outbox) = try StoredSpin.separating(decoded.records, journal: journalPath(spin))
        return StoredSpin(snapshot: try DurableFiles.read(snapshotPath(spin)), records: records,
                          epoch: epoch, damage: decoded.damage, outbox: outbox)
    }

    /// The journal's name is synced into the directory (it may have just been created):
    /// syncing its records later would not make a name that vanished survive.
    package func startJournal(spin: String, cuttingAt damage: JournalRecord.Damage?) throws {
        if database.holds(spin) { return try database.startJournal(spin: spin, cuttingAt: damage) }
        let file = try AppendOnlyFile(path: journalPath(spin))
        if let damage {
            try file.truncate(to: damage.offset)
            try file.sync()
        } else if sharesSyncs && !openedClean, recoveredLog?.spins.contains(spin) != true, try file.size() > 0 {
            // What a `kill -9` left in the page cache only: on disk before anything the
            // log acknowledges after it (the log's batches must continue durable bytes).
            // An empty file (a new directory's) holds nothing to sync, and `recoverLog`
            // synced those the log named.
            try file.sync()
        }
        try DurableFiles.fsyncDirectory(directory)
        journals[spin] = JournalFile(spin: spin, file: file, length: try file.size())
    }

    package func writeEpoch(_ epoch: String, spin: String) throws {
        if database.holds(spin) { return try database.writeEpoch(epoch, spin: spin) }
        try DurableFiles.replace(epochPath(spin), with: Array(epoch.utf8))
    }

    /// Removes `.clean`: until `markClean`, this directory is in use.
    package func markInUse() throws {
        try DurableFiles.remove(cleanPath)
    }

    // MARK: Writing

    package func append(_ batch: [JournalRecord.Record], spin: String) throws {
        guard let journal = journals[spin] else { return try database.append(batch, spin: spin, buffer: &rowBuffer) }
        if journal.stale { throw StaleJournal(path: journalPath(spin)) }
        journal.buffer.removeAll(keepingCapacity: true)
        JournalRecord.append(batch, to: &journal.buffer)
        try journal.file.append(journal.buffer)
        if sharesSyncs { stage(journal.buffer, at: journal.length, of: journal) }
        journal.length += journal.buffer.count
    }

    package func commit(spin: String, sync: Bool) throws {
        guard let journal = journals[spin] else { return try database.commit(spin: spin, sync: sync) }
        if journal.stale { throw StaleJournal(path: journalPath(spin)) }
        if sync && sharesSyncs {
            try syncThroughLog(journal)
        } else if sync {
            try journal.file.sync()
            if journal.renameUnsynced {
                try DurableFiles.fsyncDirectory(directory)
                journal.renameUnsynced = false
            }
        }
        journal.committedLength = journal.length
        if sharesSyncs && logBytes >= checkpointAt {
            // The commit is durable already: a checkpoint that fails is tried again later.
            do {
                try checkpoint()
            } catch {
                checkpointAt = logBytes + checkpointBytes
            }
        }
    }

    // MARK: The shared sync log

    /// Stages a batch appended at `offset` of the journal's file for the log.
    private func stage(_ batch: [UInt8], at offset: Int, of journal: JournalFile) {
        withUnsafeBytes(of: UInt64(offset).littleEndian) { journal.staged += $0 }
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: batch.count).littleEndian) { journal.staged += $0 }
        journal.staged += batch
        if !journal.pending {
            journal.pending = true
            logPending.append(journal)
        }
        if !journal.unsynced {
            journal.unsynced = true
            unsyncedFiles.append(journal)
        }
    }

    /// Makes what `journal` appended durable through the log: the staged batches of every
    /// journal written in one write, then one sync, unless an earlier one covered it.
    private func syncThroughLog(_ journal: JournalFile) throws {
        guard let log else { return try journal.file.sync() }
        if let logFailure { throw logFailure }
        if !journal.staged.isEmpty {
            if directoryUnsynced {
                do {
                    try DurableFiles.fsyncDirectory(directory)
                } catch {
                    logFailure = error
                    throw error
                }
                directoryUnsynced = false
            }
            logScratch.removeAll(keepingCapacity: true)
            for pending in logPending { appendFrames(of: pending) }
            do {
                try log.append(logScratch)
            } catch {
                logFailure = error
                throw error
            }
            logBytes += logScratch.count
            logWrites += 1
            // A burst's buffer is not kept for the quiet that follows.
            if logScratch.capacity > 1 << 22 { logScratch = [] }
            for pending in logPending {
                if !pending.staged.isEmpty { pending.logged = logWrites }
                pending.pending = false
                pending.staged.removeAll(keepingCapacity: pending.staged.capacity <= 1 << 16)
            }
            logPending.removeAll(keepingCapacity: true)
        }
        guard journal.logged > logSynced else { return }
        do {
            try log.sync()
        } catch {
            logFailure = error
            throw error
        }
        logSynced = logWrites
    }

    /// Encodes the journal's staged batches as frames into `logScratch`.
    private func appendFrames(of journal: JournalFile) {
        let staged = journal.staged
        var index = staged.startIndex
        while index + 12 <= staged.count {
            let offset = JournalRecord.readUInt64(staged, at: index)
            let start = index + 12
            let end = start + Int(JournalRecord.readUInt32(staged, at: index + 8))
            logFrames = SyncLog.appendFrames(spin: journal.spin, offset: Int(offset), records: staged[start..<end],
                                             numberedAfter: logFrames, to: &logScratch)
            index = end
        }
    }

    /// Syncs every journal file written since the last checkpoint and empties the log:
    /// what it held is in durable files now. In the section.
    private func checkpoint() throws {
        guard let log else { return }
        // Journals only this server's `unsyncedFiles` names: in the file it has open (a
        // journal retired or replaced since is synced by `release`, or gone).
        while let journal = unsyncedFiles.last {
            if !journal.stale, journal.syncedLength < journal.length, journals[journal.spin] === journal {
                try journal.file.sync()
                journal.syncedLength = journal.length
            }
            journal.unsynced = false
            unsyncedFiles.removeLast()
        }
        while let released = releasedUnsynced.last {
            try released.file.sync()
            releasedUnsynced.removeLast()
        }
        if directoryUnsynced {
            try DurableFiles.fsyncDirectory(directory)
            directoryUnsynced = false
        }
        try log.truncate(to: 0)
        try log.sync()
        logBytes = 0
        logFrames = 0
        checkpointAt = checkpointBytes
        logFailure = nil
        // Batches staged and not written to the log are in the synced files too.
        for pending in logPending {
            pending.pending = false
            pending.staged.removeAll()
        }
        logPending.removeAll()
        logSynced = logWrites
    }

    /// Both are written beside the old files and renamed over them; recovery skips records
    /// the snapshot covers, so a crash between the two renames is harmless.
    package func compact(spin: String, snapshot: [UInt8], records: [JournalRecord.Record]) throws {
        guard let journal = journals[spin] else { return try database.compact(spin: spin, snapshot: snapshot, records: records) }
        // The log's batches of this Spin name offsets in the file about to be replaced:
        // they go first, into synced files.
        if sharesSyncs { try checkpoint() }
        do {
            try DurableFiles.replace(snapshotPath(spin), with: snapshot)
            var bytes: [UInt8] = []
            JournalRecord.append(records, to: &bytes)
            try DurableFiles.replace(journalPath(spin), with: bytes)
            journal.file = try AppendOnlyFile(path: journalPath(spin))
            journal.length = bytes.count
            journal.committedLength = bytes.count
            journal.syncedLength = bytes.count
            journal.generation += 1
        } catch {
            // The old journal is intact unless the rename happened; either way what was
            // durable stays durable. The journal at the path is opened again; if even that
            // fails, the open file may be the one the rename removed: writing on into it
            // would acknowledge events no restart finds, so the journal takes no more
            // writes (the next one fails, the Spin is held) until `reopen`.
            reopenAfterFailedCompaction(journal, spin: spin)
            throw error
        }
    }

    private func reopenAfterFailedCompaction(_ journal: JournalFile, spin: String) {
        journal.generation += 1
        if let reopened = try? AppendOnlyFile(path: journalPath(spin)), let size = try? reopened.size() {
            journal.file = reopened
            journal.length = size
            journal.committedLength = size
            journal.syncedLength = min(journal.syncedLength, size)
        } else {
            journal.stale = true
        }
    }

    // MARK: Compaction off the journal's section

    /// A compaction of a configured Spin's journal in two steps, so that the slow part
    /// (encoding, writing and syncing the new files) holds nobody up: `prepareCompaction`,
    /// on any thread while the journal goes on being appended to, replaces the snapshot
    /// and writes and syncs the new journal beside the old one; `finishCompaction`, in
    /// the journal's section, appends what the old journal got since, renames the new one
    /// over it and writes on there. A crash at any point leaves a snapshot and a journal
    /// that fit, as with `compact`: until the rename, the old journal holds every record
    /// after the new snapshot (recovery skips those the snapshot covers).
    package struct PreparedCompaction: @unchecked Sendable {
        package let spin: String
        /// The journal's file and length when it was planned (`compactionCut`).
        let generation: Int
        let cut: Int
        /// The new journal (at `path.tmp`), written and synced, and its length.
        let file: AppendOnlyFile
        let length: Int
    }

    /// Where a compaction of `spin`'s journal starts: nil when the Spin has no journal
    /// file of its own (a made Spin's journal is in the database: `compact`), `.some(nil)`
    /// when it cannot start now (something appended is not committed, or the file is
    /// stale). In the section.
    package func compactionCut(spin: String) -> (generation: Int, length: Int)?? {
        guard journals[spin] != nil else { return .none }
        guard let journal = journals[spin], !journal.stale, journal.length == journal.committedLength else { return .some(nil) }
        return .some((journal.generation, journal.length))
    }

    /// Replaces the snapshot, and writes and syncs the new journal (`records`) beside the
    /// old one. Off the section: it touches the two files and nothing of the store's.
    package func prepareCompaction(spin: String, cut: (generation: Int, length: Int), snapshot: [UInt8],
                                   records: [JournalRecord.Record]) throws -> PreparedCompaction {
        try DurableFiles.replace(snapshotPath(spin), with: snapshot)
        var bytes: [UInt8] = []
        JournalRecord.append(records, to: &bytes)
        let file = try AppendOnlyFile(path: journalPath(spin) + ".tmp")
        try file.truncate(to: 0)
        try file.append(bytes)
        try file.sync()
        return PreparedCompaction(spin: spin, generation: cut.generation, cut: cut.length, file: file, length: bytes.count)
    }

    /// Appends to the prepared journal what the old one got since the cut (synced first
    /// when some of it was already synced: `syncsCommits`), renames it over the old one
    /// and appends there from now on. The rename reaches the disk with the directory's
    /// next sync: the next `commit(sync: true)` syncs the directory as well, so nothing
    /// written to the new file is acknowledged as synced before its name is, and
    /// `syncDirectory` does it at once. False when the journal changed meanwhile (a
    /// failure, a reopening, the store closed): the prepared file is removed and the old
    /// journal stays. In the section.
    package func finishCompaction(_ prepared: PreparedCompaction, syncsCommits: Bool) throws -> Bool {
        let spin = prepared.spin
        let temporary = journalPath(spin) + ".tmp"
        guard let journal = journals[spin], !journal.stale, journal.generation == prepared.generation,
              journal.length >= prepared.cut else {
            unlink(temporary)
            return false
        }
        do {
            // With a shared log: its batches name offsets in the old file, so they go
            // first (into synced files), and the new file holds the tail synced.
            if sharesSyncs { try checkpoint() }
            let tail = try DurableFiles.read(journalPath(spin), from: prepared.cut, to: journal.length)
            if !tail.isEmpty {
                try prepared.file.append(tail)
                if sharesSyncs || (syncsCommits && journal.committedLength > prepared.cut) { try prepared.file.sync() }
            }
            guard rename(temporary, journalPath(spin)) == 0 else {
                throw FileError(path: journalPath(spin), call: "rename", errno: errno)
            }
        } catch {
            unlink(temporary)
            throw error
        }
        if sharesSyncs {
            // Durable before the log holds any batch at the new file's offsets (a crash
            // must never find such batches beside the old file). If this fails, before
            // the log's next write.
            do {
                try DurableFiles.fsyncDirectory(directory)
            } catch {
                directoryUnsynced = true
            }
        } else {
            journal.renameUnsynced = true
        }
        do {
            journal.file = try AppendOnlyFile(path: journalPath(spin))
        } catch {
            // As in `compact`: the file at the path is the new one, and could not be opened.
            reopenAfterFailedCompaction(journal, spin: spin)
            throw error
        }
        journal.generation += 1
        journal.committedLength = prepared.length + (journal.committedLength - prepared.cut)
        journal.length = prepared.length + (journal.length - prepared.cut)
        journal.syncedLength = sharesSyncs ? journal.length : 0
        return true
    }

    /// Syncs the directory (a compaction's rename). On any thread.
    package func syncDirectory() throws {
        try DurableFiles.fsyncDirectory(directory)
    }

    /// The journal was left unusable by a failed compaction (see `compact`).
    package struct StaleJournal: Error, CustomStringConvertible {
        package let path: String
        package var description: String { "\(path) could not be opened again after a compaction" }
    }

    // MARK: Failures

    package func discardUncommitted(spin: String) {
        guard let journal = journals[spin] else { return database.discardUncommitted(spin: spin) }
        // Never to the log: what it stages is not committed.
        journal.staged.removeAll()
        guard !journal.stale else { return }
        try? journal.file.truncate(to: journal.committedLength)
        journal.length = journal.committedLength
        journal.syncedLength = min(journal.syncedLength, journal.length)
    }

    /// Writes and syncs a scratch file (`DurableFiles.probe`).
    package func probe() throws {
        try DurableFiles.probe(directory: directory)
    }

    @discardableResult
    package func reopen(spin: String) throws -> UInt64? {
        guard let journal = journals[spin] else {
            try database.reopen(spin: spin)
            return nil
        }
        let file = try AppendOnlyFile(path: journalPath(spin))
        journal.generation += 1
        if journal.stale {
            // The file at the path is what the compaction wrote (renamed in whole and
            // synced): all of it is committed. Never truncate it to the old file's length.
            journal.committedLength = try file.size()
            journal.stale = false
        } else if try file.size() != journal.committedLength {
            try file.truncate(to: journal.committedLength)
        }
        try file.sync()
        journal.file = file
        journal.length = journal.committedLength
        journal.syncedLength = journal.length
        // The log may hold batches this Spin discarded, or be the write that failed:
        // from a checkpoint, it holds neither.
        if sharesSyncs { try checkpoint() }
        return nil
    }

    // MARK: Closing

    package func markClean() throws {
        if sharesSyncs { try checkpoint() }
        try database.sync()
        try DurableFiles.replace(cleanPath, with: Array("clean\n".utf8))
    }

    package func close() {
        journals = [:]
        logPending = []
        unsyncedFiles = []
        releasedUnsynced = []
        log = nil
        try? database.close()
        historyDatabase.close()
        lock?.unlock()
        lock = nil
    }

    /// Closes the journal's file (a sleeping Spin holds no descriptor), or forgets the
    /// made Spin's open journal.
    package func release(spin: String) {
        guard let journal = journals.removeValue(forKey: spin) else { return database.release(spin: spin) }
        // The log may hold its last batches: the next checkpoint empties it, so the file
        // is synced now (or by that checkpoint).
        if sharesSyncs, !journal.stale, journal.syncedLength < journal.length {
            do {
                try journal.file.sync()
            } catch {
                releasedUnsynced.append(journal)
            }
        }
    }

    // MARK: Spins made at run time

    /// The made Spins in the database that do not rest, and those of `kinds`. A directory
    /// of the release before (`spins.catalog` and files per made Spin) is moved in first:
    /// every Spin the catalog lists, with its snapshot, epoch, suspension and the whole
    /// batches of its journal (a torn tail is cut, corruption refuses unless `repair`, as
    /// at recovery), in one transaction, synced; then its files and the catalog are
    /// removed. A crash in the middle leaves the files, and the next start moves what the
    /// database does not hold yet.
    package func madeSpins(repair: Bool, including kinds: Set<String> = []) throws -> [String: MadeSpin] {
        migratedSpins = 0
        let catalogPath = "\(directory)/spins.catalog"
        if DurableFiles.exists(catalogPath) {
            let catalog = try SpinCatalogFile(directory: directory, repair: repair)
            for (name, spin) in catalog.made.sorted(by: { $0.key < $1.key }) where !database.holds(name) {
                let decoded = JournalRecord.decode(try DurableFiles.read(journalPath(name)) ?? [])
                if let damage = decoded.damage, damage.kind == .corruption, !repair {
                    throw JournalCorruption(spin: name, journal: journalPath(name), damage: damage,
                                            intactThrough: decoded.records.last?.sequence)
                }
                let epoch = try DurableFiles.read(epochPath(name)).map { String(decoding: $0, as: UTF8.self) }
                try database.importSpin(name, spin, epoch: epoch ?? String(UInt64.random(in: 1...UInt64.max), radix: 36),
                                        snapshot: try DurableFiles.read(snapshotPath(name)), records: decoded.records,
                                        suspension: try DurableFiles.read(suspensionPath(name)))
                migratedSpins += 1
            }
            try database.sync()
            for name in catalog.made.keys.sorted() + catalog.deleted.sorted() { try removeFiles(of: name) }
            try DurableFiles.remove(catalogPath)
            try? DurableFiles.remove(catalogPath + ".tmp")
        }
        return try database.madeSpins(including: kinds)
    }

    package func madeSpin(named name: String) throws -> MadeSpin? { try database.madeSpin(named: name) }

    package func madeSpinCounts() throws -> [String: Int] { try database.madeSpinCounts() }

    package func madeSpins(prefix: String, after: String?, limit: Int) throws -> [(name: String, kind: String, sequence: UInt64)] {
        try database.madeSpins(prefix: prefix, after: after, limit: limit)
    }

    /// Records the Spins in the database, each with its epoch: durable on return, all or none.
    package func make(_ spins: [(name: String, spin: MadeSpin, epoch: String)]) throws {
        try database.make(spins)
    }

    // MARK: Definitions

    /// `definitions/<name>.v<version>.json`, the name with every byte but letters, digits,
    /// `.`, `_` and `-` written `%XX`.
    private var definitionsPath: String { "\(directory)/definitions" }

    private static let definitionFileCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")

    private func definitionFile(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: Self.definitionFileCharacters) ?? name
    }

    package func definitions(named name: String) throws -> [Int: [UInt8]] {
        let prefix = definitionFile(name) + ".v"
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: definitionsPath)
        } catch CocoaError.fileReadNoSuchFile {
            return [:]
        }
        var found: [Int: [UInt8]] = [:]
        for file in files where file.hasPrefix(prefix) && file.hasSuffix(".json") {
            let digits = file.dropFirst(prefix.count).dropLast(".json".count)
            guard let version = Int(digits), version >= 1, String(version) == digits else { continue }
            found[version] = try DurableFiles.read("\(definitionsPath)/\(file)")
        }
        return found
    }

    package func storeDefinition(_ source: [UInt8], named name: String, version: Int) throws {
        try DurableFiles.createDirectories(definitionsPath)
        try DurableFiles.replace("\(definitionsPath)/\(definitionFile(name)).v\(version).json", with: source)
    }

    /// Marks the made Spin resting in the database (configured Spins never sleep).
    package func rest(_ spin: String, sequence: UInt64, consumed: [String: UInt64]) throws {
        try database.rest(spin, sequence: sequence, consumed: consumed)
    }

    /// Removes the Spin's history, then its row and journal from the database: durable on
    /// return. (A crash between the two leaves the Spin without its older history, never
    /// a Spin made again later with the history of this one.)
    package func delete(_ name: String) throws {
        try historyDatabase.delete(spin: name)
        try database.delete(name)
    }

    // MARK: History

    package func archive(_ segments: [HistorySegment], spin: String) throws {
        try historyDatabase.archive(segments, spin: spin)
    }

    package func history(of spin: String, from sequence: UInt64, limit: Int) throws -> [HistorySegment] {
        try historyDatabase.history(of: spin, from: sequence, limit: limit)
    }

    package func archived(spin: String) throws -> ClosedRange<UInt64>? {
        try historyDatabase.archived(spin: spin)
    }

    package func trimHistory(before time: Int64) throws -> Int {
        try historyDatabase.trim(before: time)
    }

    /// The files a made Spin of an older release had.
    private func removeFiles(of name: String) throws {
        for path in [journalPath(name), snapshotPath(name), epochPath(name), suspensionPath(name)]
        where DurableFiles.exists(path) || DurableFiles.exists(path + ".tmp") {
            try? DurableFiles.remove(path + ".tmp")
            try DurableFiles.remove(path)
        }
    }

    // MARK: Suspensions

    package func suspension(of spin: String) throws -> [UInt8]? {
        if database.holds(spin) { return try database.suspension(of: spin) }
        return try DurableFiles.read(suspensionPath(spin))
    }

    package func storeSuspension(_ document: [UInt8], of spin: String) throws {
        if database.holds(spin) { return try database.storeSuspension(document, of: spin) }
        try DurableFiles.replace(suspensionPath(spin), with: document)
    }

    package func removeSuspension(of spin: String) {
        if database.holds(spin) { return (try? database.storeSuspension(nil, of: spin)) ?? () }
        try? DurableFiles.remove(suspensionPath(spin))
    }
}
