import Foundation

/// The PostgreSQL storage backend (`storage.backend: "postgres"`, docs/OPERATIONS.md,
/// "PostgreSQL"): journals, snapshots, epochs and suspensions in the tables of
/// `PostgresSchema`, through libpq connections: one for everything but the journals'
/// commits, and a small pool of `commitConnections` for those (`PostgresCommitPipeline`).
///
/// - `append` keeps a batch in memory; `commit` inserts everything appended to a Spin's
///   journal in one statement (group commit: many events, one transaction), so a batch
///   is stored whole or not at all. `beginCommit` does the same without waiting: several
///   commits (of one Spin or of many) run at once on the pool, a Spin's still complete in
///   order, and a Spin's commit that waits for a connection takes everything it appends
///   meanwhile. `commit(sync: true)` runs with `synchronous_commit`
///   on (the server flushes its WAL before answering), `sync: false` (`fsync: none`)
///   with it off (an answer before the flush; a database crash may lose the last
///   fraction of a second of commits, never part of one).
/// - `compact` replaces the snapshot and trims the journal in one transaction.
/// - Outbox records (`OutboxRecord`, the Gear events a batch propagated) go to
///   `spin_gear_outbox` in the transaction of their batch, under the outbox's advisory
///   lock, so that every node reads them in commit order (`PostgresClusterStore`).
/// - A lost connection fails the write that meets it; `probe` reconnects (and takes the
///   server's lock again, then refreshes the pool's lost connections), `reopen` deletes
///   what an interrupted commit may have stored after all (never acknowledged, and so
///   are the Spin's commits after it) so the journal resumes at its last known commit.
///
/// Ownership: in `.singleServer` mode `open` takes a session-level advisory lock, so a
/// second server on the same database fails at start-up; a cluster (`.shared`) takes one
/// such lock per node name (so a second process with the same name fails at start-up)
/// and decides ownership per partition of the Spins instead (`SpinPartitions`), checking
/// it with a `fence` in the transaction of each append.
/// In single-server mode the lock is the main connection's session's: the pool's
/// connections are opened only while it holds the lock (`probe` refreshes the pool after
/// taking it again). Should the main session alone end while the pool's live on (an
/// operator terminating that one backend), commits go on until a failure has the server
/// take the lock again.
package final class PostgresSpinStore: SpinStore, PipelinedCommits, @unchecked Sendable {
    /// Nothing is held open per Spin.
    package func release(spin: String) {}

    /// Every write is a round trip to the database: on the journal's queue.
    package var writesLocally: Bool { false }

    /// How this server shares the database.
    package enum Ownership: Sendable {
        /// One server per database: a session advisory lock for as long as it runs.
        case singleServer
        /// Several servers (nodes) share the database; ownership is decided per
        /// partition (leases, checked by the `fence`). The node's name keys its `spin_nodes` row.
        case shared(node: String)
    }

    /// The node name of a single server in `spin_nodes`.
    package static let singleServerNode = "single"

    let url: String
    let ownership: Ownership
    let connectTimeout: Int
    /// How long a held lock is asked for again before another server is said to hold
    /// the database (`takeOwnership`).
    let ownershipGrace: TimeInterval
    /// How many connections the journals' commits have (`PostgresCommitPipeline`).
    let commitConnections: Int
    /// Run inside the transaction of every append, before the records are inserted.
    let fence: (any JournalFence)?
    // Everything below is guarded by `lock`: the journal's queue and the suspension
    // methods (any thread) share the connection.
    private let lock = NSLock()
    var connection: PostgresConnection?
    /// The journals' commits, from `open` to `close`.
    var pipeline: PostgresCommitPipeline?
    var journals: [String: SpinJournal] = [:]

    final class SpinJournal {
        /// Appended, not yet committed.
        var pending: [JournalRecord.Record] = []
        /// Its commits on their way, and the sequence of the last committed record (nil
        /// while the journal has none).
        let chain: PostgresCommitPipeline.Chain
        /// The database lost commits it had answered (see `reopen`).
        var lostCommits = false

        init(committedLast: UInt64?) { chain = PostgresCommitPipeline.Chain(committedLast: committedLast) }
    }

    /// The default of `commitConnections`: while one commit waits for its WAL flush, the
    /// next fills and goes.
    package static let defaultCommitConnections = 3

    /// - Parameters:
    ///   - url: a libpq connection string (`postgresql://user:secret@db:5432/spin`).
    ///   - fence: a check run in the transaction of each append (a cluster's lease
    ///     check); nil checks nothing.
    ///   - commitConnections: the connections of the journals' commits, besides the main one.
    ///   - ownershipGrace: seconds a held lock is asked for again (a session of this
    ///     server's that the database is still ending) before the database is refused.
    package init(url: String, ownership: Ownership = .singleServer, connectTimeout: Int = 5,
                 fence: (any JournalFence)? = nil, commitConnections: Int = PostgresSpinStore.defaultCommitConnections,
                 ownershipGrace: TimeInterval = 2) {
        self.url = url
        self.ownership = ownership
        self.connectTimeout = connectTimeout
        self.ownershipGrace = ownershipGrace
        self.fence = fence
        self.commitConnections = commitConnections
    }

    package var location: String { "PostgreSQL database \(PostgresConnection.describe(connectionString: url))" }

    /// The journal table's rows of `spin`.
    package func journalName(of spin: String) -> String { "table spin_journal, spin = '\(spin)', in \(location)" }

    var node: String {
        switch ownership {
        case .singleServer: Self.singleServerNode
        case .shared(let node): node
        }
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The open connection; throws when there is none or it was lost (only `probe`
    /// reconnects, taking the server's lock again first).
    func live() throws -> PostgresConnection {
        guard let connection, connection.isConnected else {
            throw PostgresError(sqlState: PostgresError.connectionFailure, message: "the connection to the database is lost")
        }
        return connection
    }

    // MARK: Closing

    /// Refused when a journal lost commits (`reopen`): the next start must not take the
    /// stop for a clean one.
    package func markClean() throws {
        try locked {
            if let lost = journals.first(where: { $0.value.lostCommits }) {
                throw LostCommits(spin: lost.key, expected: settled(lost.value) ?? 0, found: nil)
            }
            do {
                try setClean(true)
            } catch let error as PostgresError where error.isConnectionFailure {
                // The database restarted while the server was idle: the mark is a plain
                // upsert, written again on a new connection.
                connection?.close()
                try reconnectIfLost()
                try setClean(true)
            }
        }
    }

    /// Closes the connections, which releases the single-server lock.
    package func close() {
        locked {
            journals = [:]
            pipeline?.close()
            pipeline = nil
            connection?.close()
            connection = nil
        }
    }

    // MARK: Definitions

    package func definitions(named name: String) throws -> [Int: [UInt8]] {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("SELECT version, source FROM spin_definitions WHERE name = $1", [.text(name)])
            var found: [Int: [UInt8]] = [:]
            for row in 0..<rows.count {
                guard let version = rows.int(row, 0), let source = rows.bytes(row, 1) else { continue }
                found[Int(version)] = source
            }
            return found
        }
    }

    package func storeDefinition(_ source: [UInt8], named name: String, version: Int) throws {
        try locked {
            try reconnectIfLost()
            _ = try live().query("""
                INSERT INTO spin_definitions (name, version, source) VALUES ($1, $2::int4, $3)
                ON CONFLICT (name, version) DO UPDATE SET source = excluded.source, stored_at = now()
                """, [.text(name), .int64(Int64(version)), .bytea(source)])
        }
    }

    // MARK: Suspensions

    package func suspension(of spin: String) throws -> [UInt8]? {
        try locked {
            let rows = try live().query("SELECT document FROM spin_suspensions WHERE spin = $1", [.text(spin)])
            return rows.count == 1 ? rows.bytes(0, 0) : nil
        }
    }

    package func storeSuspension(_ document: [UInt8], of spin: String) throws {
        try locked {
            _ = try live().query("""
                INSERT INTO spin_suspensions (spin, document) VALUES ($1, $2)
                ON CONFLICT (spin) DO UPDATE SET document = excluded.document
                """, [.text(spin), .bytea(document)])
        }
    }

    package func removeSuspension(of spin: String) {
        locked { _ = try? live().query("DELETE FROM spin_suspensions WHERE spin = $1", [.text(spin)]) }
    }
}
