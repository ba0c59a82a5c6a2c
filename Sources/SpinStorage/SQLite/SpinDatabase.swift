import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a storage directory keeps the Spins made at run time: one SQLite database,
/// `spins.db`, in write-ahead-log mode, however many Spins there are (`FileSpinStore`
/// keeps the configured Spins in files of their own beside it). Two tables:
/// - `spins`: a row per Spin made (`name`, `kind`, `joined`, `outbox_base`: its
///   `MadeSpin`; its `epoch`, `snapshot` and `suspension` documents; `resting`, with the
///   `sequence` and `consumed` positions it rests at, while it sleeps and a start may
///   host it asleep without reading its journal);
/// - `batches`: a Spin's journal, a row per append (`spin`, `n` counting 1, 2, …;
///   `records`: whole batches in `JournalRecord` framing, outbox records among them, so
///   that a row whose checksum fails is found and named like a damaged journal file).
///
/// **One commit for many Spins.** Every write goes into the one open transaction; a
/// `commit` commits it (whichever Spin asks, every Spin that wrote shares it) and, with
/// `sync`, waits for the log with `fdatasync`: under `storage.fsync: batch` one sync per
/// turn covers every Spin that wrote in it, as one file would. SQLite runs with
/// `synchronous=NORMAL` (the log synced before each checkpoint, the database after it):
/// a commit's durability is this type's own sync of the log, never left to chance.
/// `locking_mode=EXCLUSIVE`: no `-shm` file, and no other process opens the database
/// while a server runs (the directory's lock says so too).
///
/// **Failures.** A write or commit that fails rolls the transaction back: every Spin that
/// had rows in it is *in doubt*, and its next `commit` throws, so its journal fails, is
/// rolled back and held like a file journal, and `discardUncommitted`/`reopen` remove its
/// rows beyond what was durable. A failed sync leaves the same Spins in doubt.
///
/// Thread-safe (a lock): the journal's serial section calls everything but the
/// suspension methods, which come from any thread.
package final class SpinDatabase: @unchecked Sendable {
    package let path: String
    private let lock = NSLock()
    private var connection: SQLiteConnection?
    private var statements: Statements?
    /// The write-ahead log, opened by this type to sync it (`-1` until the first sync).
    private var log: Int32 = -1
    /// Committed transactions not synced yet.
    private var logUnsynced = false
    /// The open journals: the next row's `n`, and the last `n` that is durable.
    private var journals: [String: Rows] = [:]
    /// Spins with rows written since the last sync (or commit without sync).
    private var unsynced: Set<String> = []
    /// Spins whose rows beyond their durable ones a failure may have lost (see above).
    private var doubtful: Set<String> = []

    private struct Rows {
        var next: Int64
        var durable: Int64
    }

    /// The schema this release writes. A database of a higher version is refused.
    package static let schemaVersion = 1
    package static let fileName = "spins.db"

    private final class Statements {
        let begin, commit, rollback: SQLiteStatement
        let insertSpin, selectSpins, selectAwake, selectMade, countSpins, pageSpins: SQLiteStatement
        let selectSpin, holds, deleteSpin, setResting, wakeSpin: SQLiteStatement
        let setEpoch, setSnapshot, setSuspension, selectSuspension: SQLiteStatement
        let insertBatch, selectBatches, lastBatch, deleteBatches, deleteBatchesAfter, updateBatch: SQLiteStatement

        init(_ db: SQLiteConnection) throws {
            begin = try db.prepare("BEGIN")
            commit = try db.prepare("COMMIT")
            rollback = try db.prepare("ROLLBACK")
            insertSpin = try db.prepare("""
                INSERT OR REPLACE INTO spins(name, kind, joined, outbox_base, epoch, resting, sequence, consumed)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
            let row = "SELECT name, kind, joined, outbox_base, resting, sequence, consumed FROM spins"
            selectSpins = try db.prepare(row)
            // Through the partial index `spins_awake`: the rows not resting, not the table.
            selectAwake = try db.prepare("\(row) WHERE resting = 0")
            selectMade = try db.prepare("\(row) WHERE name = ?")
            countSpins = try db.prepare("SELECT kind, count(*) FROM spins GROUP BY kind")
            pageSpins = try db.prepare("SELECT name, kind, sequence FROM spins WHERE name >= ?1 AND name > ?2 ORDER BY name LIMIT ?3")
            setResting = try db.prepare("UPDATE spins SET resting = 1, sequence = ?, consumed = ? WHERE name = ?")
            wakeSpin = try db.prepare("UPDATE spins SET resting = 0 WHERE name = ? AND resting = 1")
            selectSpin = try db.prepare("SELECT epoch, snapshot FROM spins WHERE name = ?")
            holds = try db.prepare("SELECT 1 FROM spins WHERE name = ?")
            deleteSpin = try db.prepare("DELETE FROM spins WHERE name = ?")
            setEpoch = try db.prepare("UPDATE spins SET epoch = ? WHERE name = ?")
            setSnapshot = try db.prepare("UPDATE spins SET snapshot = ? WHERE name = ?")
            setSuspension = try db.prepare("UPDATE spins SET suspension = ? WHERE name = ?")
            selectSuspension = try db.prepare("SELECT suspension FROM spins WHERE name = ?")
            insertBatch = try db.prepare("INSERT OR REPLACE INTO batches(spin, n, records) VALUES (?, ?, ?)")
            selectBatches = try db.prepare("SELECT n, records FROM batches WHERE spin = ? ORDER BY n")
            lastBatch = try db.prepare("SELECT max(n) FROM batches WHERE spin = ?")
            deleteBatches = try db.prepare("DELETE FROM batches WHERE spin = ?")
            deleteBatchesAfter = try db.prepare("DELETE FROM batches WHERE spin = ? AND n > ?")
            updateBatch = try db.prepare("UPDATE batches SET records = ? WHERE spin = ? AND n = ?")
        }
    }

    package init(directory: String) {
        self.path = "\(directory)/\(Self.fileName)"
    }

    // MARK: Opening and closing

    /// Opens the database (created, with its schema, when missing). Throws when it is not
    /// a database this release can use, saying what to do.
    package func open() throws {
        try lock.withLock {
            let db = try SQLiteConnection(path: path)
            do {
                try db.execute("PRAGMA locking_mode=EXCLUSIVE")
                try db.execute("PRAGMA journal_mode=WAL")
                try db.execute("PRAGMA synchronous=NORMAL")
                // Bounded: a checkpoint resets the log; a log grown by a big transaction
                // is cut back to this size.
                try db.execute("PRAGMA journal_size_limit=67108864")
                let version = try db.prepare("PRAGMA user_version")
                let found = try version.step() ? Int(version.integer(0)) : 0
                version.reset()
                if found > Self.schemaVersion {
                    throw SQLiteError(path: path, code: SQLITE_ERROR, message: """
                        written by a newer release (schema version \(found); this release reads up to \(Self.schemaVersion)). \
                        Nothing was changed: run the release that wrote it, or restore a backup from before the upgrade
                        """, statement: nil)
                }
                if found == 0 {
                    try db.execute("""
                        BEGIN;
                        CREATE TABLE IF NOT EXISTS spins(
                            name TEXT PRIMARY KEY, kind TEXT NOT NULL, joined TEXT NOT NULL,
                            outbox_base INTEGER NOT NULL, epoch TEXT NOT NULL, snapshot BLOB, suspension BLOB,
                            resting INTEGER NOT NULL DEFAULT 0, sequence INTEGER NOT NULL DEFAULT 0,
                            consumed TEXT NOT NULL DEFAULT ''
                        ) WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS batches(
                            spin TEXT NOT NULL, n INTEGER NOT NULL, records BLOB NOT NULL, PRIMARY KEY (spin, n)
                        ) WITHOUT ROWID;
                        PRAGMA user_version = \(Self.schemaVersion);
                        COMMIT;
                        """)
                }
                // The Spins a start reads (`madeSpins`): those not resting, found without
                // reading the others. Made once on a database of the release before.
                try db.execute("CREATE INDEX IF NOT EXISTS spins_awake ON spins(name) WHERE resting = 0")
                statements = try Statements(db)
                connection = db
                try syncLog()
            } catch {
                statements = nil
                db.close()
                throw error
            }
        }
    }

    /// Commits and syncs what is open, and closes the database (a checkpoint folds the log
    /// into it). Idempotent.
    package func close() throws {
        try lock.withLock {
            defer {
                statements = nil
                connection?.close()
                connection = nil
                if log >= 0 { Glibc.close(log) }
                log = -1
                journals = [:]
            }
            guard connection != nil else { return }
            try commitNow(sync: true)
        }
    }

    // MARK: Spins made

    /// The Spins the database holds that do not rest, and those of `kinds` whatever they
    /// do, by name: what a start hosts (the others stay on disk until something asks for
    /// them, `madeSpin(named:)`). Without `kinds`, through the index of the Spins not
    /// resting: a cost of those, not of the table.
    package func madeSpins(including kinds: Set<String> = []) throws -> [String: MadeSpin] {
        try lock.withLock {
            let statements = try ready()
            let select = kinds.isEmpty ? statements.selectAwake : statements.selectSpins
            var made: [String: MadeSpin] = [:]
            defer { select.reset() }
            while try select.step() {
                guard let (name, spin) = Self.madeSpin(select), spin.resting == nil || kinds.contains(spin.kind) else { continue }
                made[name] = spin
            }
            return made
        }
    }

    /// Spin `name` as the database holds it, or nil when it holds none of that name.
    package func madeSpin(named name: String) throws -> MadeSpin? {
        try lock.withLock {
            let statements = try ready()
            let select = try statements.selectMade.bind(.text(name))
            defer { select.reset() }
            guard try select.step() else { return nil }
            return Self.madeSpin(select)?.1
        }
    }

    /// How many Spins of each kind the database holds (a scan of the table: once per start).
    package func madeSpinCounts() throws -> [String: Int] {
        try lock.withLock {
            let statements = try ready()
            defer { statements.countSpins.reset() }
            var counts: [String: Int] = [:]
            while try statements.countSpins.step() {
                counts[statements.countSpins.text(0) ?? "", default: 0] += Int(statements.countSpins.integer(1))
            }
            return counts
        }
    }

    /// Up to `limit` Spins in name order (UTF-8 byte order, SQLite's `BINARY`) whose
    /// names start with `prefix`, after `after` when given: each one's kind and the
    /// sequence it rests at (0 for one that does not rest). Through the primary key: a
    /// cost of the page.
    package func madeSpins(prefix: String, after: String?, limit: Int) throws -> [(name: String, kind: String, sequence: UInt64)] {
        try lock.withLock {
            let statements = try ready()
            let select = try statements.pageSpins.bind(.text(prefix), .text(after ?? ""), .integer(Int64(max(0, limit))))
            defer { select.reset() }
            var page: [(name: String, kind: String, sequence: UInt64)] = []
            while try select.step() {
                guard let name = select.text(0), name.utf8.starts(with: prefix.utf8) else { break }
                page.append((name, select.text(1) ?? "", UInt64(max(0, select.integer(2)))))
            }
            return page
        }
    }

    /// A row of `spins` as `selectSpins` reads it (`name, kind, joined, outbox_base,
    /// resting, sequence, consumed`).
    private static func madeSpin(_ select: SQLiteStatement) -> (String, MadeSpin)? {
        guard let name = select.text(0), let kind = select.text(1) else { return nil }
        let resting = select.integer(4) == 0 ? nil
            : MadeSpin.Resting(sequence: UInt64(max(0, select.integer(5))), consumed: Self.joined(from: select.text(6) ?? ""))
        return (name, MadeSpin(kind: kind, joined: Self.joined(from: select.text(2) ?? ""),
                               outboxBase: UInt64(max(0, select.integer(3))), resting: resting))
    }

    /// Whether Spin `name` is one the database holds.
    package func holds(_ name: String) -> Bool {
        lock.withLock {
            guard let statements = try? ready(), (try? statements.holds.bind(.text(name))) != nil else { return false }
            defer { statements.holds.reset() }
            return (try? statements.holds.step()) ?? false
        }
    }

    /// Records that the Spins exist, each with its epoch and no history (what an earlier
    /// Spin of its name left is removed): all durable on return, or none.
    package func make(_ spins: [(name: String, spin: MadeSpin, epoch: String)]) throws {
        try lock.withLock {
            let statements = try ready()
            try writing {
                for (name, spin, epoch) in spins {
                    try statements.deleteBatches.bind(.text(name)).run()
                    try insert(name, spin, epoch: epoch, statements)
                }
            }
            try commitNow(sync: true)
        }
    }

    private func insert(_ name: String, _ spin: MadeSpin, epoch: String, _ statements: Statements) throws {
        try statements.insertSpin.bind(.text(name), .text(spin.kind), .text(Self.text(of: spin.joined)),
                                       .integer(Int64(clamping: spin.outboxBase)), .text(epoch),
                                       .integer(spin.resting == nil ? 0 : 1), .integer(Int64(clamping: spin.resting?.sequence ?? 0)),
                                       .text(Self.text(of: spin.resting?.consumed ?? [:]))).run()
    }

    /// Spin `name` rests (see `SpinStore.rest`): durable on return.
    package func rest(_ name: String, sequence: UInt64, consumed: [String: UInt64]) throws {
        try lock.withLock {
            let statements = try ready()
            try writing {
                try statements.setResting.bind(.integer(Int64(clamping: sequence)), .text(Self.text(of: consumed)), .text(name)).run()
            }
            try commitNow(sync: true)
        }
    }

    /// Removes Spin `name` and its journal: durable on return.
    package func delete(_ name: String) throws {
        try lock.withLock {
            let statements = try ready()
            try writing {
                try statements.deleteBatches.bind(.text(name)).run()
                try statements.deleteSpin.bind(.text(name)).run()
            }
            journals[name] = nil
            doubtful.remove(name)
            unsynced.remove(name)
            try commitNow(sync: true)
        }
    }

    /// Copies a Spin of an older storage layout in (see `FileSpinStore.madeSpins`): not
    /// durable until `commit`.
    package func importSpin(_ name: String, _ spin: MadeSpin, epoch: String, snapshot: [UInt8]?,
                            records: [JournalRecord.Record], suspension: [UInt8]?) throws {
        try lock.withLock {
            let statements = try ready()
            try writing {
                try statements.deleteBatches.bind(.text(name)).run()
                try insert(name, spin, epoch: epoch, statements)
                try statements.setSnapshot.bind(snapshot.map { .blob($0) } ?? .null, .text(name)).run()
                try statements.setSuspension.bind(suspension.map { .blob($0) } ?? .null, .text(name)).run()
                if !records.isEmpty {
                    var bytes: [UInt8] = []
                    JournalRecord.append(records, to: &bytes)
                    try statements.insertBatch.bind(.text(name), .integer(1), .blob(bytes)).run()
                }
            }
        }
    }

    /// Commits and syncs what is open (after `importSpin`).
    package func sync() throws {
        try lock.withLock { try commitNow(sync: true) }
    }

    // MARK: Journals

    /// What the database holds of `spin` (see `SpinStore.read`). A row whose records do not
    /// decode is corruption: the rows after it hold acknowledged events.
    package func read(spin: String, repair: Bool) throws -> StoredSpin {
        try lock.withLock {
            let statements = try ready()
            try statements.selectSpin.bind(.text(spin))
            guard try statements.selectSpin.step() else {
                statements.selectSpin.reset()
                throw SQLiteError(path: path, code: SQLITE_NOTFOUND, message: "no Spin \(spin) is stored", statement: nil)
            }
            let epoch = statements.selectSpin.text(0)
            let snapshot = statements.selectSpin.blob(1)
            statements.selectSpin.reset()
            let (decoded, damage) = try rows(of: spin, statements)
            if let damage, !repair {
                throw JournalCorruption(spin: spin, journal: journalName(of: spin), damage: damage.damage,
                                        intactThrough: decoded.last(where: { $0.sequence != 0 })?.sequence)
            }
            let (records, outbox) = try StoredSpin.separating(decoded, journal: journalName(of: spin))
            return StoredSpin(snapshot: snapshot, records: records, epoch: epoch, damage: damage?.damage, outbox: outbox)
        }
    }

    /// Where `spin`'s journal is, for messages.
    package func journalName(of spin: String) -> String { "\(path) (table batches, spin '\(spin)')" }

    /// Where a row of a journal does not decode: the row, how many of its bytes are whole
    /// batches, and the damage at its offset in the whole journal.
    private struct RowDamage {
        var n: Int64
        var keep: Int
        var damage: JournalRecord.Damage
    }

    /// The records of `spin`'s rows, in order, up to the first damaged row.
    private func rows(of spin: String, _ statements: Statements) throws -> ([JournalRecord.Record], RowDamage?) {
        try statements.selectBatches.bind(.text(spin))
        defer { statements.selectBatches.reset() }
        var records: [JournalRecord.Record] = []
        var offset = 0
        var damage: RowDamage?
        var total = 0
        while try statements.selectBatches.step() {
            let bytes = statements.selectBatches.blob(1) ?? []
            total += bytes.count
            guard damage == nil else { continue }
            let decoded = JournalRecord.decode(bytes)
            records += decoded.records
            if let found = decoded.damage {
                // Rows are written whole, in transactions: a row that does not decode was
                // damaged after it was written, never torn.
                damage = RowDamage(n: statements.selectBatches.integer(0), keep: decoded.validLength,
                                   damage: .init(kind: .corruption, offset: offset + found.offset,
                                                 reason: "\(found.reason) (row \(statements.selectBatches.integer(0)))",
                                                 bytesAfter: 0))
            }
            offset += bytes.count
        }
        if var found = damage {
            found.damage.bytesAfter = total - found.damage.offset
            damage = found
        }
        return (records, damage)
    }

    /// Readies `spin`'s journal for appending: cut (durably) at a damaged row when `damage`
    /// says so (the row keeps its whole batches, the rows after it go).
    package func startJournal(spin: String, cuttingAt damage: JournalRecord.Damage?) throws {
        try lock.withLock {
            let statements = try ready()
            if damage != nil, case (_, let found?) = try rows(of: spin, statements) {
                try writing {
                    try statements.deleteBatchesAfter.bind(.text(spin), .integer(found.n)).run()
                    try statements.selectBatches.bind(.text(spin))
                    var kept: [UInt8] = []
                    while try statements.selectBatches.step() {
                        guard statements.selectBatches.integer(0) == found.n else { continue }
                        kept = Array((statements.selectBatches.blob(1) ?? []).prefix(found.keep))
                    }
                    statements.selectBatches.reset()
                    try statements.updateBatch.bind(.blob(kept), .text(spin), .integer(found.n)).run()
                }
                try commitNow(sync: true)
            }
            try statements.lastBatch.bind(.text(spin))
            let last = try statements.lastBatch.step() ? statements.lastBatch.integer(0) : 0
            statements.lastBatch.reset()
            // Awake from here, committed now (synced with the next sync, before anything it
            // writes is acknowledged): a rollback of a later shared transaction must not
            // leave it marked resting while it runs.
            try writing { try statements.wakeSpin.bind(.text(spin)).run() }
            try commitTransaction()
            journals[spin] = Rows(next: last + 1, durable: last)
        }
    }

    /// Stores `spin`'s epoch: durable on return.
    package func writeEpoch(_ epoch: String, spin: String) throws {
        try lock.withLock {
            let statements = try ready()
            try writing { try statements.setEpoch.bind(.text(epoch), .text(spin)).run() }
            try commitNow(sync: true)
        }
    }

    /// Appends `batch` as one row of `spin`'s journal, in the open transaction.
    package func append(_ batch: [JournalRecord.Record], spin: String, buffer: inout [UInt8]) throws {
        try lock.withLock {
            guard var rows = journals[spin] else { return }
            let statements = try ready()
            buffer.removeAll(keepingCapacity: true)
            JournalRecord.append(batch, to: &buffer)
            try writing {
                try statements.insertBatch.bind(.text(spin), .integer(rows.next), .blob(buffer)).run()
            }
            rows.next += 1
            journals[spin] = rows
            unsynced.insert(spin)
        }
    }

    /// Commits the open transaction (every Spin's rows in it) and, with `sync`, syncs the
    /// log. Throws when `spin`'s rows are in doubt (see the type's notes).
    package func commit(spin: String, sync: Bool) throws {
        try lock.withLock {
            if doubtful.contains(spin) { throw InDoubt(path: path, spin: spin) }
            guard journals[spin] != nil else { return }
            try commitNow(sync: sync)
        }
    }

    /// Replaces `spin`'s snapshot and rows with `snapshot` and one row of `records`
    /// (everything durable already), in one transaction, committed (synced with the next sync).
    package func compact(spin: String, snapshot: [UInt8], records: [JournalRecord.Record]) throws {
        try lock.withLock {
            guard var rows = journals[spin] else { return }
            let statements = try ready()
            var bytes: [UInt8] = []
            JournalRecord.append(records, to: &bytes)
            try writing {
                try statements.deleteBatches.bind(.text(spin)).run()
                try statements.setSnapshot.bind(.blob(snapshot), .text(spin)).run()
                if !bytes.isEmpty { try statements.insertBatch.bind(.text(spin), .integer(rows.next), .blob(bytes)).run() }
            }
            try commitTransaction()
            // The new row holds only what was durable: a later failure keeps it.
            rows.durable = rows.next
            rows.next += 1
            journals[spin] = rows
        }
    }

    /// Removes `spin`'s rows beyond its durable ones (after a failure), and its doubt.
    package func discardUncommitted(spin: String) {
        lock.withLock {
            guard journals[spin] != nil else { return }
            if unsynced.contains(spin), connection?.inTransaction == true { rollback() }
            _ = try? cutToDurable(spin)
        }
    }

    /// `discardUncommitted`, throwing when the database does not take it.
    package func reopen(spin: String) throws {
        try lock.withLock {
            guard journals[spin] != nil else { return }
            try cutToDurable(spin)
        }
    }

    private func cutToDurable(_ spin: String) throws {
        guard var rows = journals[spin] else { return }
        let statements = try ready()
        try writing { try statements.deleteBatchesAfter.bind(.text(spin), .integer(rows.durable)).run() }
        try commitNow(sync: true)
        rows.next = rows.durable + 1
        journals[spin] = rows
        doubtful.remove(spin)
    }

    /// The journal of `spin` is closed (it sleeps, or is gone).
    package func release(spin: String) {
        lock.withLock {
            journals[spin] = nil
            unsynced.remove(spin)
            doubtful.remove(spin)
        }
    }

    // MARK: Suspensions

    package func suspension(of spin: String) throws -> [UInt8]? {
        try lock.withLock {
            let statements = try ready()
            try statements.selectSuspension.bind(.text(spin))
            defer { statements.selectSuspension.reset() }
            return try statements.selectSuspension.step() ? statements.selectSuspension.blob(0) : nil
        }
    }

    package func storeSuspension(_ document: [UInt8]?, of spin: String) throws {
        try lock.withLock {
            let statements = try ready()
            try writing { try statements.setSuspension.bind(document.map { .blob($0) } ?? .null, .text(spin)).run() }
            try commitNow(sync: document != nil)
        }
    }

    // MARK: Transactions (under the lock)

    private func ready() throws -> Statements {
        guard let statements else {
            throw SQLiteError(path: path, code: SQLITE_MISUSE, message: "the database is not open", statement: nil)
        }
        return statements
    }

    /// Runs `body` in the open transaction (begun if none is): when it throws, the
    /// transaction is rolled back (every Spin with rows in it in doubt).
    private func writing(_ body: () throws -> Void) throws {
        let statements = try ready()
        do {
            if connection?.inTransaction != true { try statements.begin.run() }
            try body()
        } catch {
            rollback()
            throw error
        }
    }

    private func rollback() {
        if connection?.inTransaction == true { try? statements?.rollback.run() }
        doubtful.formUnion(unsynced)
        unsynced = []
    }

    private func commitTransaction() throws {
        guard connection?.inTransaction == true, let statements else { return }
        do {
            try statements.commit.run()
        } catch {
            rollback()
            throw error
        }
        logUnsynced = true
    }

    /// Commits; with `sync`, syncs the log; then every Spin's rows written so far count as
    /// durable.
    private func commitNow(sync: Bool) throws {
        try commitTransaction()
        if sync, logUnsynced {
            do {
                try syncLog()
            } catch {
                doubtful.formUnion(unsynced)
                unsynced = []
                throw error
            }
        }
        for spin in unsynced {
            guard var rows = journals[spin] else { continue }
            rows.durable = rows.next - 1
            journals[spin] = rows
        }
        unsynced = []
    }

    /// `fdatasync` of the write-ahead log (opened, and its name synced into the directory,
    /// the first time).
    private func syncLog() throws {
        if log < 0 {
            let walPath = path + "-wal"
            let fd = Glibc.open(walPath, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw FileError(path: walPath, call: "open", errno: errno) }
            log = fd
            try DurableFiles.fsyncDirectory(DurableFiles.directory(of: path))
        }
        guard fdatasync(log) == 0 else { throw FileError(path: path + "-wal", call: "fdatasync", errno: errno) }
        logUnsynced = false
    }

    // MARK: Encoding

    /// `joined` as stored: `sender=position` pairs, comma-separated (Spin names hold
    /// neither `=` nor `,`).
    static func text(of joined: [String: UInt64]) -> String {
        joined.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }

    static func joined(from text: String) -> [String: UInt64] {
        guard !text.isEmpty else { return [:] }
        var joined: [String: UInt64] = [:]
        for pair in text.split(separator: ",") {
            guard let equals = pair.lastIndex(of: "="), let position = UInt64(pair[pair.index(after: equals)...]) else { continue }
            joined[String(pair[..<equals])] = position
        }
        return joined
    }

    /// A Spin's rows were in a transaction or sync that failed: its journal goes back.
    package struct InDoubt: Error, CustomStringConvertible {
        package let path: String
        package let spin: String
        package var description: String {
            "\(path): a write shared with other Spins failed; what Spin \(spin) wrote since its last commit is not durable"
        }
    }
}
