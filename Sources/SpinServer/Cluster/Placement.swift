import SpinStorage

/// Where a partition of the Spins runs in a cluster (`SpinPartitions`: a Spin goes
/// where its partition goes): rendezvous (highest-random-weight) hashing of the
/// partition over the names of the live nodes.
///
/// Every node scores every partition with `weight(node:key:)`, the key being the
/// partition's number in decimal (`"17"`), and the partition belongs to the node with
/// the highest score (on a tie, which a 64-bit hash makes rare, the node whose name
/// sorts first). The hash is fixed and documented, not Swift's per-process seeded
/// `Hasher`, so that every node — and a user with a pocket calculator — computes the
/// same answer:
///
///     weight(node, key) = fmix64(FNV-1a-64(utf8(node) ++ [0x00] ++ utf8(key)))
///
/// with `SpinPartitions`' FNV-1a 64 and `fmix64`.
///
/// What this gives: when a node leaves, only its partitions move (each to the node with
/// its second-highest score); when a node joins, it takes about `1/n` of them and no
/// partition moves between two nodes that stayed.
package enum Placement {
    /// The node `partition` belongs to among `nodes`; nil when `nodes` is empty.
    package static func owner<Nodes: Sequence<String>>(of partition: Int, among nodes: Nodes) -> String? {
        owner(key: String(partition), among: nodes)
    }

    /// The node the key `key` belongs to among `nodes`; nil when `nodes` is empty.
    package static func owner<Nodes: Sequence<String>>(key: String, among nodes: Nodes) -> String? {
        var best: (node: String, weight: UInt64)?
        for node in nodes {
            let score = weight(node: node, key: key)
            if let current = best, current.weight > score || (current.weight == score && current.node <= node) {
                continue
            }
            best = (node, score)
        }
        return best?.node
    }

    /// The nodes in the order `partition` prefers them: the owner first, then who takes
    /// over if it leaves, and so on.
    package static func preference(of partition: Int, among nodes: [String]) -> [String] {
        nodes.map { ($0, weight(node: $0, key: String(partition))) }
            .sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
            .map(\.0)
    }

    /// The node `partition` belongs to among `nodes` (each with the version of each
    /// machine definition it runs), when its Spins may be recorded under `recorded` (the
    /// newest versions a node that held it ran): the owner among the nodes that run
    /// none of those definitions at an older version, so that during a rolling upgrade a
    /// partition a node on the new versions held never goes back to a node on the old
    /// ones while one on the new runs. When no node does (every node was rolled back),
    /// among all: a Spin recorded under a newer version is then unrecoverable there, as
    /// on a single server. Nil when `nodes` is empty.
    package static func owner(of partition: Int, among nodes: [String: [String: Int]], recorded: [String: Int]) -> String? {
        let able = nodes.filter { covers($0.value, recorded) }.map(\.key)
        return owner(of: partition, among: able.isEmpty ? Array(nodes.keys) : able)
    }

    /// Whether a node running `definitions` may take Spins recorded under `recorded`: it
    /// runs none of those definitions at an older version (one it does not run is not
    /// its concern).
    package static func covers(_ definitions: [String: Int], _ recorded: [String: Int]) -> Bool {
        recorded.allSatisfy { name, version in definitions[name].map { $0 >= version } ?? true }
    }

    /// The score of `key` on `node`, as documented on `Placement`.
    package static func weight(node: String, key: String) -> UInt64 {
        var hash = SpinPartitions.fnv1a64(node.utf8)
        hash = SpinPartitions.fnv1a64([0], continuing: hash)
        hash = SpinPartitions.fnv1a64(key.utf8, continuing: hash)
        return SpinPartitions.fmix64(hash)
    }
}
