import Foundation

// Appending a Spin's records (with its Gear outbox rows and the journal fence) and what a
// failed write leaves (see `PostgresSpinStore`).
extension PostgresSpinStore {
    // MARK: Writing

    /// Keeps the batch until `commit` (nothing reaches the database yet).
    package func append(_ batch: [JournalRecord.Record], spin: String) throws {
        locked { journals[spin]?.pending += batch }
    }

    /// Inserts everything appended to `spin` since the last commit in one statement
    /// (`beginCommit`), and waits until it and every commit of `spin` before it completed.
    package func commit(spin: String, sync: Bool) throws {
        let outcome = CommitOutcome()
        beginCommit(spin: spin, sync: sync) { outcome.tell($0) }
        try outcome.wait()
    }

    /// Inserts everything appended to `spin` since the last commit in one statement on
    /// one of the pool's connections, after the commits of `spin` before it (or with the
    /// one still waiting for a connection): a lease fence's row check goes into that
    /// statement (one round trip, one transaction: `insertFenced`), another fence runs in
    /// a transaction with it. Outbox records among them go to `spin_gear_outbox` in the
    /// same transaction (`commitWithOutbox`). `done` is called on the connection's thread,
    /// or at once (nothing to wait for); see `PostgresCommitPipeline` for the order and
    /// the failures.
    package func beginCommit(spin: String, sync: Bool, done: @escaping @Sendable ((any Error)?) -> Void) {
        // Enqueued under the lock: a Spin's commits go in the order of their calls.
        locked {
            guard let journal = journals[spin] else { return done(nil) }
            guard let pipeline else {
                return done(PostgresError(sqlState: PostgresError.connectionFailure, message: "the connection to the database is lost"))
            }
            let records = journal.pending
            journal.pending.removeAll(keepingCapacity: true)
            pipeline.enqueue(records, spin: spin, chain: journal.chain, sync: sync, done: done)
        }
    }

    /// One commit of the pipeline, on a connection of its own: `records` of `spin` in
    /// one transaction. `session`: that connection's `synchronous_commit`.
    func store(_ records: [JournalRecord.Record], spin: String, sync: Bool, _ connection: PostgresConnection,
               session: inout Bool?) throws {
        guard !records.isEmpty else { return }
        do {
            if session != sync {
                try connection.execute("SET synchronous_commit TO \(sync ? "on" : "off")")
                session = sync
            }
            let (events, outbox) = Self.split(records)
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
        } catch let error as PostgresError where error.isConnectionFailure {
            // Lost: `probe` gives the pool a new one.
            connection.close()
            throw error
        }
    }

    /// The last committed sequence of `journal`, once none of its commits is on its way.
    func settled(_ journal: SpinJournal) -> UInt64? {
        guard let pipeline else { return journal.chain.committedLast }
        return pipeline.settled(journal.chain)
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
            _ = settled(journal)
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
            pipeline?.settle(journal.chain, committedLast: records.last?.sequence)
        }
    }

    // MARK: Failures

    /// Forgets what was appended since the last commit (a failed commit stored nothing,
    /// or, when the connection broke during it, `reopen` deletes what it may have stored;
    /// commits of `spin` still on their way complete as they would).
    package func discardUncommitted(spin: String) {
        locked { journals[spin]?.pending.removeAll() }
    }

    /// Reconnects when the connection was lost (taking the server's lock again), then
    /// makes a small write (this node's row says it is in use, as it already does) to see
    /// that the database takes writes, and gives the pool new connections for its lost
    /// ones. It leaves the heartbeat to the lease loop: a node that left the cluster must
    /// not look alive again.
    package func probe() throws {
        try locked {
            do {
                try reconnectIfLost()
                try markInUseNow()
            } catch let error as PostgresError where error.isConnectionFailure {
                // A broken connection libpq had not noticed (the commits fail on the
                // pool's): once more on a new one.
                connection?.close()
                try reconnectIfLost()
                try markInUseNow()
            }
            // The database is this server's again: the pool's lost connections come back.
            try refreshPool(checking: true)
        }
    }

    private func markInUseNow() throws {
        do {
            _ = try live().query("UPDATE spin_nodes SET clean = false WHERE node = $1", [.text(node)])
        } catch {
            if let error = error as? PostgresError, error.isConnectionFailure { connection?.close() }
            throw error
        }
    }

    /// New connections for the pool's lost ones (`checking`: asking each whether it
    /// works). Under `lock`, with the main connection holding the database.
    func refreshPool(checking: Bool = false) throws {
        try pipeline?.refresh(checking: checking) { try connect() }
    }

    /// A new connection (the lock taken again) when there is none or it was lost, and the
    /// pool's lost ones when they can be made (`probe` says when they cannot). Under `lock`.
    func reconnectIfLost() throws {
        if connection?.isConnected != true {
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
        try? refreshPool()
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
            // Every commit on its way lands (or not) before anything is cut.
            pipeline?.drain(journal.chain)
            let committedLast = journal.chain.committedLast
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
                if let expected = committedLast {
                    let found = try connection.query("SELECT max(sequence) FROM spin_journal WHERE spin = $1", [.text(spin)])
                        .int(0, 0).map { UInt64(bitPattern: $0) }
                    if found.map({ $0 < expected }) ?? true {
                        journal.lostCommits = true
                        throw LostCommits(spin: spin, expected: expected, found: found)
                    }
                }
                try deleteRecords(of: spin, after: committedLast, connection)
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
}

/// The outcome of a commit, for a caller that waits for it.
private final class CommitOutcome: @unchecked Sendable {
    private let told = DispatchSemaphore(value: 0)
    private var error: (any Error)?

    func tell(_ error: (any Error)?) {
        self.error = error
        told.signal()
    }

    func wait() throws {
        told.wait()
        if let error { throw error }
    }
}
