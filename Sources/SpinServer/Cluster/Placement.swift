/// Where a Spin runs in a cluster: rendezvous (highest-random-weight) hashing of the
/// Spin's name over the names of the live nodes.
///
/// Every node scores every Spin with `weight(node:spin:)` and the Spin belongs to the
/// node with the highest score (on a tie, which a 64-bit hash makes rare, the node whose
/// name sorts first). The hash is fixed and documented, not Swift's per-process seeded
/// `Hasher`, so that every node — and a user with a pocket calculator — computes the
/// same answer:
///
///     weight(node, spin) = fmix64(FNV-1a-64(utf8(node) ++ [0x00] ++ utf8(spin)))
///
/// FNV-1a 64 uses offset basis 0xcbf29ce484222325 and prime 0x100000001b3; `fmix64` is
/// MurmurHash3's 64-bit finalizer, which spreads FNV's weak high bits, so that names
/// that differ only in their last letter (`spin-1`, `spin-2`) still score independently.
///
/// What this gives: when a node leaves, only its Spins move (each to the node with its
/// second-highest score); when a node joins, it takes about `1/n` of the Spins and
/// no Spin moves between two nodes that stayed.
package enum Placement {
    /// The node `spin` belongs to among `nodes`; nil when `nodes` is empty.
    package static func owner<Nodes: Sequence<String>>(of spin: String, among nodes: Nodes) -> String? {
        var best: (node: String, weight: UInt64)?
        for node in nodes {
            let score = weight(node: node, spin: spin)
            if let current = best, current.weight > score || (current.weight == score && current.node <= node) {
                continue
            }
            best = (node, score)
        }
        return best?.node
    }

    /// The nodes in the order `spin` prefers them: the owner first, then who takes over
    /// if it leaves, and so on.
    package static func preference(of spin: String, among nodes: [String]) -> [String] {
        nodes.map { ($0, weight(node: $0, spin: spin)) }
            .sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
            .map(\.0)
    }

    /// The score of `spin` on `node`, as documented on `Placement`.
    package static func weight(node: String, spin: String) -> UInt64 {
        var hash = fnv1a64(node.utf8)
        hash = fnv1a64([0], continuing: hash)
        hash = fnv1a64(spin.utf8, continuing: hash)
        return fmix64(hash)
    }

    /// FNV-1a, 64 bits, over `bytes`, starting from `hash` (the offset basis by default).
    package static func fnv1a64<Bytes: Sequence<UInt8>>(_ bytes: Bytes, continuing hash: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        var hash = hash
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// MurmurHash3's 64-bit finalizer: every input bit affects every output bit.
    package static func fmix64(_ value: UInt64) -> UInt64 {
        var k = value
        k ^= k >> 33
        k = k &* 0xff51_afd7_ed55_8ccd
        k ^= k >> 33
        k = k &* 0xc4ce_b9fe_1a85_ec53
        k ^= k >> 33
        return k
    }
}
