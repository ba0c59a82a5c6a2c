import Foundation

/// The `JournalFence` of one cluster node: a Spin's records are stored only while this
/// node serves the Spin's partition (`SpinPartitions`) under an epoch (`serve`) and the
/// database's lease row of that partition still names this node with that epoch,
/// unexpired.
///
/// The check locks the lease row `FOR KEY SHARE` until the append's transaction ends. A
/// takeover changes the row's epoch, a key column (`spin_partitions_epoch` is a unique
/// index on it), so its `UPDATE` needs the row's strongest lock and waits for the
/// commit: a write and a takeover never interleave, and once a takeover committed, no
/// write of the old owner follows. A renewal changes only `expires_at`, whose lock
/// (`FOR NO KEY UPDATE`) does not conflict with the writes' locks: however busy a
/// partition's Spins, no write ever holds up the renewal of its lease, and the renewal
/// (every lease of a node in one statement) and the writes never wait for one another in
/// a cycle.
package final class LeaseFence: JournalFence, @unchecked Sendable {
    /// The node whose leases are checked.
    package let node: String
    /// How Spins map to the partitions whose leases are checked.
    package let partitions: SpinPartitions
    // Guarded by `lock`: the epoch of each partition this node serves.
    private let lock = NSLock()
    private var epochs: [Int: UInt64] = [:]

    package init(node: String, partitions: SpinPartitions) {
        self.node = node
        self.partitions = partitions
    }

    /// From now on, writes of the Spins of `partition` are checked against the lease of
    /// `epoch`.
    package func serve(partition: Int, epoch: UInt64) {
        lock.withLock { epochs[partition] = epoch }
    }

    /// From now on, every write of a Spin of `partition` is refused (the partition is no
    /// longer served here).
    package func stopServing(partition: Int) {
        _ = lock.withLock { epochs.removeValue(forKey: partition) }
    }

    /// The lease row a write of `spin` needs (`PostgresSpinStore` checks and locks it in
    /// the statement that inserts the records, as `check` would); throws `FencedOut`
    /// when this node does not serve `spin`'s partition.
    package func lease(of spin: String) throws -> FenceLease? {
        let partition = partitions.partition(of: spin)
        guard let epoch = lock.withLock({ epochs[partition] }) else {
            throw FencedOut(node: node, spin: spin, partition: partition, epoch: nil)
        }
        return FenceLease(node: node, partition: partition, epoch: epoch)
    }

    /// `check` for each partition of `spins`, once each, in ascending order.
    package func check(spins: [String], connection: PostgresConnection) throws {
        let first = Dictionary(spins.map { (partitions.partition(of: $0), $0) }, uniquingKeysWith: { first, _ in first })
        for (_, spin) in first.sorted(by: { $0.key < $1.key }) { try check(spin: spin, connection: connection) }
    }

    /// Throws `FencedOut` unless this node serves `spin`'s partition and holds its lease
    /// under the served epoch now; locks the lease row until the transaction ends.
    package func check(spin: String, connection: PostgresConnection) throws {
        guard let lease = try lease(of: spin) else { return }
        let rows = try connection.query("SELECT 1 FROM spin_partitions WHERE \(FenceLease.condition()) FOR KEY SHARE",
                                        lease.parameters)
        guard rows.count == 1 else { throw FencedOut(node: node, spin: spin, partition: lease.partition, epoch: lease.epoch) }
    }
}

/// A write of a Spin was refused: this node does not (or no longer) hold its lease.
package struct FencedOut: Error, CustomStringConvertible, Equatable {
    /// The node whose write was refused.
    package let node: String
    /// The Spin it tried to write.
    package let spin: String
    /// The Spin's partition.
    package let partition: Int
    /// The epoch this node served the partition under; nil when it did not serve it at all.
    package let epoch: UInt64?

    package init(node: String, spin: String, partition: Int, epoch: UInt64?) {
        self.node = node
        self.spin = spin
        self.partition = partition
        self.epoch = epoch
    }

    package var description: String {
        guard let epoch else {
            return "node \(node) does not serve Spin \(spin): it holds no lease of its partition \(partition)"
        }
        return "node \(node) no longer holds the lease of Spin \(spin)'s partition \(partition) (epoch \(epoch))"
    }
}
