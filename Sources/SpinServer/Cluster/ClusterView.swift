/// What the shared database says of the cluster at one moment: the node rows
/// (`spin_nodes`) and the lease rows of the partitions (`spin_partitions`), with times as instants of the
/// clock the caller decides with (a test's manual clock; in a server, the database's
/// timestamps mapped onto the local clock).
package struct ClusterView<Instant: InstantProtocol>: Sendable, Equatable where Instant.Duration == Duration {
    /// A node row: a server that announced itself, where it is reached, and when it
    /// last said it was alive.
    package struct Node: Sendable, Equatable {
        package var name: String
        /// The node's `cluster.advertise` URL.
        package var advertise: String
        /// Nil: the node has never sent a heartbeat.
        package var heartbeatAt: Instant?
        /// The version of each machine definition the node runs, by its stored name.
        package var definitions: [String: Int]

        package init(name: String, advertise: String, heartbeatAt: Instant?, definitions: [String: Int] = [:]) {
            self.name = name
            self.advertise = advertise
            self.heartbeatAt = heartbeatAt
            self.definitions = definitions
        }

        /// Alive: a heartbeat less than `leaseDuration` ago.
        package func isLive(now: Instant, leaseDuration: Duration) -> Bool {
            guard let heartbeatAt else { return false }
            return now < heartbeatAt.advanced(by: leaseDuration)
        }
    }

    /// A lease row: `node` owns the Spins of `partition` under fencing `epoch` until
    /// `expiresAt`.
    package struct Lease: Sendable, Equatable {
        package var partition: Int
        package var node: String
        /// Grows by one at every change of owner; the journal refuses writes of an older one.
        package var epoch: UInt64
        package var expiresAt: Instant
        /// The newest version of each machine definition a holder of the partition ran:
        /// its Spins may be recorded under them.
        package var definitions: [String: Int]

        package init(partition: Int, node: String, epoch: UInt64, expiresAt: Instant, definitions: [String: Int] = [:]) {
            self.partition = partition
            self.node = node
            self.epoch = epoch
            self.expiresAt = expiresAt
            self.definitions = definitions
        }

        /// Still in force at `now`.
        package func isValid(now: Instant) -> Bool { now < expiresAt }
    }

    package var nodes: [Node]
    /// The lease rows by partition.
    package var leases: [Int: Lease]

    package init(nodes: [Node] = [], leases: [Lease] = []) {
        self.nodes = nodes
        self.leases = Dictionary(leases.map { ($0.partition, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// The node row named `name`.
    package func node(named name: String) -> Node? {
        nodes.first { $0.name == name }
    }

    /// The names of the nodes alive at `now`, sorted.
    package func liveNodeNames(now: Instant, leaseDuration: Duration) -> [String] {
        nodes.filter { $0.isLive(now: now, leaseDuration: leaseDuration) }.map(\.name).sorted()
    }

    /// The lease of `partition` that is in force at `now`, if any.
    package func validLease(of partition: Int, now: Instant) -> Lease? {
        leases[partition].flatMap { $0.isValid(now: now) ? $0 : nil }
    }
}
