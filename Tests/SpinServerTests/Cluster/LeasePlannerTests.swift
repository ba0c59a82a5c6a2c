import Testing
@testable import SpinServer

/// `LeasePlanner` against an in-memory lease table with the database's conditional
/// writes (`FakeLeaseDatabase`), on a manual timeline: lease 9 s, ticks every 3 s.
@Suite struct LeasePlannerTests {
    static let three = ["a", "b", "c"]
    static let partitions = 0..<30

    @Test func aLoneNode_AcquiresEveryHostedSpin_ThenRenewsAtAThird() {
        var sim = LeaseSimulation(nodes: ["a"], partitions: 2)
        #expect(sim.tick("a", at: at(0)) == [.heartbeat, .acquire(partition: 0, epoch: 1), .acquire(partition: 1, epoch: 1)])
        #expect(sim.started.map(\.partition) == [0, 1])
        #expect(sim.serving("a") == [0, 1])
        // Early: nothing to renew yet.
        #expect(sim.tick("a", at: at(1)) == [.heartbeat])
        #expect(sim.tick("a", at: at(3)) == [.heartbeat, .renew(partition: 0, epoch: 1), .renew(partition: 1, epoch: 1)])
        #expect(sim.database.leases[0]?.expiresAt == at(12))
        #expect(sim.planners["a"]?.renewalInterval == .seconds(3))
    }

    @Test func threeNodes_SettleOnThePlacement() {
        var sim = LeaseSimulation(nodes: Self.three, partitions: Self.partitions.count)
        sim.run(Self.three, from: 0, to: 12)
        let placed = sim.placed(among: Self.three)
        for node in Self.three {
            #expect(sim.serving(node) == placed[node] ?? [], "\(node)")
        }
    }

    @Test func deadNode_ItsSpinsAreTakenOver_AtLeaseExpiry_AndNotBefore() {
        var sim = LeaseSimulation(nodes: Self.three, partitions: Self.partitions.count)
        sim.run(Self.three, from: 0, to: 12)
        let orphans = sim.serving("c")
        #expect(!orphans.isEmpty)
        let epochs = sim.database.leases
        // c's last heartbeat and renewal were at 12: its leases run until 21.
        sim.run(["a", "b"], from: 15, to: 18)
        #expect(sim.serving("a").union(sim.serving("b")).isDisjoint(with: orphans))
        sim.run(["a", "b"], from: 21, to: 21)
        let placed = sim.placed(among: ["a", "b"])
        for node in ["a", "b"] {
            #expect(sim.serving(node) == placed[node] ?? [], "\(node)")
        }
        for spin in orphans {
            #expect(sim.database.leases[spin]?.epoch == (epochs[spin]?.epoch ?? 0) + 1, "\(spin)")
        }
    }

    @Test func nextTakeover_IsWhenADeadNodesLeaseAndHeartbeatHaveRunOut() {
        var sim = LeaseSimulation(nodes: Self.three, partitions: Self.partitions.count)
        sim.run(Self.three, from: 0, to: 12)
        // c's last heartbeat and renewal were at 12: from 21 its Spins go to a and b.
        sim.run(["a", "b"], from: 15, to: 15)
        let view = sim.database.view
        for node in ["a", "b"] {
            let planner = sim.planners[node]!
            #expect(planner.nextTakeover(now: at(15), view: view, partitions: Self.partitions) == at(21), "\(node)")
        }
        // A heartbeat younger than the lease keeps the Spins where they are a while longer.
        var fresher = view
        fresher.nodes.removeAll { $0.name == "c" }
        fresher.nodes.append(View.Node(name: "c", advertise: "http://c:8080", heartbeatAt: at(13)))
        #expect(sim.planners["a"]!.nextTakeover(now: at(15), view: fresher, partitions: Self.partitions) == at(22))
    }

    @Test func joiningNode_TakesItsFairShare_ByHandOver() {
        var sim = LeaseSimulation(nodes: ["a", "b"], partitions: Self.partitions.count)
        sim.run(["a", "b"], from: 0, to: 12)
        sim.stopped.removeAll()
        // c announces itself at 15; a and b see it at 18 and hand over before c's tick.
        sim.run(Self.three, from: 15, to: 18)
        let placed = sim.placed(among: Self.three)
        for node in Self.three {
            #expect(sim.serving(node) == placed[node] ?? [], "\(node)")
        }
        let moved = placed["c"] ?? []
        #expect(moved.count >= 5, "c should take about a third of 30")
        #expect(Set(sim.stopped.map(\.partition)) == moved)
        #expect(sim.stopped.allSatisfy { $0.reason == .handedOver && $0.node != "c" })
    }

