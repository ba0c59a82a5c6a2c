import Foundation

/// Where a storage directory keeps the older history of its Spins (`storage.history`
/// `{"days": D}` or `"all"`): one SQLite database, `history.db`, apart from the journals
/// (`spins.db` and the journal files), so that writing a segment, which syncs, never holds
/// a journal's write, and a directory whose history is not kept has no such file.
///
/// One table, `segments`: a row per `HistorySegment` (`spin`, `first`, `last`,
/// `last_time`, `base`, `records`), unique by `(spin, last)`, with an index on
/// `last_time` for `{"days": D}`. Each write is its own transaction, durable on return
/// (`synchronous=FULL` in write-ahead-log mode). Opened on first use: reading a Spin's
/// history where none was ever written creates nothing.
///
/// Thread-safe (a lock): the journal writes segments from its history queue, requests
/// read them from theirs.
package final class HistoryDatabase: @unchecked Sendable {
    package let path: String
    private let lock = NSLock()
    private var connection: SQLiteConnection?
    private var statements: Statements?

    /// The schema this release writes. A database of a higher version is refused.
    package static let schemaVersion = 1
    package static let fileName = "history.db"

    private final class Statements {
        let insert, select, range, trim, delete: SQLiteStatement

        init(_ db: SQLiteConnection) throws {
            insert = try db.prepare("""
                INSERT OR REPLACE INTO segments(spin, first, last, last_time, base, records) VALUES (?, ?, ?, ?, ?, ?)
                """)
            select = try db.prepare("""
                SELECT first, last, last_time, base, records FROM segments WHERE spin = ? AND last >= ? ORDER BY last LIMIT ?
                """)
            range = try db.prepare("SELECT min(first), max(last) FROM segments WHERE spin = ?")
            trim = try db.prepare("DELETE FROM segments WHERE last_time < ?")
            delete = try db.prepare("DELETE FROM segments WHERE spin = ?")
        }
    }

    package init(directory: String) {
        self.path = "\(directory)/\(Self.fileName)"
    }

    /// The statements, opening the database first; nil when it does not exist and
    /// `creating` is false.
    private func ready(creating: Bool) throws -> Statements? {
        if let statements { return statements }
        guard creating || FileManager.default.fileExists(atPath: path) else { return nil }
        let db = try SQLiteConnection(path: path)
        do {
            let found = try db.prepareSchema(synchronous: "FULL", known: Self.schemaVersion, instead: """
                run the release that wrote it, or move the file away (the history older than the journals is then lost)
                """)
            if found == 0 {
                try db.execute("""
                    BEGIN;
                    CREATE TABLE IF NOT EXISTS segments(
                        spin TEXT NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL, last_time INTEGER NOT NULL,
                        base BLOB, records BLOB NOT NULL
                    );
                    CREATE UNIQUE INDEX IF NOT EXISTS segments_spin ON segments(spin, last);
                    CREATE INDEX IF NOT EXISTS segments_time ON segments(last_time);
                    PRAGMA user_version = \(Self.schemaVersion);
                    COMMIT;
                    """)
            }
            let prepared = try Statements(db)
            connection = db
            statements = prepared
            return prepared
        } catch {
            db.close()
            throw error
        }
    }

    /// See `SpinStore.archive`.
    package func archive(_ segments: [HistorySegment], spin: String) throws {
        guard !segments.isEmpty else { return }
        try lock.withLock {
            guard let statements = try ready(creating: true), let connection else { return }
            try connection.execute("BEGIN")
            do {
                for segment in segments {
                    try statements.insert.bind(.text(spin), .integer(Int64(bitPattern: segment.first)),
                                               .integer(Int64(bitPattern: segment.last)), .integer(segment.lastTime),
                                               segment.base.map { .blob($0) } ?? .null, .blob(segment.records)).run()
                }
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// See `SpinStore.history(of:from:limit:)`.
    package func history(of spin: String, from sequence: UInt64, limit: Int) throws -> [HistorySegment] {
        try lock.withLock {
            guard let statements = try ready(creating: false) else { return [] }
            let select = try statements.select.bind(.text(spin), .integer(Int64(bitPattern: min(sequence, UInt64(Int64.max)))),
                                                    .integer(Int64(max(0, limit))))
            defer { select.reset() }
            var segments: [HistorySegment] = []
            while try select.step() {
                segments.append(HistorySegment(first: UInt64(bitPattern: select.integer(0)), last: UInt64(bitPattern: select.integer(1)),
                                               lastTime: select.integer(2), base: select.isNull(3) ? nil : select.blob(3) ?? [],
                                               records: select.blob(4) ?? []))
            }
            return segments
        }
    }

    /// See `SpinStore.archived(spin:)`.
    package func archived(spin: String) throws -> ClosedRange<UInt64>? {
        try lock.withLock {
            guard let statements = try ready(creating: false) else { return nil }
            let range = try statements.range.bind(.text(spin))
            defer { range.reset() }
            guard try range.step(), !range.isNull(0), !range.isNull(1) else { return nil }
            let first = UInt64(bitPattern: range.integer(0)), last = UInt64(bitPattern: range.integer(1))
            return first <= last ? first...last : nil
        }
    }

    /// See `SpinStore.trimHistory(before:)`.
    package func trim(before time: Int64) throws -> Int {
        try lock.withLock {
            guard let statements = try ready(creating: false), let connection else { return 0 }
            try statements.trim.bind(.integer(time)).run()
            return Int(connection.changes)
        }
    }

    /// Removes every segment of `spin` (it was deleted): durable on return.
    package func delete(spin: String) throws {
        try lock.withLock {
            guard let statements = try ready(creating: false) else { return }
            try statements.delete.bind(.text(spin)).run()
        }
    }

    /// Closes the database. Idempotent; a later call opens it again.
    package func close() {
        lock.withLock {
            statements = nil
            connection?.close()
            connection = nil
        }
    }
}
