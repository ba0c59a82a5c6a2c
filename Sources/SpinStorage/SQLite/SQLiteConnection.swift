import CSQLite

/// One connection to a SQLite database file, and its prepared statements: the little of
/// SQLite's C API that `SpinDatabase` needs. Not thread-safe: its owner serializes every
/// call (the connection is opened with `SQLITE_OPEN_NOMUTEX`).
package final class SQLiteConnection {
    package let path: String
    private var handle: OpaquePointer?

    /// Opens (creating it if missing) the database at `path`.
    package init(path: String) throws {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close(db)
            throw SQLiteError(path: path, code: code, message: message, statement: nil)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    deinit { close() }

    /// Closes the connection (finalizing statements first is the caller's part). Idempotent.
    package func close() {
        guard let handle else { return }
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    /// Runs `sql` (one or more statements, no parameters), discarding any rows.
    package func execute(_ sql: String) throws {
        guard let handle else { throw SQLiteError(path: path, code: SQLITE_MISUSE, message: "the database is closed", statement: sql) }
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(message)
            throw SQLiteError(path: path, code: code, message: text, statement: sql)
        }
    }

    /// A prepared statement of `sql`, kept for as long as the caller keeps it.
    package func prepare(_ sql: String) throws -> SQLiteStatement {
        guard let handle else { throw SQLiteError(path: path, code: SQLITE_MISUSE, message: "the database is closed", statement: sql) }
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code, sql) }
        return SQLiteStatement(connection: self, statement: statement, sql: sql)
    }

    /// Sets this server's way of using a database file: no other process opens it while
    /// the server runs (no `-shm` file), a write-ahead log synced as `synchronous` says
    /// (`NORMAL`, `FULL`), bounded (a checkpoint resets it; a log grown by a big
    /// transaction is cut back to 64 MiB). Returns the schema version the file has (0: a
    /// new file), refusing one newer than `known` (what a downgrade must not touch;
    /// `instead` says what to do about it).
    package func prepareSchema(synchronous: String, known: Int, instead: String) throws -> Int {
        try execute("PRAGMA locking_mode=EXCLUSIVE")
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=\(synchronous)")
        try execute("PRAGMA journal_size_limit=67108864")
        let version = try prepare("PRAGMA user_version")
        let found = try version.step() ? Int(version.integer(0)) : 0
        version.reset()
        guard found <= known else {
            throw SQLiteError(path: path, code: SQLITE_ERROR, message: """
                written by a newer release (schema version \(found); this release reads up to \(known)). \
                Nothing was changed: \(instead)
                """, statement: nil)
        }
        return found
    }

    /// The rows the last write changed.
    package var changes: Int32 {
        guard let handle else { return 0 }
        return sqlite3_changes(handle)
    }

    /// Whether a transaction is open (not in autocommit mode).
    package var inTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    func error(_ code: Int32, _ sql: String?) -> SQLiteError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        return SQLiteError(path: path, code: code, message: message, statement: sql)
    }
}

/// A prepared statement: bind, step, read columns, reset.
package final class SQLiteStatement {
    private unowned let connection: SQLiteConnection
    private let statement: OpaquePointer
    private let sql: String

    fileprivate init(connection: SQLiteConnection, statement: OpaquePointer, sql: String) {
        self.connection = connection
        self.statement = statement
        self.sql = sql
    }

    deinit { sqlite3_finalize(statement) }

    /// One value a parameter takes.
    package enum Value {
        case text(String)
        case blob([UInt8])
        case integer(Int64)
        case null
    }

    /// Binds `values` to the parameters 1, 2, … (after a reset: the statement may be run again).
    @discardableResult
    package func bind(_ values: Value...) throws -> SQLiteStatement {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .text(let text):
                code = sqlite3_bind_text(statement, index, text, -1, csqlite_transient())
            case .blob(let bytes):
                code = bytes.withUnsafeBytes { raw in
                    // A zero-length blob is still a blob, not NULL.
                    sqlite3_bind_blob(statement, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count),
                                      csqlite_transient())
                }
            case .integer(let number):
                code = sqlite3_bind_int64(statement, index, number)
            case .null:
                code = sqlite3_bind_null(statement, index)
            }
            guard code == SQLITE_OK else { throw connection.error(code, sql) }
        }
        return self
    }

    /// Steps once: true when a row is there to read, false when the statement is done.
    package func step() throws -> Bool {
        let code = sqlite3_step(statement)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(statement)
            throw connection.error(code, sql)
        }
    }

    /// Runs the statement to its end (a write), then resets it.
    package func run() throws {
        defer { sqlite3_reset(statement) }
        while try step() {}
    }

    /// Releases what the last run holds (a read's snapshot of the database).
    package func reset() { sqlite3_reset(statement) }

    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    package func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    package func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    package func blob(_ column: Int32) -> [UInt8]? {
        guard !isNull(column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}

/// What SQLite said when a call failed.
package struct SQLiteError: Error, CustomStringConvertible {
    package let path: String
    /// The extended result code (`SQLITE_FULL`, `SQLITE_IOERR_FSYNC`, `SQLITE_CORRUPT`, …).
    package let code: Int32
    package let message: String
    package let statement: String?

    package var description: String {
        "\(path): \(message) (SQLite error \(code))"
    }
}