    @Test func leavingNode_HandsEverySpinOver_AndTheOthersTakeThemAtTheirNextTick() {
        var sim = LeaseSimulation(nodes: Self.three, partitions: Self.partitions.count)
        sim.run(Self.three, from: 0, to: 12)
        sim.stopped.removeAll()
        let leaving = sim.serving("c")
        #expect(!leaving.isEmpty)
        // c leaves at 13 (its row no longer says it is alive: `ClusterStore.leave`).
        sim.planners["c"]?.leaving = true
        sim.database.nodes["c"]?.heartbeatAt = nil
        let actions = sim.tick("c", at: at(13))
        #expect(!actions.contains(.heartbeat))
        #expect(actions.filter { if case .release = $0 { true } else { false } }.count == leaving.count)
        #expect(sim.serving("c").isEmpty)
        #expect(sim.stopped.allSatisfy { $0.node == "c" && $0.reason == .handedOver })
        // a and b take them at once, not after c's lease (which would run to 21).
        _ = sim.tick("a", at: at(13.1))
        _ = sim.tick("b", at: at(13.1))
        let placed = sim.placed(among: ["a", "b"])
        for node in ["a", "b"] {
            #expect(sim.serving(node) == placed[node] ?? [], "\(node)")
        }
        // c acquires nothing while leaving, even a Spin placement would give it.
        #expect(sim.tick("c", at: at(14)).isEmpty)
        var planner = LeasePlanner<TestInstant>(node: "c", leaseDuration: .seconds(9))
        planner.leaving = true
        #expect(planner.record(.acquired(partition: 99, epoch: 4, expiresAt: at(30)), now: at(14))
            == [.release(partition: 99, epoch: 4)])
        #expect(planner.serving.isEmpty)
    }

    @Test func pausedOwner_IsTakenOverWithTheNextEpoch_AndStopsServingWhenItWakes() {
        var sim = LeaseSimulation(nodes: Self.three, partitions: Self.partitions.count)
        sim.run(Self.three, from: 0, to: 12)
        let held = sim.planners["b"]!.held
        #expect(!held.isEmpty)
        // b is paused (SIGSTOP) after its tick at 12; a and c go on.
        sim.run(["a", "c"], from: 15, to: 21)
        for (spin, lease) in held {
            let row = sim.database.leases[spin]
            #expect(row?.epoch == lease.epoch + 1 && row?.node != "b", "\(spin)")
        }
        // b wakes (SIGCONT) at 24: its first decision is to stop serving every one of them.
        let actions = sim.tick("b", at: at(24))
        let stops = held.keys.sorted().map { Planner.Action.stopServing(partition: $0, epoch: held[$0]!.epoch, reason: .takenOver) }
        #expect(Array(actions.dropFirst().prefix(stops.count)) == stops)
        #expect(!actions.contains { if case .acquire = $0 { true } else { false } })
        #expect(sim.serving("b").isEmpty)
    }

    @Test func loneNodePausedPastItsLease_StopsServing_ThenTakesANewEpoch() {
        var sim = LeaseSimulation(nodes: ["a"], partitions: 1)
        sim.tick("a", at: at(0))
        #expect(sim.tick("a", at: at(12)) == [.heartbeat, .stopServing(partition: 0, epoch: 1, reason: .expired),
                                               .acquire(partition: 0, epoch: 2)])
        #expect(sim.started.map(\.epoch) == [1, 2])
    }

    @Test func refusedRenewal_StopsServing() {
        var planner = Planner(node: "a", leaseDuration: .seconds(9))
        _ = planner.tick(now: at(0), view: View(), partitions: 0..<1)
        #expect(planner.record(.acquired(partition: 0, epoch: 1, expiresAt: at(9)), now: at(0))
            == [.startServing(partition: 0, epoch: 1)])
        #expect(planner.record(.refused(partition: 0, epoch: 1), now: at(3))
            == [.stopServing(partition: 0, epoch: 1, reason: .takenOver)])
        #expect(planner.serving.isEmpty)
        // A refused acquire of a Spin not served changes nothing.
        #expect(planner.record(.refused(partition: 0, epoch: 2), now: at(3)) == [])
    }

    @Test func renewalsDue_AreTheLeasesWithTwoThirdsOrLessLeft_AndNoneRunOut() {
        // A node that took three partitions at 0 and 2, then spent its time recovering
        // them: between recoveries it renews what `tick` would renew.
        var planner = Planner(node: "a", leaseDuration: .seconds(9))
        _ = planner.tick(now: at(0), view: View(), partitions: 0..<3)
        _ = planner.record(.acquired(partition: 0, epoch: 1, expiresAt: at(9)), now: at(0))
        _ = planner.record(.acquired(partition: 1, epoch: 4, expiresAt: at(11)), now: at(2))
        _ = planner.record(.acquired(partition: 2, epoch: 2, expiresAt: at(9)), now: at(0))
        #expect(planner.renewalsDue(now: at(2)) == [])
        #expect(planner.renewalsDue(now: at(3)) == [.renew(partition: 0, epoch: 1), .renew(partition: 2, epoch: 2)])
        #expect(planner.renewalsDue(now: at(5)) == [.renew(partition: 0, epoch: 1), .renew(partition: 1, epoch: 4),
                                                    .renew(partition: 2, epoch: 2)])
        _ = planner.record(.renewed(partition: 0, epoch: 1, expiresAt: at(14)), now: at(5))
        #expect(planner.renewalsDue(now: at(5)) == [.renew(partition: 1, epoch: 4), .renew(partition: 2, epoch: 2)])
        // A lease already run out is not renewed: the next tick stops serving it.
        #expect(planner.renewalsDue(now: at(10)) == [.renew(partition: 0, epoch: 1), .renew(partition: 1, epoch: 4)])
    }

    @Test func aLeaseHeldByALiveNode_IsNotAcquired_EvenWhenPlacedHere() {
        // b holds counter until 9 and is alive; placement among {a, b} may give it to a,
        // but a waits for b to hand it over.
        let view = View(nodes: [.init(name: "b", advertise: "http://b:8080", heartbeatAt: at(0))],
                        leases: [.init(partition: 0, node: "b", epoch: 4, expiresAt: at(9))])
        var planner = Planner(node: "a", leaseDuration: .seconds(9))
        #expect(planner.tick(now: at(1), view: view, partitions: 0..<1) == [.heartbeat])
    }

    /// Random schedules: nodes tick at random moments, pause and wake. Whatever happens,
    /// no two nodes ever serve one Spin under the same epoch, no two hold an unexpired
    /// lease of one Spin at once, a node that ticks drops what it no longer holds; once
    /// every node runs again, the cluster settles on the placement.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomSchedules_NeverGiveOneSpinTwoOwners(seed: UInt64) {
        let nodes = ["a", "b", "c", "d"]
        var sim = LeaseSimulation(nodes: nodes, partitions: 16)
        var random = SplitMix64(seed: seed)
        var paused: Set<String> = []
        var time = 0.0
        for _ in 0..<600 {
            time += Double(random.next() % 2000) / 1000
            let node = nodes[Int(random.next() % UInt64(nodes.count))]
            if random.next() % 20 == 0 {
                if paused.contains(node) { paused.remove(node) } else { paused.insert(node) }
            }
            if !paused.contains(node) {
                sim.tick(node, at: at(time))
                // After its tick, a running node serves only under the row's current epoch
                // and an unexpired lease: what it kept from before a pause is gone.
                for (spin, lease) in sim.planners[node]!.held {
                    let row = sim.database.leases[spin]
                    #expect(row?.node == node && row?.epoch == lease.epoch && lease.expiresAt > at(time),
                            "\(node) still serves \(spin) at \(time)")
                }
            }
            for spin in sim.partitions {
                let holders = nodes.filter { (sim.planners[$0]?.held[spin]?.expiresAt).map { $0 > at(time) } ?? false }
                #expect(holders.count <= 1, "\(spin) at \(time): \(holders)")
            }
        }
        var owners: [String: String] = [:]
        for start in sim.started {
            let key = "\(start.partition)#\(start.epoch)"
            #expect(owners[key] == nil || owners[key] == start.node, "\(key) served by \(owners[key] ?? "") and \(start.node)")
            owners[key] = start.node
        }
        sim.run(nodes, from: time + 1, to: time + 1 + 27)
        let placed = sim.placed(among: nodes)
        for node in nodes {
            #expect(sim.serving(node) == placed[node] ?? [], "\(node)")
        }
    }
}

