import Testing
import SpinStorage
@testable import SpinServer

/// `Placement` and `SpinPartitions`: a fixed, documented hash of a Spin's name gives its
/// partition, rendezvous hashing over the nodes gives the partition's owner, so every
/// node (and a user) computes the same owner; balanced; a node leaving or joining moves
/// few partitions.
@Suite struct PlacementTests {
    static let nodes = ["node-a", "node-b", "node-c"]
    static let partitions = Array(0..<300)

    static func owners(_ nodes: [String]) -> [Int: String] {
        Dictionary(uniqueKeysWithValues: partitions.map { ($0, Placement.owner(of: $0, among: nodes)!) })
    }

    @Test func hash_IsFNV1a64_WithPublishedVectors() {
        #expect(SpinPartitions.fnv1a64("".utf8) == 0xcbf2_9ce4_8422_2325)
        #expect(SpinPartitions.fnv1a64("a".utf8) == 0xaf63_dc4c_8601_ec8c)
        #expect(SpinPartitions.fnv1a64("foobar".utf8) == 0x8594_4171_f739_67e8)
    }

    @Test func weight_IsTheDocumentedFormula_NotAPerProcessSeed() {
        // fmix64(FNV-1a-64("node-a" ++ [0] ++ "counter")), computed outside Swift.
        #expect(Placement.weight(node: "node-a", key: "counter") == 0x7857_b280_cc40_7b08)
    }

    @Test func owner_OfAKey_IsPredictable() {
        let expected = ["counter": "node-b", "levels": "node-c", "feature": "node-c", "router": "node-c",
                        "session": "node-c"]
        for (key, node) in expected {
            #expect(Placement.owner(key: key, among: Self.nodes) == node, "\(key)")
            // The order the nodes are listed in does not matter.
            #expect(Placement.owner(key: key, among: Self.nodes.reversed()) == node, "\(key)")
        }
        // A partition's key is its number in decimal.
        #expect(Placement.owner(of: 17, among: Self.nodes) == Placement.owner(key: "17", among: Self.nodes))
    }

    @Test func partition_IsTheDocumentedFormula() {
        // fmix64(FNV-1a-64(name)) mod count, computed outside Swift.
        let partitions = SpinPartitions(count: 64)
        #expect(partitions.partition(of: "counter") == 57)
        #expect(partitions.partition(of: "door-000001") == 37)
        #expect(SpinPartitions(count: 1).partition(of: "anything") == 0)
        // 64 partitions share 6,400 names within bounds (100 each on average).
        var counts = [Int](repeating: 0, count: 64)
        for index in 0..<6400 { counts[partitions.partition(of: "door-\(index)")] += 1 }
        #expect(counts.allSatisfy { (60...140).contains($0) }, "\(counts)")
    }

    @Test func owner_AmongNoNodes_IsNil() {
        #expect(Placement.owner(of: 3, among: [String]()) == nil)
    }

    @Test func threeNodes_ShareThreeHundredSpins_WithinBounds() {
        var counts: [String: Int] = [:]
        for owner in Self.owners(Self.nodes).values { counts[owner, default: 0] += 1 }
        #expect(counts.count == 3)
        for node in Self.nodes {
            // 100 each on average; a fair hash stays well within ±25%.
            #expect((75...125).contains(counts[node] ?? 0), "\(node): \(counts[node] ?? 0)")
        }
    }

    @Test func nodeLeaving_MovesOnlyItsOwnSpins() {
        let before = Self.owners(Self.nodes)
        let after = Self.owners(["node-a", "node-c"])
        for spin in Self.partitions where before[spin] != "node-b" {
            #expect(after[spin] == before[spin], "\(spin) moved between nodes that stayed")
        }
        #expect(!after.values.contains("node-b"))
    }

    @Test func nodeJoining_TakesAboutAQuarter_FromTheOthersOnly() {
        let before = Self.owners(Self.nodes)
        let after = Self.owners(Self.nodes + ["node-d"])
        let moved = Self.partitions.filter { before[$0] != after[$0] }
        // Every moved Spin went to the new node; none moved between old ones.
        #expect(moved.allSatisfy { after[$0] == "node-d" })
        // 1/4 of 300 is 75.
        #expect((50...100).contains(moved.count), "\(moved.count) moved")
    }

    @Test func preference_StartsWithTheOwner_AndNamesTheTakeoverNode() {
        for spin in Self.partitions.prefix(50) {
            let order = Placement.preference(of: spin, among: Self.nodes)
            #expect(order.first == Placement.owner(of: spin, among: Self.nodes))
            let rest = Self.nodes.filter { $0 != order[0] }
            #expect(order[1] == Placement.owner(of: spin, among: rest))
        }
    }
}
