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
    let lock = NSLock()
    var connection: SQLiteConnection?
    var statements: Statements?
    /// The write-ahead log, opened by this type to sync it (`-1` until the first sync).
    private var log: Int32 = -1
    /// Committed transactions not synced yet.
    private var logUnsynced = false
    /// The open journals: the next row's `n`, and the last `n` that is durable.
    var journals: [String: Rows] = [:]
    /// Spins with rows written since the last sync (or commit without sync).
    var unsynced: Set<String> = []
    /// Spins whose rows beyond their durable ones a failure may have lost (see above).
    var doubtful: Set<String> = []

    struct Rows {
        var next: Int64
        var durable: Int64
    }

    /// The schema this release writes. A database of a higher version is refused.
    package static let schemaVersion = 1
    package static let fileName = "spins.db"

    final class Statements {
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
                let found = try db.prepareSchema(synchronous: "NORMAL", known: Self.schemaVersion,
                                                  instead: "run the release that wrote it, or restore a backup from before the upgrade")
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

    // MARK: Transactions (under the lock)

    func ready() throws -> Statements {
        guard let statements else {
            throw SQLiteError(path: path, code: SQLITE_MISUSE, message: "the database is not open", statement: nil)
        }
        return statements
    }

    /// Runs `body` in the open transaction (begun if none is): when it throws, the
    /// transaction is rolled back (every Spin with rows in it in doubt).
    func writing(_ body: () throws -> Void) throws {
        let statements = try ready()
        do {
            if connection?.inTransaction != true { try statements.begin.run() }
            try body()
        } catch {
            rollback()
            throw error
        }
    }

    func rollback() {
        if connection?.inTransaction == true { try? statements?.rollback.run() }
        doubtful.formUnion(unsynced)
        unsynced = []
    }

    func commitTransaction() throws {
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
    func commitNow(sync: Bool) throws {
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

    /// Numbers by name as stored: `name=number` pairs in name order, comma-separated (the
    /// names hold neither `=` nor `,`: Spin names, and the names of definitions, `kind.door`):
    /// where each sender's position is (`joined`, `consumed`), and a cluster node's and a
    /// partition's definition versions.
    package static func text<Number: BinaryInteger>(of joined: [String: Number]) -> String {
        joined.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }

    /// The numbers by name of `text(of:)`'s text.
    package static func joined<Number: FixedWidthInteger>(from text: String, as _: Number.Type = UInt64.self) -> [String: Number] {
        guard !text.isEmpty else { return [:] }
        var joined: [String: Number] = [:]
        for pair in text.split(separator: ",") {
            guard let equals = pair.lastIndex(of: "="), let position = Number(pair[pair.index(after: equals)...]) else { continue }
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
