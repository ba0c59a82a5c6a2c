/// How a cluster cuts its Spins into `cluster.partitions` partitions: a Spin's partition
/// is a fixed hash of its name (or of its group's key), and a node owns Spins a
/// partition at a time (one lease row per partition, whatever the number of Spins in it).
///
///     partition(name) = fmix64(FNV-1a-64(utf8(groupKey(name) ?? name))) mod count
///
/// `groupKey` keeps the Spins that share a Gear together: for a Spin made from a kind
/// whose Gears are named with `{key}` it is the key (what the `*` of the kind's `names`
/// matched), so `feature-42` and `router-42`, both on Gear `auth-42`, hash `42` and live
/// on one node, where their Gear events never cross the network and sleep and wake
/// together; for every other Spin it is nil (the name is hashed).
///
/// FNV-1a 64 uses offset basis 0xcbf29ce484222325 and prime 0x100000001b3; `fmix64` is
/// MurmurHash3's 64-bit finalizer, which spreads FNV's weak high bits, so that names that
/// differ only in their last letter land in unrelated partitions. The hash is fixed and
/// documented (not Swift's per-process seeded `Hasher`), so every node, and an operator
/// with a calculator, computes the same partition.
package struct SpinPartitions: Sendable {
    /// How many partitions there are (`cluster.partitions`), at least 1.
    package let count: Int
    /// The key of the group a Spin is placed with, or nil to place it by its name.
    private let groupKey: @Sendable (String) -> String?

    package init(count: Int, groupKey: @escaping @Sendable (String) -> String? = { _ in nil }) {
        precondition(count >= 1, "a cluster has at least one partition")
        self.count = count
        self.groupKey = groupKey
    }

    /// The partition `spin` belongs to, in `0..<count`.
    package func partition(of spin: String) -> Int {
        let key = groupKey(spin) ?? spin
        return Int(Self.fmix64(Self.fnv1a64(key.utf8)) % UInt64(count))
    }

    /// Every partition.
    package var all: Range<Int> { 0..<count }

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
