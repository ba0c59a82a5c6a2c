import Foundation

/// The `JournalFence` of one cluster node: a Spin's records are stored only while this
/// node serves the Spin under an epoch (`serve`) and the database's lease row still
/// names this node with that epoch, unexpired.
///
/// The check locks the lease row `FOR SHARE` until the append's transaction ends, so a
/// takeover (an `UPDATE` of that row) waits for the commit: a write and a takeover
/// never interleave, and once a takeover committed, no write of the old owner follows.
package final class LeaseFence: JournalFence, @unchecked Sendable {
    /// The node whose leases are checked.
    package let node: String
    // Guarded by `lock`: the epoch of each Spin this node serves.
    private let lock = NSLock()
    private var epochs: [String: UInt64] = [:]

    package init(node: String) {
        self.node = node
    }

    /// From now on, writes of `spin` are checked against the lease of `epoch`.
    package func serve(spin: String, epoch: UInt64) {
        lock.withLock { epochs[spin] = epoch }
    }

    /// From now on, every write of `spin` is refused (the Spin is no longer served here).
    package func stopServing(spin: String) {
        _ = lock.withLock { epochs.removeValue(forKey: spin) }
    }

    /// The lease row a write of `spin` needs (`PostgresSpinStore` checks and locks it in
    /// the statement that inserts the records, as `check` would); throws `FencedOut`
    /// when this node does not serve `spin`.
    package func lease(of spin: String) throws -> FenceLease? {
        guard let epoch = lock.withLock({ epochs[spin] }) else {
            throw FencedOut(node: node, spin: spin, epoch: nil)
        }
        return FenceLease(node: node, epoch: epoch)
    }

    /// Throws `FencedOut` unless this node serves `spin` and holds its lease under the
    /// served epoch now; locks the lease row until the transaction ends.
    package func check(spin: String, connection: PostgresConnection) throws {
        guard let epoch = lock.withLock({ epochs[spin] }) else {
            throw FencedOut(node: node, spin: spin, epoch: nil)
        }
        let rows = try connection.query("""
            SELECT 1 FROM spin_leases WHERE spin = $1 AND node = $2 AND epoch = $3 AND expires_at > now() FOR SHARE
            """, [.text(spin), .text(node), .int64(Int64(clamping: epoch))])
        guard rows.count == 1 else { throw FencedOut(node: node, spin: spin, epoch: epoch) }
    }
}

/// A write of a Spin was refused: this node does not (or no longer) hold its lease.
package struct FencedOut: Error, CustomStringConvertible, Equatable {
    /// The node whose write was refused.
    package let node: String
    /// The Spin it tried to write.
    package let spin: String
    /// The epoch this node served the Spin under; nil when it did not serve it at all.
    package let epoch: UInt64?

    package init(node: String, spin: String, epoch: UInt64?) {
        self.node = node
        self.spin = spin
        self.epoch = epoch
    }

    package var description: String {
        guard let epoch else { return "node \(node) does not serve Spin \(spin): it holds no lease of it" }
        return "node \(node) no longer holds the lease of Spin \(spin) (epoch \(epoch))"
    }
}
