import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The cluster tables of the PostgreSQL backend (`spin_nodes`, `spin_partitions`,
/// `spin_cluster_settings`, `spin_gear_outbox`): heartbeats, the partitions' leases and
/// the Gear outbox of `ClusterStore`, on connections of its own (not the journal's).
///
/// - One connection runs the lease, heartbeat and outbox statements, one caller at a
///   time. A statement that meets a lost connection throws; the next call reconnects.
/// - Two more connections `LISTEN`, one on `PostgresSchema.outboxChannel` for
///   `waitForPublish`, one on `PostgresSchema.clusterChannel` for `waitForChange` (one
///   waiter at a time each); each reconnects the same way, and the first wait after a
///   reconnect returns true at once (a notification may have come while it was away).
/// - Times are the database's `now()` (the transaction's start), read back as `Date`s.
/// - The Gear outbox's rows are written by the journal's commits (`PostgresSpinStore`);
///   here they are read, in commit order, and trimmed (`trimOutbox`).
package final class PostgresClusterStore: ClusterStore, @unchecked Sendable {
    private let url: String
    private let connectTimeout: Int
    // Guarded by `lock`: the statements' connection, and whether `close` was called (and
    // no `open` since).
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private var closed = false
    /// The listening connections of `waitForPublish` and `waitForChange`.
    private let publishes: Listener
    private let changes: Listener
    /// A pipe whose write end `close` writes to, waking the waits in `poll`.
    private let wakeRead: Int32
    private let wakeWrite: Int32


    /// - Parameters:
    ///   - url: a libpq connection string, as for `PostgresSpinStore`.
    ///   - connectTimeout: seconds to wait for each connect.
    package init(url: String, connectTimeout: Int = 5) {
        self.url = url
        self.connectTimeout = connectTimeout
        publishes = Listener(channel: PostgresSchema.outboxChannel)
        changes = Listener(channel: PostgresSchema.clusterChannel)
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    deinit {
        close()
        if wakeRead >= 0 { Glibc.close(wakeRead) }
        if wakeWrite >= 0 { Glibc.close(wakeWrite) }
    }

    /// Connects the connections and creates or migrates the tables.
    package func open() throws {
        try locked {
            let connection = try PostgresConnection(url: url, timeoutSeconds: connectTimeout)
            try PostgresSchema.migrate(connection)
            self.connection?.close()
            self.connection = connection
            closed = false
        }
        for listener in [publishes, changes] { try listener.open(url: url, timeoutSeconds: connectTimeout) }
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Runs `body` on the statements' connection (connecting first when there is none);
    /// a connection failure closes it, so that the next call reconnects. Throws `Closed`
    /// after `close`.
    private func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try locked {
            guard !closed else { throw Closed() }
            return try PostgresConnection.reusing(&connection, connect: {
                try PostgresConnection(url: url, timeoutSeconds: connectTimeout)
            }, body)
        }
    }

    private static func date(_ rows: PostgresRows) -> Date? {
        rows.count == 1 ? rows.double(0, 0).map { Date(timeIntervalSince1970: $0) } : nil
    }

    // MARK: Nodes and leases

    package func readCluster() throws -> ClusterRows {
        try withConnection { connection in
            // One snapshot for both tables, at the `now()` reported.
            try connection.transaction {
                try connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                let now = try connection.query("SELECT extract(epoch FROM now())::float8").double(0, 0) ?? 0
                let nodeRows = try connection.query("""
                    SELECT node, coalesce(advertise, ''), extract(epoch FROM heartbeat_at)::float8, definitions
                    FROM spin_nodes ORDER BY node
                    """)
                let nodes = (0..<nodeRows.count).map { row in
                    ClusterRows.Node(name: nodeRows.text(row, 0) ?? "", advertise: nodeRows.text(row, 1) ?? "",
                                     heartbeatAt: nodeRows.double(row, 2).map { Date(timeIntervalSince1970: $0) },
                                     definitions: SpinDatabase.joined(from: nodeRows.text(row, 3) ?? "", as: Int.self))
                }
                let leaseRows = try connection.query("""
                    SELECT partition::int8, node, epoch, extract(epoch FROM expires_at)::float8, definitions
                    FROM spin_partitions ORDER BY partition
                    """)
                let leases = (0..<leaseRows.count).map { row in
                    ClusterRows.Lease(partition: Int(leaseRows.int(row, 0) ?? -1), node: leaseRows.text(row, 1) ?? "",
                                      epoch: UInt64(clamping: leaseRows.int(row, 2) ?? 0),
                                      expiresAt: Date(timeIntervalSince1970: leaseRows.double(row, 3) ?? 0),
                                      definitions: SpinDatabase.joined(from: leaseRows.text(row, 4) ?? "", as: Int.self))
                }
                return ClusterRows(now: Date(timeIntervalSince1970: now), nodes: nodes, leases: leases)
            }
        }
    }

    /// Creates or refreshes `node`'s row (its `clean` flag is the journal store's).
    package func heartbeat(node: String, advertise: String, definitions: [String: Int]) throws {
        try withConnection { connection in
            _ = try connection.query("""
                INSERT INTO spin_nodes (node, advertise, heartbeat_at, definitions) VALUES ($1, $2, now(), $3)
                ON CONFLICT (node) DO UPDATE SET advertise = excluded.advertise, heartbeat_at = now(),
                    definitions = excluded.definitions
                """, [.text(node), .text(advertise), .text(SpinDatabase.text(of: definitions))])
        }
    }

    /// In one transaction: records `partitions` when the database has no count yet;
    /// with another count, refuses while a node is alive, else records the new count and
    /// ends every lease (a partition's Spins differ under the new count, so no lease of
    /// the old one may fence a write any more).
    package func agree(partitions: Int, liveSeconds: Double) throws {
        try withConnection { connection in
            try connection.transaction {
                _ = try connection.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                                         [.int64(Int64(PostgresSchema.lockNamespace)), .int64(Int64(PostgresSchema.migrationLock))])
                let found = try connection.query("SELECT value FROM spin_cluster_settings WHERE name = 'partitions'")
                let recorded = found.count == 1 ? found.text(0, 0).flatMap { Int($0) } : nil
                if recorded == partitions { return }
                if let recorded {
                    let live = try connection.query("""
                        SELECT count(*) FROM spin_nodes WHERE heartbeat_at > now() - $1 * interval '1 second'
                        """, [.float8(liveSeconds)])
                    if (live.int(0, 0) ?? 0) > 0 {
                        throw PartitionCountMismatch(recorded: recorded, configured: partitions)
                    }
                    _ = try connection.query("UPDATE spin_partitions SET expires_at = least(expires_at, now())")
                }
                _ = try connection.query("""
                    INSERT INTO spin_cluster_settings (name, value) VALUES ('partitions', $1)
                    ON CONFLICT (name) DO UPDATE SET value = excluded.value
                    """, [.text(String(partitions))])
            }
        }
    }

    /// One statement either way: epoch 1 inserts a row when there is none; a later epoch
    /// updates the row under its conditions (a concurrent writer of the row makes this
    /// one wait, then the conditions are checked again on what it wrote).
    package func acquire(partition: Int, node: String, epoch: UInt64, seconds: Double,
                         definitions: [String: Int]) throws -> Date? {
        guard epoch >= 1, epoch <= UInt64(Int64.max) else { return nil }
        let parameters: [PostgresValue] = [.int64(Int64(partition)), .text(node), .int64(Int64(epoch)), .float8(seconds),
                                           .text(SpinDatabase.text(of: definitions))]
        return try withConnection { connection in
            if epoch == 1 {
                return Self.date(try connection.query("""
                    INSERT INTO spin_partitions (partition, node, epoch, expires_at, definitions)
                    VALUES ($1::int4, $2, $3, now() + $4 * interval '1 second', $5)
                    ON CONFLICT DO NOTHING
                    RETURNING extract(epoch FROM expires_at)::float8
                    """, parameters))
            }
            return Self.date(try connection.query("""
                UPDATE spin_partitions SET node = $2, epoch = $3, expires_at = now() + $4 * interval '1 second',
                    definitions = $5
                WHERE partition = $1::int4 AND epoch = $3 - 1 AND (expires_at <= now() OR node = $2)
                RETURNING extract(epoch FROM expires_at)::float8
                """, parameters))
        }
    }

    /// One `UPDATE` for every lease, whatever their number.
    package func renew(_ leases: [PartitionLease], node: String, seconds: Double) throws -> [Int: Date] {
        let leases = leases.filter { $0.epoch <= UInt64(Int64.max) }
        guard !leases.isEmpty else { return [:] }
        return try withConnection { connection in
            let rows = try connection.query("""
                UPDATE spin_partitions AS p SET expires_at = now() + $2 * interval '1 second'
                FROM unnest($3::int8[], $4::int8[]) AS l(partition, epoch)
                WHERE p.partition = l.partition AND p.epoch = l.epoch AND p.node = $1 AND p.expires_at > now()
                RETURNING p.partition::int8, extract(epoch FROM p.expires_at)::float8
                """, [.text(node), .float8(seconds), .int64Array(leases.map { Int64($0.partition) }),
                      .int64Array(leases.map { Int64($0.epoch) })])
            var renewed: [Int: Date] = [:]
            for row in 0..<rows.count {
                guard let partition = rows.int(row, 0), let expires = rows.double(row, 1) else { continue }
                renewed[Int(partition)] = Date(timeIntervalSince1970: expires)
            }
            return renewed
        }
    }

    package func release(partition: Int, node: String, epoch: UInt64) throws {
        guard epoch <= UInt64(Int64.max) else { return }
        try withConnection { connection in
            _ = try connection.query("""
                UPDATE spin_partitions SET expires_at = least(expires_at, now())
                WHERE partition = $1::int4 AND node = $2 AND epoch = $3
                """, [.int64(Int64(partition)), .text(node), .int64(Int64(epoch))])
        }
    }

    package func leave(node: String) throws {
        try withConnection { connection in
            try connection.transaction {
                _ = try connection.query("UPDATE spin_nodes SET heartbeat_at = NULL WHERE node = $1", [.text(node)])
                try connection.execute("NOTIFY \(PostgresSchema.clusterChannel)")
            }
        }
    }

    package func announce() throws {
        try withConnection { connection in try connection.execute("NOTIFY \(PostgresSchema.clusterChannel)") }
    }

    // MARK: Gear outbox

    /// The columns of an outbox row, in the order `event(_:at:)` reads them.
    private static let outboxColumns = "position, gear, node, payload, sender, sender_position, cause"

    private static func event(_ rows: PostgresRows, at row: Int) -> OutboxEvent {
        OutboxEvent(position: rows.int(row, 0) ?? 0, gear: rows.text(row, 1) ?? "", node: rows.text(row, 2) ?? "",
                    payload: rows.bytes(row, 3) ?? [], sender: rows.text(row, 4),
                    senderPosition: UInt64(clamping: rows.int(row, 5) ?? 0), cause: UInt64(clamping: rows.int(row, 6) ?? 0))
    }

    /// Rows of Spins' outboxes only (rows a version-2 node published have no sender).
    package func outbox(after: Int64, limit: Int) throws -> [OutboxEvent] {
        try withConnection { connection in
            let rows = try connection.query("""
                SELECT \(Self.outboxColumns) FROM spin_gear_outbox
                WHERE position > $1 AND sender IS NOT NULL ORDER BY position LIMIT $2
                """, [.int64(after), .int64(Int64(max(limit, 0)))])
            return (0..<rows.count).map { Self.event(rows, at: $0) }
        }
    }

    /// One statement: the consumed positions go in as two arrays, joined by sender.
    package func outbox(gears: [String], after: Int64, through: Int64, consumed: [String: UInt64],
                        limit: Int) throws -> [OutboxEvent] {
        let senders = consumed.keys.sorted()
        return try withConnection { connection in
            let rows = try connection.query("""
                SELECT \(Self.outboxColumns) FROM spin_gear_outbox o
                WHERE o.gear = ANY($1::text[]) AND o.position > $2 AND o.position <= $3 AND o.sender IS NOT NULL
                  AND o.sender_position > coalesce((SELECT c.position FROM unnest($4::text[], $5::int8[]) AS c(sender, position)
                                                    WHERE c.sender = o.sender), 0)
                ORDER BY o.position LIMIT $6
                """, [.textArray(gears), .int64(after), .int64(through), .textArray(senders),
                      .int64Array(senders.map { Int64(clamping: consumed[$0] ?? 0) }), .int64(Int64(max(limit, 0)))])
            return (0..<rows.count).map { Self.event(rows, at: $0) }
        }
    }

    package func outboxEnd() throws -> Int64 {
        try withConnection { connection in
            try connection.query("SELECT coalesce(max(position), 0)::int8 FROM spin_gear_outbox").int(0, 0) ?? 0
        }
    }

    /// Keeps every sender's newest row: it holds the sender's last position.
    package func trimOutbox(olderThanSeconds seconds: Double) throws -> Int {
        try withConnection { connection in
            let rows = try connection.query("""
                WITH trimmed AS (
                    DELETE FROM spin_gear_outbox o
                    WHERE o.published_at < now() - $1 * interval '1 second'
                      AND (o.sender IS NULL OR o.sender_position < (SELECT max(n.sender_position) FROM spin_gear_outbox n
                                                                   WHERE n.sender = o.sender))
                    RETURNING 1
                )
                SELECT count(*) FROM trimmed
                """, [.float8(seconds)])
            return Int(rows.int(0, 0) ?? 0)
        }
    }

    /// Waits on the outbox's listening connection. A wait under way when `close` is
    /// called, and every call after it (until another `open`), throws `Closed`.
    package func waitForPublish(timeout: Duration) throws -> Bool {
        try publishes.wait(timeout: timeout, url: url, timeoutSeconds: connectTimeout, wake: wakeRead,
                           isClosed: { self.locked { self.closed } })
    }

    /// Waits on the cluster channel's listening connection, as `waitForPublish` does.
    package func waitForChange(timeout: Duration) throws -> Bool {
        try changes.wait(timeout: timeout, url: url, timeoutSeconds: connectTimeout, wake: wakeRead,
                         isClosed: { self.locked { self.closed } })
    }

    /// One connection that `LISTEN`s on `channel`, with one waiter at a time.
    private final class Listener: @unchecked Sendable {
        let channel: String
        // Guarded by `lock`.
        private let lock = NSLock()
        private var connection: PostgresConnection?

        init(channel: String) {
            self.channel = channel
        }

        func open(url: String, timeoutSeconds: Int) throws {
            try lock.withLock {
                connection?.close()
                connection = try listen(url: url, timeoutSeconds: timeoutSeconds)
            }
        }

        /// True when a notification came within `timeout`, or when the connection had to
        /// be made again (one may have been missed meanwhile).
        func wait(timeout: Duration, url: String, timeoutSeconds: Int, wake: Int32, isClosed: () -> Bool) throws -> Bool {
            try lock.withLock {
                guard !isClosed() else { throw Closed() }
                guard let connection, connection.isConnected else {
                    self.connection?.close()
                    self.connection = nil
                    self.connection = try listen(url: url, timeoutSeconds: timeoutSeconds)
                    return true
                }
                do {
                    let received = try connection.waitForNotifications(timeout: timeout, wake: wake >= 0 ? wake : nil)
                    guard !isClosed() else { throw Closed() }
                    return received > 0
                } catch let error as Closed {
                    throw error
                } catch {
                    connection.close()
                    throw error
                }
            }
        }

        /// Closes the connection (after `close` woke the waiter, so the lock is free soon).
        func close() {
            lock.withLock {
                connection?.close()
                connection = nil
            }
        }

        private func listen(url: String, timeoutSeconds: Int) throws -> PostgresConnection {
            let connection = try PostgresConnection(url: url, timeoutSeconds: timeoutSeconds)
            try connection.execute("LISTEN \(channel)")
            return connection
        }
    }

    /// The store was closed (`close`, and no `open` since).
    package struct Closed: Error, CustomStringConvertible {
        package var description: String { "the cluster store is closed" }
    }

    /// Closes the connections; a wait under way throws `Closed`, and so
    /// does every later call until another `open`.
    package func close() {
        locked {
            closed = true
            connection?.close()
            connection = nil
        }
        if wakeWrite >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        publishes.close()
        changes.close()
        // Empty the pipe, so that a later open waits again.
        var bytes = [UInt8](repeating: 0, count: 64)
        while wakeRead >= 0, read(wakeRead, &bytes, bytes.count) > 0 {}
    }
}
