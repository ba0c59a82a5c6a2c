import Foundation
import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// One blocking connection to a PostgreSQL server through libpq.
///
/// Not thread-safe: one caller at a time (`PostgresSpinStore` holds a lock around it).
/// Parameters go in binary format, so `bytea` values are passed as they are, never
/// escaped; results of `query` come back in binary format too (`PostgresRows`).
package final class PostgresConnection {
    private var connection: OpaquePointer?

    /// Connects to `url` (a libpq connection string: `postgresql://user@host:5432/db` or
    /// `host=... dbname=...`), waiting at most `timeoutSeconds` unless the string sets its
    /// own `connect_timeout`. Throws a `PostgresError` saying why it could not connect.
    package init(url: String, timeoutSeconds: Int = 5) throws {
        // Our defaults come before `dbname`, which libpq expands into the string's own
        // settings: what the string says overrides them. Keepalives and a TCP user
        // timeout make a host that vanishes without a reset fail a waiting statement
        // within about 10 s, not the kernel's minutes of retransmissions.
        let keywords = ["connect_timeout", "application_name", "keepalives", "keepalives_idle", "keepalives_interval",
                        "keepalives_count", "tcp_user_timeout", "dbname"]
        let values = [String(timeoutSeconds), "spin-server", "1", "5", "2", "3", "10000", url]
        connection = Self.withCStrings(keywords) { keywordPointers in
            Self.withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = connection.map { Self.message(of: $0) } ?? "out of memory"
            close()
            throw PostgresError(sqlState: nil, message: message)
        }
        // Notices ("relation already exists, skipping") are not errors: keep them off stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit { close() }

    /// Closes the connection (what the server holds for this session is released). Idempotent.
    package func close() {
        if let connection { PQfinish(connection) }
        connection = nil
    }

    /// Whether the connection is up, as far as libpq knows without asking the server.
    package var isConnected: Bool {
        guard let connection else { return false }
        return PQstatus(connection) == CONNECTION_OK
    }

    /// Whether a transaction is open (and not yet committed or rolled back).
    package var inTransaction: Bool {
        guard let connection else { return false }
        let status = PQtransactionStatus(connection)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Runs `sql` without parameters; it may hold several statements separated by `;`.
    package func execute(_ sql: String) throws {
        let result = PQexec(try open(), sql)
        _ = try take(result)
    }

    /// Runs one statement with `parameters` (`$1`, `$2`, ...) and returns its rows.
    package func query(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresRows {
        let connection = try open()
        let encoded = parameters.map { $0.encoded }
        let types = encoded.map { $0.type }
        let lengths = encoded.map { Int32($0.bytes?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: encoded.count)
        let result = Self.withBuffers(encoded.map { $0.bytes }) { pointers in
            PQexecParams(connection, sql, Int32(encoded.count), types, pointers, lengths, formats, 1)
        }
        return try take(result)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it (or
    /// the commit) throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if isConnected, inTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Runs `body` on `connection`, made by `connect` when there is none; a connection
    /// failure closes it and leaves nil, so that the next call connects again. For a
    /// store that keeps one connection under its lock.
    package static func reusing<T>(_ connection: inout PostgresConnection?, connect: () throws -> PostgresConnection,
                                   _ body: (PostgresConnection) throws -> T) throws -> T {
        let current = try connection ?? connect()
        connection = current
        do {
            return try body(current)
        } catch let error as PostgresError where error.isConnectionFailure || !current.isConnected {
            current.close()
            connection = nil
            throw error
        }
    }

    // MARK: Notifications

    /// Waits up to `timeout` for notifications on the channels this session `LISTEN`s to
    /// (they arrive at the notifying transaction's commit), or until `wake` (a file
    /// descriptor, e.g. a pipe's read end) becomes readable. Returns how many arrived
    /// (0: timed out or woken); ones received earlier, while other statements ran, count
    /// at once. Throws when the connection is lost.
    package func waitForNotifications(timeout: Duration, wake: Int32? = nil) throws -> Int {
        let connection = try open()
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let received = Self.drainNotifications(connection)
            if received > 0 { return received }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return 0 }
            let socket = PQsocket(connection)
            guard socket >= 0 else {
                throw PostgresError(sqlState: PostgresError.connectionFailure, message: "the connection to the database is lost")
            }
            var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            if let wake { descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
            let (seconds, attoseconds) = left.components
            let milliseconds = min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, Int64(Int32.max))
            let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(milliseconds))
            if ready < 0, errno != EINTR {
                throw PostgresError(sqlState: nil, message: "poll on the database connection failed (errno \(errno))")
            }
            if descriptors.count > 1, descriptors[1].revents != 0 { return Self.drainNotifications(connection) }
            // Readable (or hung up): read what came; a closed connection fails here.
            if descriptors[0].revents != 0, PQconsumeInput(connection) == 0 || PQstatus(connection) != CONNECTION_OK {
                throw PostgresError(sqlState: PostgresError.connectionFailure, message: Self.message(of: connection))
            }
        }
    }

    /// Frees the notifications libpq has read so far; how many there were.
    private static func drainNotifications(_ connection: OpaquePointer) -> Int {
        var count = 0
        while let notification = PQnotifies(connection) {
            PQfreemem(notification)
            count += 1
        }
        return count
    }

    private func open() throws -> OpaquePointer {
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            throw PostgresError(sqlState: PostgresError.connectionFailure, message: "the connection to the database is lost")
        }
        return connection
    }

    /// The rows of `result` (freed here), or the error it reports.
    private func take(_ result: OpaquePointer?) throws -> PostgresRows {
        guard let result else {
            throw PostgresError(sqlState: isConnected ? nil : PostgresError.connectionFailure,
                                message: connection.map { Self.message(of: $0) } ?? "no connection")
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(rows: [])
        case PGRES_TUPLES_OK:
            return PostgresRows(result)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            let message = primary ?? String(cString: PQresultErrorMessage(result))
            // A statement cut off by a lost connection has no SQLSTATE of its own.
            let lost = state == nil && !isConnected
            throw PostgresError(sqlState: lost ? PostgresError.connectionFailure : state,
                                message: message.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    private static func message(of connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return body(copies.map { UnsafePointer($0) } + [nil])
    }

    private static func withBuffers<R>(_ buffers: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = buffers.map { bytes in
            guard let bytes else { return nil }
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
            bytes.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: bytes.count) }
            }
            return copy
        }
        defer { copies.forEach { $0?.deallocate() } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }

    /// Nil when libpq can read `url` as a connection string, else what is wrong with it
    /// (checked at configuration time, without connecting).
    package static func problem(inConnectionString url: String) -> String? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            defer { if let error { PQfreemem(error) } }
            return error.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
                ?? "not a connection string"
        }
        PQconninfoFree(options)
        return nil
    }

    /// Where `url` points, without its password: `host=db port=5432 dbname=spin user=spin`
    /// (the settings it gives), for messages and logs.
    package static func describe(connectionString url: String) -> String {
        guard let options = PQconninfoParse(url, nil) else { return "(an unreadable connection string)" }
        defer { PQconninfoFree(options) }
        var given: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { given[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        let parts = ["host", "hostaddr", "port", "dbname", "user"].compactMap { name in given[name].map { "\(name)=\($0)" } }
        return parts.isEmpty ? "(libpq defaults)" : parts.joined(separator: " ")
    }
}

/// An error reported by libpq or by the server: the SQLSTATE (nil when there is none,
/// e.g. a failed connect) and the message.
package struct PostgresError: Error, CustomStringConvertible {
    /// The SQLSTATE of a lost connection (class 08, "connection exception").
    package static let connectionFailure = "08006"

    package var sqlState: String?
    package var message: String

    package init(sqlState: String?, message: String) {
        self.sqlState = sqlState
        self.message = message
    }

    /// The connection failed or the server went away (SQLSTATE class 08, or 57P0x:
    /// the server shutting down).
    package var isConnectionFailure: Bool {
        guard let sqlState else { return true }
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("57P0")
    }

    package var description: String {
        sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message
    }
}

/// A statement parameter, sent in PostgreSQL's binary format.
package enum PostgresValue {
    case text(String)
    case int64(Int64)
    case float8(Double)
    case bool(Bool)
    case bytea([UInt8])
    case int64Array([Int64])
    case byteaArray([[UInt8]])
    case boolArray([Bool])
    case textArray([String])
    case null

    // Type OIDs (pg_type.oid): int8, float8, bool, bytea, text and their arrays.
    private static let int8 = 20, float8Type = 701, boolean = 16, byteaType = 17, textType = 25

    var encoded: (type: UInt32, bytes: [UInt8]?) {
        switch self {
        case .text(let value): return (UInt32(Self.textType), Array(value.utf8))
        case .int64(let value): return (UInt32(Self.int8), Self.bigEndian(value))
        case .float8(let value): return (UInt32(Self.float8Type), Self.bigEndian(value.bitPattern))
        case .bool(let value): return (UInt32(Self.boolean), [value ? 1 : 0])
        case .bytea(let value): return (UInt32(Self.byteaType), value)
        case .int64Array(let values): return (1016, Self.array(of: Self.int8, values.map { Self.bigEndian($0) }))
        case .byteaArray(let values): return (1001, Self.array(of: Self.byteaType, values))
        case .boolArray(let values): return (1000, Self.array(of: Self.boolean, values.map { [$0 ? 1 : 0] }))
        case .textArray(let values): return (1009, Self.array(of: Self.textType, values.map { Array($0.utf8) }))
        case .null: return (0, nil)
        }
    }

    private static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// A one-dimensional array without NULLs in binary format: dimensions, flags, element
    /// type, then (length, lower bound) and each element as (length, bytes).
    private static func array(of elementType: Int, _ elements: [[UInt8]]) -> [UInt8] {
        var bytes = bigEndian(Int32(elements.isEmpty ? 0 : 1)) + bigEndian(Int32(0)) + bigEndian(Int32(elementType))
        if !elements.isEmpty { bytes += bigEndian(Int32(elements.count)) + bigEndian(Int32(1)) }
        for element in elements {
            bytes += bigEndian(Int32(element.count))
            bytes += element
        }
        return bytes
    }
}

/// The rows a query returned, copied out of libpq's result, each column in binary
/// format. Every accessor answers nil for NULL and for a row or column the result does
/// not have: a query whose rows can change between two statements (who holds a lock
/// that was just let go) gets none, not a trap.
package struct PostgresRows {
    package var rows: [[[UInt8]?]]

    package init(rows: [[[UInt8]?]]) { self.rows = rows }

    init(_ result: OpaquePointer) {
        let columns = PQnfields(result)
        rows = (0..<PQntuples(result)).map { row in
            (0..<columns).map { column -> [UInt8]? in
                guard PQgetisnull(result, row, column) == 0, let value = PQgetvalue(result, row, column) else { return nil }
                let length = Int(PQgetlength(result, row, column))
                return value.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
            }
        }
    }

    package var count: Int { rows.count }

    /// The bytes of a `bytea` column (or of any column), nil for NULL.
    package func bytes(_ row: Int, _ column: Int) -> [UInt8]? { value(row, column) }

    /// A `text` column.
    package func text(_ row: Int, _ column: Int) -> String? {
        value(row, column).map { String(decoding: $0, as: UTF8.self) }
    }

    /// An `int8`, `int4` or `int2` column.
    package func int(_ row: Int, _ column: Int) -> Int64? {
        value(row, column).map { bytes in
            let value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let bits = bytes.count * 8
            return bits >= 64 ? Int64(bitPattern: value) : Int64(bitPattern: value << (64 - bits)) >> (64 - bits)
        }
    }

    /// A `float8` column.
    package func double(_ row: Int, _ column: Int) -> Double? {
        value(row, column).map { bytes in Double(bitPattern: bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }
    }

    /// A `bool` column.
    package func bool(_ row: Int, _ column: Int) -> Bool? { value(row, column).map { $0.first == 1 } }

    private func value(_ row: Int, _ column: Int) -> [UInt8]? {
        guard rows.indices.contains(row), rows[row].indices.contains(column) else { return nil }
        return rows[row][column]
    }
}
