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