/// A small seeded generator (SplitMix64), so that the random schedules repeat.
struct SplitMix64 {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

/// A rolling upgrade: a partition a node on the new versions of the machine definitions
/// held (its Spins may have been migrated) goes only to nodes on those versions while one
/// runs; the others keep their share of the rest.
@Suite struct RollingUpgradePlacementTests {
    static let partitions = 30
    static let v1 = ["kind.door": 1, "spin.light": 1]
    static let v2 = ["kind.door": 2, "spin.light": 1]

    /// `node` stops gracefully (hands its partitions over) and, with `definitions`, comes back.
    static func restart(_ node: String, with definitions: [String: Int]?, in sim: inout LeaseSimulation, at time: Double) {
        sim.planners[node]!.leaving = true
        sim.tick(node, at: at(time))
        sim.planners[node] = definitions.map { Planner(node: node, leaseDuration: LeaseSimulation.leaseDuration, definitions: $0) }
    }

    @Test func aPartitionANewNodeHeld_GoesOnlyToNewNodes_TheRestStaysSpread() {
        var sim = LeaseSimulation(nodes: [], partitions: Self.partitions)
        for node in ["a", "b", "c"] {
            sim.planners[node] = Planner(node: node, leaseDuration: LeaseSimulation.leaseDuration, definitions: Self.v1)
        }
        sim.run(["a", "b", "c"], from: 0, to: 12)
        let placed = sim.placed(among: ["a", "b", "c"])

        // c and then b on version 2, one at a time: each takes its share back.
        Self.restart("c", with: Self.v2, in: &sim, at: 13)
        sim.run(["c", "a", "b"], from: 15, to: 36)
        Self.restart("b", with: Self.v2, in: &sim, at: 37)
        sim.run(["b", "c", "a"], from: 39, to: 60)
        for node in ["a", "b", "c"] { #expect(sim.serving(node) == placed[node] ?? [], "\(node)") }
        let newer = Set(sim.database.leases.values.filter { $0.definitions == Self.v2 }.map(\.partition))
        #expect(newer == (placed["b"] ?? []).union(placed["c"] ?? []))

        // c stops: of its partitions (held under version 2) a takes none; b takes them all,
        // where rendezvous hashing alone would have given a some.
        let ofC = placed["c"] ?? []
        #expect(!ofC.isDisjoint(with: sim.placed(among: ["a", "b"])["a"] ?? []))
        Self.restart("c", with: nil, in: &sim, at: 61)
        sim.run(["a", "b"], from: 63, to: 84)
        #expect(sim.serving("a") == placed["a"] ?? [])
        #expect(sim.serving("b") == (placed["b"] ?? []).union(ofC))

        // b stops too: no node on version 2 runs, so a serves every partition (a Spin
        // recorded under version 2 is unrecoverable there, as on a single server).
        Self.restart("b", with: nil, in: &sim, at: 85)
        sim.run(["a"], from: 87, to: 108)
        #expect(sim.serving("a") == Set(0..<Self.partitions))
        // Never two nodes on one partition under one epoch.
        #expect(Set(sim.started.map { "\($0.partition)/\($0.epoch)" }).count == sim.started.count)
    }

    @Test(arguments: [
        (["d": 1], ["d": 2], false),
        (["d": 2], ["d": 2], true),
        (["d": 3], ["d": 2], true),
        (["d": 2, "e": 1], ["d": 2, "e": 2], false),
        // A definition the node does not run is not its concern.
        (["d": 1], ["e": 5], true),
        ([:], ["d": 9], true),
        (["d": 1], [:], true),
    ] as [([String: Int], [String: Int], Bool)])
    func covers_WhenNoSharedDefinitionIsOlder(node: [String: Int], recorded: [String: Int], expected: Bool) {
        #expect(Placement.covers(node, recorded) == expected)
    }
}
