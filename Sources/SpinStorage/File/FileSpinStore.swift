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
/// Durability: `commit(sync: true)` is `fdatasync`; snapshots, epochs and compacted
/// journals are written beside the old file, synced and renamed over it
/// (`DurableFiles.replace`). Every name created, renamed or removed (and every directory
/// created) is synced into its directory before anything that depends on it is
/// acknowledged (`DurableFiles.fsyncDirectory`).
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
    /// Reused for the bytes of each row appended to the database.
    private var rowBuffer: [UInt8] = []
    /// How many made Spins the last `madeSpins` moved from the files of an older release
    /// into the database (for the log).
    package private(set) var migratedSpins = 0

    /// One Spin's open journal.
    private final class JournalFile {
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

        init(file: AppendOnlyFile, length: Int) {
            self.file = file
            self.length = length
            self.committedLength = length
        }
    }

    package init(directory: String) {
        self.directory = directory
        self.database = SpinDatabase(directory: directory)
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
        } catch {
            lock?.unlock()
            lock = nil
            throw error
        }
        return DurableFiles.exists(cleanPath)
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
        }
        try DurableFiles.fsyncDirectory(directory)
        journals[spin] = JournalFile(file: file, length: try file.size())
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
        journal.length += journal.buffer.count
    }

    package func commit(spin: String, sync: Bool) throws {
        guard let journal = journals[spin] else { return try database.commit(spin: spin, sync: sync) }
        if journal.stale { throw StaleJournal(path: journalPath(spin)) }
        if sync {
            try journal.file.sync()
            if journal.renameUnsynced {
                try DurableFiles.fsyncDirectory(directory)
                journal.renameUnsynced = false
            }
        }
        journal.committedLength = journal.length
    }

    /// Both are written beside the old files and renamed over them; recovery skips records
    /// the snapshot covers, so a crash between the two renames is harmless.
    package func compact(spin: String, snapshot: [UInt8], records: [JournalRecord.Record]) throws {
        guard let journal = journals[spin] else { return try database.compact(spin: spin, snapshot: snapshot, records: records) }
        do {
            try DurableFiles.replace(snapshotPath(spin), with: snapshot)
            var bytes: [UInt8] = []
            JournalRecord.append(records, to: &bytes)
            try DurableFiles.replace(journalPath(spin), with: bytes)
            journal.file = try AppendOnlyFile(path: journalPath(spin))
            journal.length = bytes.count
            journal.committedLength = bytes.count
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
            let tail = try DurableFiles.read(journalPath(spin), from: prepared.cut, to: journal.length)
            if !tail.isEmpty {
                try prepared.file.append(tail)
                if syncsCommits && journal.committedLength > prepared.cut { try prepared.file.sync() }
            }
            guard rename(temporary, journalPath(spin)) == 0 else {
                throw FileError(path: journalPath(spin), call: "rename", errno: errno)
            }
        } catch {
            unlink(temporary)
            throw error
        }
        journal.renameUnsynced = true
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
        guard !journal.stale else { return }
        try? journal.file.truncate(to: journal.committedLength)
        journal.length = journal.committedLength
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
        return nil
    }

    // MARK: Closing

    package func markClean() throws {
        try database.sync()
        try DurableFiles.replace(cleanPath, with: Array("clean\n".utf8))
    }

    package func close() {
        journals = [:]
        try? database.close()
        lock?.unlock()
        lock = nil
    }

    /// Closes the journal's file (a sleeping Spin holds no descriptor), or forgets the
    /// made Spin's open journal.
    package func release(spin: String) {
        if journals.removeValue(forKey: spin) == nil { database.release(spin: spin) }
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

    /// Marks the made Spin resting in the database (configured Spins never sleep).
    package func rest(_ spin: String, sequence: UInt64, consumed: [String: UInt64]) throws {
        try database.rest(spin, sequence: sequence, consumed: consumed)
    }

    /// Removes the Spin's row and journal from the database: durable on return.
    package func delete(_ name: String) throws {
        try database.delete(name)
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
