/// How a cluster cuts its Spins into `cluster.partitions` partitions: a Spin's partition
/// is a fixed hash of its name, and a node owns Spins a partition at a time (one lease
/// row per partition, whatever the number of Spins in it).
///
///     partition(name) = fmix64(FNV-1a-64(utf8(name))) mod count
///
/// FNV-1a 64 uses offset basis 0xcbf29ce484222325 and prime 0x100000001b3; `fmix64` is
/// MurmurHash3's 64-bit finalizer, which spreads FNV's weak high bits, so that names that
/// differ only in their last letter land in unrelated partitions. The hash is fixed and
/// documented (not Swift's per-process seeded `Hasher`), so every node, and an operator
/// with a calculator, computes the same partition.
package struct SpinPartitions: Sendable, Equatable {
    /// How many partitions there are (`cluster.partitions`), at least 1.
    package let count: Int

    package init(count: Int) {
        precondition(count >= 1, "a cluster has at least one partition")
        self.count = count
    }

    /// The partition `spin` belongs to, in `0..<count`.
    package func partition(of spin: String) -> Int {
        Int(Self.fmix64(Self.fnv1a64(spin.utf8)) % UInt64(count))
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
