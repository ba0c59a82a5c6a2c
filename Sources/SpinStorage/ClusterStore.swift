import Foundation

/// What the nodes of a cluster share besides the journals: who is alive (node rows with
/// heartbeats), who owns each partition of the Spins (lease rows with a fencing epoch,
/// `SpinPartitions`), and the Gear events
/// that cross nodes (an outbox). The PostgreSQL backend keeps them in its tables
/// (`PostgresClusterStore`); times are the database's, so that the nodes' own clocks
/// never decide who owns what.
///
/// Every write is conditional, so that two nodes whose views differ for a moment cannot
/// both own one partition under one epoch: see each method. The number of lease rows is
/// the number of partitions, whatever the number of Spins, so the work of a lease period
/// grows with nodes and partitions only.
package protocol ClusterStore: Sendable {
    /// Connects (and brings the tables up to date); before any other call.
    func open() throws

    /// Every node row and lease row, and the database's time when they were read.
    func readCluster() throws -> ClusterRows

    /// Records that `node` is alive now, is reached at `advertise` and runs `definitions`
    /// (the version of each machine definition it hosts, by its stored name), creating its row.
    func heartbeat(node: String, advertise: String, definitions: [String: Int]) throws

    /// Makes sure every node of the cluster cuts the Spins into the same `partitions`
    /// (`cluster.partitions`): the first node of a database records its count; a node
    /// with another count is refused (`PartitionCountMismatch`) while a node whose
    /// heartbeat is younger than `liveSeconds` is alive, and otherwise changes the count
    /// (the whole cluster stopped: nobody serves under the old one) and ends every
    /// lease, so that the next owners take them under new epochs.
    func agree(partitions: Int, liveSeconds: Double) throws

    /// Takes the lease of `partition` for `node` under `epoch`, for `seconds` from the
    /// database's now, if the row still has `epoch - 1` and has expired or is `node`'s own,
    /// or there is no row and `epoch` is 1; the row then says that its Spins may be
    /// recorded under `definitions` (the newest versions any holder ran). Returns the new
    /// expiry, nil when refused.
    func acquire(partition: Int, node: String, epoch: UInt64, seconds: Double, definitions: [String: Int]) throws -> Date?

    /// Pushes each lease's expiry to `seconds` from the database's now, in one statement,
    /// where the row still has `node` and the lease's epoch and has not expired. Returns
    /// the new expiry of each lease renewed; a partition missing from the answer was
    /// refused.
    func renew(_ leases: [PartitionLease], node: String, seconds: Double) throws -> [Int: Date]

    /// Ends the lease now (keeping its epoch), if the row still has `node` and `epoch`.
    func release(partition: Int, node: String, epoch: UInt64) throws

    /// `node` leaves the cluster (a graceful stop): its row no longer says it is alive,
    /// so no node places a Spin on it any more, and every node is told (`announce`).
    func leave(node: String) throws

    /// Tells every node's `waitForChange` that the node or lease rows changed (a lease
    /// was taken or given back, a node joined or left), so that they look at once
    /// instead of at their next tick.
    func announce() throws

    /// Waits up to `timeout` for an `announce` by any node (this one included); true
    /// when one came (spurious wake-ups are allowed).
    func waitForChange(timeout: Duration) throws -> Bool

    /// The outbox's events after position `after`, oldest first (commit order), at most
    /// `limit`: every Spin's Gear events, written by the journal commits that made them
    /// durable (`PostgresSpinStore`).
    func outbox(after: Int64, limit: Int) throws -> [OutboxEvent]

    /// The events on `gears` at positions after `after` and up to `through`, oldest first,
    /// at most `limit`, leaving out those at or before the sender's position in `consumed`
    /// (a Spin's consumption: what a Spin that starts on a node has not consumed yet).
    func outbox(gears: [String], after: Int64, through: Int64, consumed: [String: UInt64], limit: Int) throws -> [OutboxEvent]

    /// The newest position in the outbox (0 when empty): where a starting node begins.
    func outboxEnd() throws -> Int64

    /// Deletes the events older than `seconds`, but each sender's newest (it holds the
    /// sender's last position); returns how many went.
    func trimOutbox(olderThanSeconds seconds: Double) throws -> Int

    /// Waits up to `timeout` for a commit that wrote outbox events, on any node; true
    /// when one came (spurious wake-ups are allowed: the caller reads `outbox(after:limit:)`
    /// either way).
    func waitForPublish(timeout: Duration) throws -> Bool

    /// Closes its connections.
    func close()
}

