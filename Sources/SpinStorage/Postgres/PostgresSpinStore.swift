import Foundation

/// The PostgreSQL storage backend (`storage.backend: "postgres"`, docs/OPERATIONS.md,
/// "PostgreSQL"): journals, snapshots, epochs and suspensions in the tables of
/// `PostgresSchema`, through one libpq connection.
///
/// - `append` keeps a batch in memory; `commit` inserts everything appended to a Spin's
///   journal in one statement (group commit: many events, one transaction), so a batch
///   is stored whole or not at all. `commit(sync: true)` runs with `synchronous_commit`
///   on (the server flushes its WAL before answering), `sync: false` (`fsync: none`)
///   with it off (an answer before the flush; a database crash may lose the last
///   fraction of a second of commits, never part of one).
/// - `compact` replaces the snapshot and trims the journal in one transaction.
/// - Outbox records (`OutboxRecord`, the Gear events a batch propagated) go to
///   `spin_gear_outbox` in the transaction of their batch, under the outbox's advisory
///   lock, so that every node reads them in commit order (`PostgresClusterStore`).
/// - A lost connection fails the write that meets it; `probe` reconnects (and takes the
///   server's lock again), `reopen` deletes what an interrupted commit may have stored
///   after all (never acknowledged) so the journal resumes at its last known commit.
///
/// Ownership: in `.singleServer` mode `open` takes a session-level advisory lock, so a
/// second server on the same database fails at start-up; a cluster (`.shared`) takes one
/// such lock per node name (so a second process with the same name fails at start-up)
/// and decides ownership per partition of the Spins instead (`SpinPartitions`), checking
/// it with a `fence` in the transaction of each append.
package final class PostgresSpinStore: SpinStore, @unchecked Sendable {
    /// Nothing is held open per Spin.
    package func release(spin: String) {}

    // MARK: Spins made at run time

    // Each of these is one statement or one transaction of its own (no journal's commit is
    // part of it), so a lost connection is made again first, as `read` does: a lookup
    // after the database came back must not fail until some journal probes.

    /// The columns of a `spin_made` row, in the order `madeSpin(_:at:)` reads them.
    private static let madeColumns = "name, kind, joined, outbox_base, resting, sequence, consumed"

    private static func madeSpin(_ rows: PostgresRows, at row: Int) -> (name: String, spin: MadeSpin) {
        let resting = rows.bool(row, 4) == true
            ? MadeSpin.Resting(sequence: UInt64(clamping: rows.int(row, 5) ?? 0),
                               consumed: SpinDatabase.joined(from: rows.text(row, 6) ?? ""))
            : nil
        return (rows.text(row, 0) ?? "",
                MadeSpin(kind: rows.text(row, 1) ?? "", joined: SpinDatabase.joined(from: rows.text(row, 2) ?? ""),
                         outboxBase: UInt64(clamping: rows.int(row, 3) ?? 0), resting: resting))
    }

    /// The Spins that do not rest and those of `kinds`: one indexed read (`spin_made_awake`)
    /// and one per kind. A deletion is one transaction: none is left half done.
    package func madeSpins(repair: Bool, including kinds: Set<String>) throws -> [String: MadeSpin] {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("""
                SELECT \(Self.madeColumns) FROM spin_made WHERE NOT resting OR kind = ANY($1::text[])
                """, [.textArray(kinds.sorted())])
            var made: [String: MadeSpin] = [:]
            for row in 0..<rows.count {
                let (name, spin) = Self.madeSpin(rows, at: row)
                made[name] = spin
            }
            return made
        }
    }

    package func madeSpin(named name: String) throws -> MadeSpin? {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("SELECT \(Self.madeColumns) FROM spin_made WHERE name = $1", [.text(name)])
            return rows.count == 1 ? Self.madeSpin(rows, at: 0).spin : nil
        }
    }

    package func madeSpinCounts() throws -> [String: Int] {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("SELECT kind, count(*) FROM spin_made GROUP BY kind")
            var counts: [String: Int] = [:]
            for row in 0..<rows.count { counts[rows.text(row, 0) ?? ""] = Int(rows.int(row, 1) ?? 0) }
            return counts
        }
    }

    /// In byte order (`spin_made.name` is `COLLATE "C"`), from the primary key's index.
    package func madeSpins(prefix: String, after: String?, limit: Int) throws -> [(name: String, kind: String, sequence: UInt64)] {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("""
                SELECT name, kind, sequence FROM spin_made
                WHERE name >= $1 AND starts_with(name, $1) AND ($2::text IS NULL OR name > $2)
                ORDER BY name LIMIT $3
                """, [.text(prefix), after.map(PostgresValue.text) ?? .null, .int64(Int64(max(0, limit)))])
            return (0..<rows.count).map { row in
                (rows.text(row, 0) ?? "", rows.text(row, 1) ?? "", UInt64(clamping: rows.int(row, 2) ?? 0))
            }
        }
    }

    /// Runs `body` in one transaction, synced whatever `storage.fsync` says, after the
    /// fence's check of `spins` (on a cluster: the leases of their partitions, so that a
    /// node that lost one writes nothing of them). Reconnects first (see above).
    private func fencedChange(of spins: [String], _ body: (PostgresConnection) throws -> Void) throws {
        try locked {
            try reconnectIfLost()
            let connection = try live()
            try connection.transaction {
                try connection.execute("SET LOCAL synchronous_commit TO on")
                try fence?.check(spins: spins, connection: connection)
                try body(connection)
            }
        }
    }

    /// One fenced, synced transaction (`fencedChange`): what an earlier Spin of each name
    /// left is deleted, the rows and epochs written.
    package func make(_ spins: [(name: String, spin: MadeSpin, epoch: String)]) throws {
        guard !spins.isEmpty else { return }
        let names = spins.map(\.name)
        try fencedChange(of: names) { connection in
            try removeHistory(of: names, connection)
            _ = try connection.query("""
                INSERT INTO spin_made (name, kind, joined, outbox_base, resting, sequence, consumed)
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::bool[], $6::int8[], $7::text[])
                """, [.textArray(names), .textArray(spins.map(\.spin.kind)),
                      .textArray(spins.map { SpinDatabase.text(of: $0.spin.joined) }),
                      .int64Array(spins.map { Int64(clamping: $0.spin.outboxBase) }),
                      .boolArray(spins.map { $0.spin.resting != nil }),
                      .int64Array(spins.map { Int64(clamping: $0.spin.resting?.sequence ?? 0) }),
                      .textArray(spins.map { SpinDatabase.text(of: $0.spin.resting?.consumed ?? [:]) })])
            _ = try connection.query("""
                INSERT INTO spin_epochs (spin, epoch) SELECT * FROM unnest($1::text[], $2::text[])
                """, [.textArray(names), .textArray(spins.map(\.epoch))])
        }
        locked { for name in names { journals[name] = nil } }
    }

    /// The journal, snapshot, epoch and suspension of `names` (not their outbox rows: those
    /// are read by position, and a Spin made again starts its positions above them).
    private func removeHistory(of names: [String], _ connection: PostgresConnection) throws {
        for table in ["spin_journal", "spin_snapshots", "spin_epochs", "spin_suspensions"] {
            _ = try connection.query("DELETE FROM \(table) WHERE spin = ANY($1::text[])", [.textArray(names)])
        }
    }

    /// One fenced, synced `UPDATE` (`fencedChange`).
    package func rest(_ spin: String, sequence: UInt64, consumed: [String: UInt64]) throws {
        try fencedChange(of: [spin]) { connection in
            _ = try connection.query("""
                UPDATE spin_made SET resting = true, sequence = $2, consumed = $3 WHERE name = $1
                """, [.text(spin), .int64(Int64(clamping: sequence)), .text(SpinDatabase.text(of: consumed))])
        }
    }

    /// One fenced, synced transaction (`fencedChange`).
    package func delete(_ name: String) throws {
        try fencedChange(of: [name]) { connection in
            _ = try connection.query("DELETE FROM spin_made WHERE name = $1", [.text(name)])
            try removeHistory(of: [name], connection)
        }
        locked { journals[name] = nil }
    }

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

    private let url: String
    private let ownership: Ownership
    private let connectTimeout: Int
    /// Run inside the transaction of every append, before the records are inserted.
    private let fence: (any JournalFence)?
    // Everything below is guarded by `lock`: the journal's queue and the suspension
    // methods (any thread) share the connection.
    private let lock = NSLock()
    private var connection: PostgresConnection?
    /// The `synchronous_commit` the session has now (nil: unknown, set it before a commit).
    private var synchronousCommit: Bool?
    private var journals: [String: SpinJournal] = [:]

    private final class SpinJournal {
        /// Appended, not yet committed.
        var pending: [JournalRecord.Record] = []
        /// The sequence of the last committed record, nil while the journal has none.
        var committedLast: UInt64?
        /// The database lost commits it had answered (see `reopen`).
        var lostCommits = false

        init(committedLast: UInt64?) { self.committedLast = committedLast }
    }

    /// - Parameters:
    ///   - url: a libpq connection string (`postgresql://user:secret@db:5432/spin`).
    ///   - fence: a check run in the transaction of each append (a cluster's lease
    ///     check); nil checks nothing.
    package init(url: String, ownership: Ownership = .singleServer, connectTimeout: Int = 5,
                 fence: (any JournalFence)? = nil) {
        self.url = url
        self.ownership = ownership
        self.connectTimeout = connectTimeout
        self.fence = fence
    }

    package var location: String { "PostgreSQL database \(PostgresConnection.describe(connectionString: url))" }

    /// The journal table's rows of `spin`.
    package func journalName(of spin: String) -> String { "table spin_journal, spin = '\(spin)', in \(location)" }

    private var node: String {
        switch ownership {
        case .singleServer: Self.singleServerNode
        case .shared(let node): node
        }
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The open connection; throws when there is none or it was lost (only `probe`
    /// reconnects, taking the server's lock again first).
    private func live() throws -> PostgresConnection {
        guard let connection, connection.isConnected else {
            throw PostgresError(sqlState: PostgresError.connectionFailure, message: "the connection to the database is lost")
        }
        return connection
    }

    // MARK: Opening and recovery

    /// Connects, creates or migrates the tables, takes the database (single-server mode)
    /// and tells whether the last server of this node stopped cleanly.
    package func open() throws -> Bool {
        try locked {
            do {
                let connection = try connect()
                try PostgresSchema.migrate(connection)
                try takeOwnership(connection)
                self.connection = connection
                let rows = try connection.query("SELECT clean FROM spin_nodes WHERE node = $1", [.text(node)])
                return rows.count == 1 && rows.bool(0, 0) == true
            } catch {
                connection?.close()
                connection = nil
                throw OpenFailure(location: location, reason: error)
            }
        }
    }

    /// The database could not be opened (reached, migrated or taken).
    package struct OpenFailure: Error, CustomStringConvertible {
        package let location: String
        package let reason: any Error

        package var description: String { "\(location): \(reason)" }
    }

    /// Another server holds the database (single-server mode), or runs as this node.
    package struct InUse: Error, CustomStringConvertible {
        package let holder: String
        /// Set in a cluster: the node name the other process runs as.
        package var node: String? = nil
        package var description: String {
            if let node {
                return "another spin-server runs as node \"\(node)\" on this database; give each node its own cluster.node (SPIN_NODE)"
            }
            return "another spin-server uses this database (\(holder)); one database serves one server unless the servers form a cluster"
        }
    }

    private func connect() throws -> PostgresConnection {
        let connection = try PostgresConnection(url: url, timeoutSeconds: connectTimeout)
        synchronousCommit = nil
        return connection
    }

    /// Single-server mode: the session advisory lock, or `InUse` naming who holds it.
    /// The seam of clusters: `.shared` takes nothing here (leases are per partition).
    private func takeOwnership(_ connection: PostgresConnection) throws {
        if case .shared(let node) = ownership {
            // One process per node name: placement and leases are keyed by it.
            let taken = try connection.query("SELECT pg_try_advisory_lock(hashtextextended('spin-server node ' || $1, 0))",
                                             [.text(node)])
            guard taken.bool(0, 0) != true else { return }
            throw InUse(holder: "", node: node)
        }
        let key: [PostgresValue] = [.int64(Int64(PostgresSchema.lockNamespace)), .int64(Int64(PostgresSchema.singleServerLock))]
        let taken = try connection.query("SELECT pg_try_advisory_lock($1::int4, $2::int4)", key)
        guard taken.bool(0, 0) != true else { return }
        let holder = try? connection.query("""
            SELECT 'backend pid ' || a.pid || coalesce(' from ' || host(a.client_addr), ' on a local socket')
                   || ', connected since ' || date_trunc('second', a.backend_start)
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.classid = $1::int4::oid AND l.objid = $2::int4::oid AND l.granted
            """, key)
        throw InUse(holder: holder?.text(0, 0) ?? "another session holds spin-server's advisory lock")
    }

    /// Reads the snapshot, journal and epoch. A trailing run of records without its batch
    /// end (which one-statement commits never leave) is reported as a torn tail.
    package func read(spin: String, repair: Bool) throws -> StoredSpin {
        try locked {
            // A cluster node reads a Spin when it takes its lease, maybe just after the
            // database came back: no commit is under way then, so a new connection is safe.
            try reconnectIfLost()
            let connection = try live()
            let snapshot = try connection.query("SELECT document FROM spin_snapshots WHERE spin = $1", [.text(spin)])
            let epoch = try connection.query("SELECT epoch FROM spin_epochs WHERE spin = $1", [.text(spin)])
            let rows = try connection.query(
                "SELECT sequence, event, batch_end FROM spin_journal WHERE spin = $1 ORDER BY sequence", [.text(spin)])
            var records: [JournalRecord.Record] = []
            records.reserveCapacity(rows.count)
            for row in 0..<rows.count {
                records.append(JournalRecord.Record(sequence: UInt64(bitPattern: rows.int(row, 0) ?? 0),
                                                    payload: rows.bytes(row, 1) ?? [], endsBatch: rows.bool(row, 2) ?? true))
            }
            let outboxEnd = try connection.query(
                "SELECT coalesce(max(sender_position), 0)::int8 FROM spin_gear_outbox WHERE sender = $1", [.text(spin)])
            let lastOutboxPosition = UInt64(clamping: outboxEnd.int(0, 0) ?? 0)
            let whole = (records.lastIndex(where: \.endsBatch) ?? -1) + 1
            var damage: JournalRecord.Damage?
            if whole < records.count {
                damage = JournalRecord.Damage(kind: .tornTail, offset: whole,
                                              reason: "records from sequence \(records[whole].sequence) without their batch's last record",
                                              bytesAfter: records[whole...].reduce(0) { $0 + $1.payload.count })
                records.removeSubrange(whole...)
            }
            return StoredSpin(snapshot: snapshot.count == 1 ? snapshot.bytes(0, 0) : nil, records: records,
                              epoch: epoch.count == 1 ? epoch.text(0, 0) : nil, damage: damage,
                              lastOutboxPosition: lastOutboxPosition)
        }
    }

    /// Deletes the records after the last whole batch (when `read` reported them) and
    /// remembers where the journal's committed part ends.
    package func startJournal(spin: String, cuttingAt damage: JournalRecord.Damage?) throws {
        try locked {
            let connection = try live()
            let last = try connection.query(
                "SELECT max(sequence) FROM spin_journal WHERE spin = $1 AND batch_end", [.text(spin)]).int(0, 0)
            let committedLast = last.map { UInt64(bitPattern: $0) }
            if damage != nil { try deleteRecords(of: spin, after: committedLast, connection) }
            // A made Spin that rested is awake from here: a start (or the next owner of its
            // partition) reads it again.
            _ = try connection.query("UPDATE spin_made SET resting = false WHERE name = $1 AND resting", [.text(spin)])
            journals[spin] = SpinJournal(committedLast: committedLast)
        }
    }

    private func deleteRecords(of spin: String, after last: UInt64?, _ connection: PostgresConnection) throws {
        _ = try connection.query("DELETE FROM spin_journal WHERE spin = $1 AND sequence > $2",
                                 [.text(spin), .int64(last.map { Int64(bitPattern: $0) } ?? Int64.min)])
    }

    package func writeEpoch(_ epoch: String, spin: String) throws {
        try locked {
            _ = try live().query("""
                INSERT INTO spin_epochs (spin, epoch) VALUES ($1, $2)
                ON CONFLICT (spin) DO UPDATE SET epoch = excluded.epoch
                """, [.text(spin), .text(epoch)])
        }
    }

    /// This node's row in `spin_nodes` says it is running (not clean) until `markClean`.
    package func markInUse() throws {
        try locked { try setClean(false) }
    }

    /// The heartbeat is the lease loop's alone: a node whose server stopped (or has not
    /// started its lease loop yet) must not look alive to the others' placement.
    private func setClean(_ clean: Bool) throws {
        _ = try live().query("""
            INSERT INTO spin_nodes (node, clean) VALUES ($1, $2)
            ON CONFLICT (node) DO UPDATE SET clean = excluded.clean
            """, [.text(node), .bool(clean)])
    }

    // MARK: Writing

    /// Keeps the batch until `commit` (nothing reaches the database yet).
    package func append(_ batch: [JournalRecord.Record], spin: String) throws {
        locked { journals[spin]?.pending += batch }
    }

    /// Inserts everything appended to `spin` since the last commit in one statement: a
    /// lease fence's row check goes into that statement (one round trip, one transaction:
    /// `insertFenced`), another fence runs in a transaction with it. Outbox records among
    /// them go to `spin_gear_outbox` in the same transaction (`commitWithOutbox`).
    package func commit(spin: String, sync: Bool) throws {
        try locked {
            guard let journal = journals[spin], !journal.pending.isEmpty else { return }
            let connection = try live()
            if synchronousCommit != sync {
                try connection.execute("SET synchronous_commit TO \(sync ? "on" : "off")")
                synchronousCommit = sync
            }
            let (events, outbox) = Self.split(journal.pending)
            if !outbox.isEmpty {
                try commitWithOutbox(events, outbox, spin: spin, connection)
            } else if let fence, let lease = try fence.lease(of: spin) {
                try insertFenced(events, spin: spin, lease: lease, connection)
            } else if let fence {
                try connection.transaction {
                    try fence.check(spin: spin, connection: connection)
                    try insert(events, spin: spin, connection)
                }
            } else {
                try insert(events, spin: spin, connection)
            }
            journal.pending.removeAll(keepingCapacity: true)
            if let last = events.last { journal.committedLast = last.sequence }
        }
    }

    /// The event records and the outbox records of appended batches: an event record
    /// ends its batch when the batch's last record is an outbox record after it.
    static func split(_ records: [JournalRecord.Record]) -> (events: [JournalRecord.Record], outbox: [OutboxRecord]) {
        guard records.contains(where: { $0.sequence == OutboxRecord.journalSequence }) else { return (records, []) }
        var events: [JournalRecord.Record] = []
        var outbox: [OutboxRecord] = []
        for record in records {
            guard record.sequence == OutboxRecord.journalSequence else {
                events.append(record)
                continue
            }
            // Written by this server (`OutboxRecord.journalRecord`): always readable.
            if let entry = OutboxRecord(journalPayload: record.payload) { outbox.append(entry) }
            if record.endsBatch, !events.isEmpty { events[events.count - 1].endsBatch = true }
        }
        return (events, outbox)
    }

    /// One transaction: the outbox's advisory lock (so that outbox rows are numbered in
    /// commit order, which is the order nodes read them in), the fence, the event records,
    /// the outbox rows, and the notification that wakes every node's reader at commit.
    private func commitWithOutbox(_ events: [JournalRecord.Record], _ outbox: [OutboxRecord], spin: String,
                                  _ connection: PostgresConnection) throws {
        try connection.transaction {
            _ = try connection.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                                     [.int64(Int64(PostgresSchema.lockNamespace)), .int64(Int64(PostgresSchema.outboxLock))])
            if let fence {
                if !events.isEmpty, let lease = try fence.lease(of: spin) {
                    try insertFenced(events, spin: spin, lease: lease, connection)
                } else {
                    try fence.check(spin: spin, connection: connection)
                    if !events.isEmpty { try insert(events, spin: spin, connection) }
                }
            } else if !events.isEmpty {
                try insert(events, spin: spin, connection)
            }
            _ = try connection.query("""
                INSERT INTO spin_gear_outbox (gear, node, payload, sender, sender_position, cause)
                SELECT o.gear, $2, o.payload, $1, o.sender_position, o.cause
                FROM unnest($3::text[], $4::bytea[], $5::int8[], $6::int8[]) AS o(gear, payload, sender_position, cause)
                """, [.text(spin), .text(node), .textArray(outbox.map(\.gear)), .byteaArray(outbox.map(\.event)),
                      .int64Array(outbox.map { Int64(clamping: $0.position) }),
                      .int64Array(outbox.map { Int64(clamping: $0.cause) })])
            _ = try connection.query("SELECT pg_notify($1, '')", [.text(PostgresSchema.outboxChannel)])
        }
    }

    /// One `INSERT` of all `records` (arrays unnested: one round trip for any number).
    private func insert(_ records: [JournalRecord.Record], spin: String, _ connection: PostgresConnection) throws {
        _ = try connection.query("""
            INSERT INTO spin_journal (spin, sequence, event, batch_end)
            SELECT $1, r.sequence, r.event, r.batch_end FROM unnest($2::int8[], $3::bytea[], $4::bool[]) AS r(sequence, event, batch_end)
            """, [.text(spin), .int64Array(records.map { Int64(bitPattern: $0.sequence) }),
                  .byteaArray(records.map(\.payload)), .boolArray(records.map(\.endsBatch))])
    }

    /// The `INSERT` of `insert` and the lease check of `LeaseFence.check` in one
    /// statement, so in one transaction: the lease row is locked `FOR KEY SHARE` before any
    /// record is inserted (the `EXISTS` is evaluated first) and until the commit, and
    /// without it nothing is inserted (`FencedOut`).
    private func insertFenced(_ records: [JournalRecord.Record], spin: String, lease: FenceLease,
                              _ connection: PostgresConnection) throws {
        let stored = try connection.query("""
            WITH lease AS (
                SELECT 1 FROM spin_partitions WHERE \(FenceLease.condition(from: 5)) FOR KEY SHARE
            ), stored AS (
                INSERT INTO spin_journal (spin, sequence, event, batch_end)
                SELECT $1, r.sequence, r.event, r.batch_end FROM unnest($2::int8[], $3::bytea[], $4::bool[]) AS r(sequence, event, batch_end)
                WHERE EXISTS (SELECT 1 FROM lease)
                RETURNING 1
            )
            SELECT count(*) FROM stored
            """, [.text(spin), .int64Array(records.map { Int64(bitPattern: $0.sequence) }),
                  .byteaArray(records.map(\.payload)), .boolArray(records.map(\.endsBatch))] + lease.parameters)
        guard stored.int(0, 0) == Int64(records.count) else {
            throw FencedOut(node: lease.node, spin: spin, partition: lease.partition, epoch: lease.epoch)
        }
    }

    /// In one transaction: the new snapshot, the journal trimmed to `records` (the ones
    /// already there are kept, not written again).
    package func compact(spin: String, snapshot: [UInt8], records all: [JournalRecord.Record]) throws {
        // The outbox is `spin_gear_outbox`'s, trimmed by the nodes' readers.
        let records = all.filter { $0.sequence != OutboxRecord.journalSequence }
        try locked {
            guard let journal = journals[spin] else { return }
            let connection = try live()
            try connection.transaction {
                _ = try connection.query("""
                    INSERT INTO spin_snapshots (spin, document) VALUES ($1, $2)
                    ON CONFLICT (spin) DO UPDATE SET document = excluded.document, written_at = now()
                    """, [.text(spin), .bytea(snapshot)])
                guard let first = records.first, let last = records.last else {
                    _ = try connection.query("DELETE FROM spin_journal WHERE spin = $1", [.text(spin)])
                    return
                }
                let range: [PostgresValue] = [.text(spin), .int64(Int64(bitPattern: first.sequence)), .int64(Int64(bitPattern: last.sequence))]
                _ = try connection.query("DELETE FROM spin_journal WHERE spin = $1 AND (sequence < $2 OR sequence > $3)", range)
                let present = try connection.query("SELECT count(*) FROM spin_journal WHERE spin = $1 AND sequence BETWEEN $2 AND $3", range)
                if present.int(0, 0) != Int64(records.count) {
                    _ = try connection.query("DELETE FROM spin_journal WHERE spin = $1", [.text(spin)])
                    try insert(records, spin: spin, connection)
                }
            }
            journal.pending.removeAll()
            journal.committedLast = records.last?.sequence
        }
    }

    // MARK: Failures

    /// Forgets what was appended since the last commit (a failed commit stored nothing,
    /// or, when the connection broke during it, `reopen` deletes what it may have stored).
    package func discardUncommitted(spin: String) {
        locked { journals[spin]?.pending.removeAll() }
    }

    /// Reconnects when the connection was lost (taking the server's lock again), then
    /// makes a small write (this node's row says it is in use, as it already does) to see
    /// that the database takes writes. It leaves the heartbeat to the lease loop: a node
    /// that left the cluster must not look alive again.
    package func probe() throws {
        try locked {
            try reconnectIfLost()
            do {
                _ = try live().query("UPDATE spin_nodes SET clean = false WHERE node = $1", [.text(node)])
            } catch {
                // A broken connection libpq has not noticed yet: the next probe reconnects.
                if let error = error as? PostgresError, error.isConnectionFailure { connection?.close() }
                throw error
            }
        }
    }

    /// A new connection (the lock taken again) when there is none or it was lost. Under `lock`.
    private func reconnectIfLost() throws {
        guard connection?.isConnected != true else { return }
        connection?.close()
        connection = nil
        let fresh = try connect()
        do {
            try takeOwnership(fresh)
        } catch {
            fresh.close()
            throw error
        }
        connection = fresh
    }

    /// Deletes records after the last known commit: a commit cut off by a lost
    /// connection may have been stored without being acknowledged. Throws `LostCommits`
    /// when the journal ends before its last known commit (a database that crashed with
    /// `synchronous_commit` off): the Spin's state holds events the database no longer
    /// has, so it takes no more writes, and `markClean` refuses (the next start gives
    /// the Spin a new epoch).
    ///
    /// With a `fence` (a cluster node) this happens only under the lease, checked and
    /// locked in the same transaction: a node that lost the Spin meanwhile must not
    /// delete what the new owner committed after its last commit (it throws the
    /// fence's `FencedOut` and deletes nothing).
    @discardableResult
    package func reopen(spin: String) throws -> UInt64? {
        try locked {
            guard let journal = journals[spin] else { return nil }
            journal.pending.removeAll()
            let connection = try live()
            // A commit whose answer was lost may have landed: its journal rows go (the
            // Spin went back before them), but its outbox rows were announced and may have
            // been read already. They stay, and their positions are not given again (a
            // catching Spin that consumed one would drop a new event at that position).
            let outboxEnd = {
                UInt64(clamping: try connection.query(
                    "SELECT coalesce(max(sender_position), 0)::int8 FROM spin_gear_outbox WHERE sender = $1",
                    [.text(spin)]).int(0, 0) ?? 0)
            }
            let cut = { [self] in
                if let expected = journal.committedLast {
                    let found = try connection.query("SELECT max(sequence) FROM spin_journal WHERE spin = $1", [.text(spin)])
                        .int(0, 0).map { UInt64(bitPattern: $0) }
                    if found.map({ $0 < expected }) ?? true {
                        journal.lostCommits = true
                        throw LostCommits(spin: spin, expected: expected, found: found)
                    }
                }
                try deleteRecords(of: spin, after: journal.committedLast, connection)
            }
            guard let fence else {
                try cut()
                return try outboxEnd()
            }
            try connection.transaction {
                try fence.check(spin: spin, connection: connection)
                try cut()
            }
            return try outboxEnd()
        }
    }

    /// The database no longer has commits it acknowledged.
    package struct LostCommits: Error, CustomStringConvertible {
        package let spin: String
        package let expected: UInt64
        package let found: UInt64?
        package var description: String {
            "the database lost acknowledged commits of \(spin)'s journal: it ends at \(found.map(String.init) ?? "no record"), the last commit was \(expected) (did it crash with synchronous_commit off, storage.fsync none?); restart the server to recover what the database has, under a new epoch"
        }
    }

    // MARK: Closing

    /// Refused when a journal lost commits (`reopen`): the next start must not take the
    /// stop for a clean one.
    package func markClean() throws {
        try locked {
            if let lost = journals.first(where: { $0.value.lostCommits }) {
                throw LostCommits(spin: lost.key, expected: lost.value.committedLast ?? 0, found: nil)
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

    /// Closes the connection, which releases the single-server lock.
    package func close() {
        locked {
            journals = [:]
            connection?.close()
            connection = nil
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

/// A check run inside the transaction that appends a Spin's records, before them: a
/// cluster checks there that this node still holds the Spin's lease (and locks the lease
/// row until the commit). Throwing refuses the write: nothing of it is stored.
package protocol JournalFence: Sendable {
    func check(spin: String, connection: PostgresConnection) throws
    /// The lease row a write of `spin` must find (locked `FOR KEY SHARE` in the statement
    /// that inserts the records, instead of `check` in a transaction around it); throws
    /// when the write is refused before any row is read. Nil (the default): `check`.
    func lease(of spin: String) throws -> FenceLease?
    /// `check` of the Spins `spins` (once per lease row they need).
    func check(spins: [String], connection: PostgresConnection) throws
}

extension JournalFence {
    package func lease(of spin: String) throws -> FenceLease? { nil }

    package func check(spins: [String], connection: PostgresConnection) throws {
        for spin in spins { try check(spin: spin, connection: connection) }
    }
}

/// The `spin_partitions` row a fenced write needs: the Spin's partition, held by this
/// node under this epoch, unexpired.
package struct FenceLease: Sendable, Equatable {
    package var node: String
    package var partition: Int
    package var epoch: UInt64

    package init(node: String, partition: Int, epoch: UInt64) {
        self.node = node
        self.partition = partition
        self.epoch = epoch
    }

    /// The `WHERE` condition on `spin_partitions`, its parameters numbered from `first`
    /// (partition, node, epoch: `parameters`, in that order).
    package static func condition(from first: Int = 1) -> String {
        "partition = $\(first)::int4 AND node = $\(first + 1) AND epoch = $\(first + 2) AND expires_at > now()"
    }

    /// The parameters of `condition`, in order.
    package var parameters: [PostgresValue] {
        [.int64(Int64(partition)), .text(node), .int64(Int64(clamping: epoch))]
    }

}
