import Foundation
import SpinStorage

/// The sessions of the auth-routing example's fake session service in the Spins'
/// PostgreSQL database (`spin_example_sessions`, a table of the example's own beside
/// SpinStorage's), so that every node of a cluster sees the same session: one row per
/// name (spin-server names each by the Gear its `feature` and `router` share). A name
/// without a row has a valid session, so a fresh database starts with one and a node
/// joining changes nothing.
///
/// Calls block for a round trip, one caller at a time, on a connection of its own (made
/// at the first call, when the table is made if it is missing, `table`; a lost
/// connection is made again at the next call). Each statement is bounded by `statementTimeout` and each connect by
/// `connectTimeout`; on any failure the call throws and the caller decides what it means.
package final class PostgresExampleSessions: @unchecked Sendable {
    private let url: String
    private let connectTimeout: Int
    // Guarded by `lock`: the connection, nil until the first call and after a loss.
    private let lock = NSLock()
    private var connection: PostgresConnection?

    /// What the database lets one statement run (`statement_timeout`): a row read or
    /// written by its key takes milliseconds, so two seconds mean the database is stuck.
    package static let statementTimeout = "2s"

    /// The table, as SpinStorage's schema migration 3 made it before the example took it
    /// over (a database of an earlier release has it already): made if missing, under
    /// the storage's migration lock, so that nodes connecting together do not race.
    package static let table = """
        CREATE TABLE IF NOT EXISTS spin_example_sessions (
            name text PRIMARY KEY,
            valid boolean NOT NULL,
            changed_at timestamptz NOT NULL DEFAULT now()
        );
        """

    /// - Parameters:
    ///   - url: a libpq connection string, as for `PostgresSpinStore`.
    ///   - connectTimeout: seconds to wait for each connect.
    package init(url: String, connectTimeout: Int = 2) {
        self.url = url
        self.connectTimeout = connectTimeout
    }

    /// Whether the session `name` is valid (true when it has no row).
    package func isValid(_ name: String) throws -> Bool {
        try withConnection { connection in
            let rows = try connection.query("SELECT valid FROM spin_example_sessions WHERE name = $1", [.text(name)])
            return rows.count == 0 || rows.bool(0, 0) == true
        }
    }

    /// Starts (`true`) or ends (`false`) the session `name`.
    package func setValid(_ valid: Bool, _ name: String) throws {
        try withConnection { connection in
            _ = try connection.query("""
                INSERT INTO spin_example_sessions (name, valid) VALUES ($1, $2)
                ON CONFLICT (name) DO UPDATE SET valid = excluded.valid, changed_at = now()
                """, [.text(name), .bool(valid)])
        }
    }

    /// Closes the connection (the next call connects again).
    package func close() {
        lock.withLock {
            connection?.close()
            connection = nil
        }
    }

    /// Runs `body` on the connection, connecting (with the statement timeout, and the
    /// table made) when there is none; a connection failure drops it.
    private func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try lock.withLock { try PostgresConnection.reusing(&connection, connect: connect, body) }
    }

    private func connect() throws -> PostgresConnection {
        let connection = try PostgresConnection(url: url, timeoutSeconds: connectTimeout)
        do {
            try connection.execute("SET statement_timeout = '\(Self.statementTimeout)'")
            try connection.transaction {
                _ = try connection.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                                         [.int64(Int64(PostgresSchema.lockNamespace)), .int64(Int64(PostgresSchema.migrationLock))])
                try connection.execute(Self.table)
            }
            return connection
        } catch {
            connection.close()
            throw error
        }
    }
}