/// The node and lease rows, with the database's time at the read.
package struct ClusterRows: Sendable, Equatable {
    package struct Node: Sendable, Equatable {
        package var name: String
        package var advertise: String
        package var heartbeatAt: Date?
        /// The version of each machine definition the node runs, by its stored name.
        package var definitions: [String: Int]

        package init(name: String, advertise: String, heartbeatAt: Date?, definitions: [String: Int] = [:]) {
            self.name = name
            self.advertise = advertise
            self.definitions = definitions
            self.heartbeatAt = heartbeatAt
        }
    }

    package struct Lease: Sendable, Equatable {
        package var partition: Int
        package var node: String
        package var epoch: UInt64
        package var expiresAt: Date
        /// The newest version of each machine definition a holder of the partition ran.
        package var definitions: [String: Int]

        package init(partition: Int, node: String, epoch: UInt64, expiresAt: Date, definitions: [String: Int] = [:]) {
            self.partition = partition
            self.node = node
            self.epoch = epoch
            self.expiresAt = expiresAt
            self.definitions = definitions
        }
    }

    /// The database's `now()` when the rows were read.
    package var now: Date
    package var nodes: [Node]
    package var leases: [Lease]

    package init(now: Date, nodes: [Node], leases: [Lease]) {
        self.now = now
        self.nodes = nodes
        self.leases = leases
    }
}

/// A lease to renew: a partition and the epoch this node holds it under.
package struct PartitionLease: Sendable, Equatable, Hashable {
    package var partition: Int
    package var epoch: UInt64

    package init(partition: Int, epoch: UInt64) {
        self.partition = partition
        self.epoch = epoch
    }
}

/// A node's `cluster.partitions` differs from the count the cluster's database records
/// while another node of the cluster is alive.
package struct PartitionCountMismatch: Error, CustomStringConvertible, Equatable {
    package let recorded: Int
    package let configured: Int

    package init(recorded: Int, configured: Int) {
        self.recorded = recorded
        self.configured = configured
    }

    package var description: String {
        "cluster.partitions is \(configured) here, but the cluster's database records \(recorded) and another node is alive: "
            + "every node must cut the Spins into the same partitions. Set cluster.partitions (or SPIN_CLUSTER_PARTITIONS) to "
            + "\(recorded), or stop every node and start them all with the new count"
    }
}

/// One Gear event in the outbox: its position (commit order, across the cluster), the
/// Gear, the node that wrote it, the event's JSON, and the Spin that propagated it with
/// its place in that Spin's outbox and the sequence of the transition that did.
package struct OutboxEvent: Sendable, Equatable {
    package var position: Int64
    package var gear: String
    package var node: String
    package var payload: [UInt8]
    /// Nil for a row a version-2 node published (never read by this server).
    package var sender: String?
    package var senderPosition: UInt64
    package var cause: UInt64

    package init(position: Int64, gear: String, node: String, payload: [UInt8], sender: String? = nil,
                 senderPosition: UInt64 = 0, cause: UInt64 = 0) {
        self.position = position
        self.gear = gear
        self.node = node
        self.payload = payload
        self.sender = sender
        self.senderPosition = senderPosition
        self.cause = cause
    }

    /// The sender's outbox record it holds.
    package var record: OutboxRecord {
        OutboxRecord(position: senderPosition, gear: gear, cause: cause, event: payload)
    }
}

extension ClusterStore {
    /// A heartbeat of a node that runs no versioned definition.
    package func heartbeat(node: String, advertise: String) throws {
        try heartbeat(node: node, advertise: advertise, definitions: [:])
    }

    /// An `acquire` by a node that runs no versioned definition.
    package func acquire(partition: Int, node: String, epoch: UInt64, seconds: Double) throws -> Date? {
        try acquire(partition: partition, node: node, epoch: epoch, seconds: seconds, definitions: [:])
    }
}
