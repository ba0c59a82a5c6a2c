import Foundation

// Opening a PostgreSQL store (connecting, migrating, taking ownership) and reading a
// Spin's snapshot and journal back (see `PostgresSpinStore`).
extension PostgresSpinStore {
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
                pipeline = PostgresCommitPipeline(connections: commitConnections) { [weak self] records, spin, sync, connection, session in
                    guard let self else { throw PostgresError(sqlState: PostgresError.connectionFailure, message: "the store was closed") }
                    try self.store(records, spin: spin, sync: sync, connection, session: &session)
                }
                try refreshPool()
                let rows = try connection.query("SELECT clean FROM spin_nodes WHERE node = $1", [.text(node)])
                return rows.count == 1 && rows.bool(0, 0) == true
            } catch {
                pipeline?.close()
                pipeline = nil
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

    func connect() throws -> PostgresConnection {
        try PostgresConnection(url: url, timeoutSeconds: connectTimeout)
    }

    /// Single-server mode: the session advisory lock, or `InUse` naming who holds it.
    /// The seam of clusters: `.shared` takes only the node's lock (leases are per
    /// partition).
    ///
    /// A lock still held is asked for again for up to `ownershipGrace` seconds before
    /// `InUse` is thrown. A session the database was told to end (`pg_terminate_backend`,
    /// or a server killed just before this one started) keeps its locks until its backend
    /// has exited, a few milliseconds after the connection was lost: reconnecting at once
    /// would otherwise find this server's own previous session in the way.
    func takeOwnership(_ connection: PostgresConnection) throws {
        let deadline = Date().addingTimeInterval(ownershipGrace)
        while true {
            do {
                return try takeOwnershipOnce(connection)
            } catch is InUse where Date() < deadline {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
    }

    private func takeOwnershipOnce(_ connection: PostgresConnection) throws {
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
        // No row: the holder let go between the two statements (the caller asks again).
        throw InUse(holder: holder?.text(0, 0) ?? "another session holds spin-server's advisory lock")
    }

    /// Reads the snapshot, journal and epoch. A trailing run of records without its batch
    /// end (which one-statement commits never leave), or records after a gap in the
    /// sequences (a commit that failed while a later one of the Spin went through,
    /// `PostgresCommitPipeline`: never acknowledged), is reported as a torn tail.
    package func read(spin: String, repair: Bool) throws -> StoredSpin {
        try locked {
            // A cluster node reads a Spin when it takes its lease, maybe just after the
            // database came back: no commit is under way then, so a new connection is safe.
            try reconnectIfLost()
            // Commits of an earlier turn of this Spin here land (or not) before it is read.
            if let earlier = journals[spin] { pipeline?.drain(earlier.chain) }
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
            let whole = Self.wholeCount(records)
            var damage: JournalRecord.Damage?
            if whole < records.count {
                let reason = whole > 0 && records[whole].sequence != records[whole - 1].sequence &+ 1
                    ? "records from sequence \(records[whole].sequence) after a gap from \(records[whole - 1].sequence) (a commit that failed while a later one went through, never acknowledged)"
                    : "records from sequence \(records[whole].sequence) without their batch's last record"
                damage = JournalRecord.Damage(kind: .tornTail, offset: whole, reason: reason,
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
            let committedLast: UInt64?
            if damage != nil {
                let rows = try connection.query("SELECT sequence, batch_end FROM spin_journal WHERE spin = $1 ORDER BY sequence",
                                                [.text(spin)])
                let records = (0..<rows.count).map {
                    JournalRecord.Record(sequence: UInt64(bitPattern: rows.int($0, 0) ?? 0), payload: [], endsBatch: rows.bool($0, 1) ?? true)
                }
                let whole = Self.wholeCount(records)
                committedLast = whole > 0 ? records[whole - 1].sequence : nil
                try deleteRecords(of: spin, after: committedLast, connection)
            } else {
                committedLast = try connection.query(
                    "SELECT max(sequence) FROM spin_journal WHERE spin = $1 AND batch_end", [.text(spin)]).int(0, 0)
                    .map { UInt64(bitPattern: $0) }
            }
            // A made Spin that rested is awake from here: a start (or the next owner of its
            // partition) reads it again.
            _ = try connection.query("UPDATE spin_made SET resting = false WHERE name = $1 AND resting", [.text(spin)])
            journals[spin] = SpinJournal(committedLast: committedLast)
        }
    }

    /// How many of `records` (in sequence order) form the journal: up to the first that
    /// does not follow the one before it (a gap), and of those up to the last batch end.
    static func wholeCount(_ records: [JournalRecord.Record]) -> Int {
        var contiguous = records.count
        for index in records.indices.dropFirst() where records[index].sequence != records[index - 1].sequence &+ 1 {
            contiguous = index
            break
        }
        return (records[..<contiguous].lastIndex(where: \.endsBatch) ?? -1) + 1
    }

    func deleteRecords(of spin: String, after last: UInt64?, _ connection: PostgresConnection) throws {
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
    func setClean(_ clean: Bool) throws {
        _ = try live().query("""
            INSERT INTO spin_nodes (node, clean) VALUES ($1, $2)
            ON CONFLICT (node) DO UPDATE SET clean = excluded.clean
            """, [.text(node), .bool(clean)])
    }
}
