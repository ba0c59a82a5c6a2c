import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import Testing
@testable import SpinServer
@testable import SpinConcurrency

/// The lease loop against an in-memory `ClusterStore` that keeps the same conditional
/// rules as the PostgreSQL one: nodes joining, handing over, dying, and never two nodes
/// serving one partition (12 here).
@Suite struct ClusterCoordinatorTests {
    static let partitions = SpinPartitions(count: 12)
    static let all = Array(0..<12)

    /// A Spin's name in `partition`.
    static func spin(in partition: Int) -> String {
        (0...).lazy.map { "spin-\($0)" }.first { partitions.partition(of: $0) == partition }!
    }

    /// Records which node serves what, and fails the test when two serve one partition.
    final class Ledger: Sendable {
        private let serving = Protected<[Int: String]>([:])
        private let overlaps = Protected<[String]>([])

        func serving(_ node: String) -> ClusterCoordinator.Serving {
            .init(start: { [self] spin, _ in
                serving.withLock { serving in
                    if let other = serving[spin], other != node { overlaps.withLock { $0.append("\(spin): \(other) and \(node)") } }
                    serving[spin] = node
                }
            }, stop: { [self] spin, _, _ in
                serving.withLock { serving in if serving[spin] == node { serving[spin] = nil } }
            })
        }

        var owners: [Int: String] { serving.withLock { $0 } }
        var problems: [String] { overlaps.withLock { $0 } }
        func partitions(of node: String) -> [Int] { owners.filter { $0.value == node }.map(\.key).sorted() }
    }

    func coordinator(_ node: String, store: MemoryClusterStore, ledger: Ledger, leaseSeconds: Int = 1) -> ClusterCoordinator {
        ClusterCoordinator(node: node, advertise: "http://\(node):1", leaseSeconds: leaseSeconds,
                           partitions: Self.partitions, spins: ["spin-0"],
                           store: store, serving: ledger.serving(node), logger: Logger(label: "test"))
    }

    @Test func aLoneNode_ServesEverySpin_AndRoutesThemHere() throws {
        let store = MemoryClusterStore()
        let ledger = Ledger()
        let a = coordinator("a", store: store, ledger: ledger)
        a.tickNow()
        #expect(ledger.partitions(of: "a") == Self.all)
        #expect(a.routing(of: "spin-3", hops: 0) == .local)
        #expect(a.servingPartitions == Set(Self.all))
    }

    @Test func aTick_RenewsEveryPartitionItHolds_InOneWrite() throws {
        let store = MemoryClusterStore()
        let ledger = Ledger()
        let a = coordinator("a", store: store, ledger: ledger, leaseSeconds: 3)
        a.tickNow()
        #expect(a.servingPartitions.count == 12)
        #expect(store.renewalWrites == 0)
        // A third of the lease later every lease is due: one write renews the twelve.
        Thread.sleep(forTimeInterval: 1.05)
        a.tickNow()
        #expect(store.renewalWrites == 1)
        #expect(Self.all.allSatisfy { (store.lease(of: $0)?.expiresAt ?? .distantPast) > Date().addingTimeInterval(2.5) })
        #expect(a.servingPartitions.count == 12)
        a.stop()
    }

    @Test func aJoiningNode_TakesItsShare_WithoutOverlap() throws {
        let store = MemoryClusterStore()
        let ledger = Ledger()
        let a = coordinator("a", store: store, ledger: ledger)
        let b = coordinator("b", store: store, ledger: ledger)
        a.tickNow()
        b.tickNow()   // b is live now, but a's leases are valid: b takes nothing yet
        #expect(ledger.partitions(of: "b").isEmpty)
        a.tickNow()   // a hands b's share over
        b.tickNow()   // b takes it
        let expected = Self.all.filter { Placement.owner(of: $0, among: ["a", "b"]) == "b" }
        #expect(!expected.isEmpty)
        #expect(ledger.partitions(of: "b") == expected)
        #expect(ledger.partitions(of: "a").count == Self.all.count - expected.count)
        #expect(ledger.problems.isEmpty)
        // Each routes the other's Spins to the other, once it read b's leases; until then
        // requests about them wait (the move is under way), they are not refused.
        guard let first = expected.first else { return }
        #expect(a.routing(of: Self.spin(in: first), hops: 0) == .pending)
        a.tickNow()
        #expect(a.routing(of: Self.spin(in: first), hops: 0) == .proxy(node: "b", advertise: "http://b:1"))
        #expect(a.routing(of: Self.spin(in: first), hops: 1) == .proxy(node: "b", advertise: "http://b:1"))
        #expect(a.routing(of: Self.spin(in: first), hops: ClusterRouting.maxHops) == .pending)
        // Every move announced itself: a joining, a's releases, b's acquisitions.
        #expect(store.announcements >= 3)
    }

    @Test func whenANodeDies_TheOtherTakesItsSpins_AfterTheLease() throws {
        let store = MemoryClusterStore()
        let ledger = Ledger()
        let a = coordinator("a", store: store, ledger: ledger)
        let b = coordinator("b", store: store, ledger: ledger)
        a.tickNow(); b.tickNow(); a.tickNow(); b.tickNow()
        let bs = ledger.partitions(of: "b")
        #expect(!bs.isEmpty)
        // b stops ticking (killed): a must not take its Spins while b's leases are valid.
        a.tickNow()
        #expect(ledger.partitions(of: "a").count == Self.all.count - bs.count)
        Thread.sleep(forTimeInterval: 1.2)
        a.tickNow()
        #expect(ledger.partitions(of: "a") == Self.all)
        #expect(store.epochs(of: bs[0]) == 3)   // a (1), b (2), a again (3)
        // b wakes up (SIGCONT): the rows show a under a newer epoch, so it stops serving
        // every one of them at its first tick (the database's fence refused its writes
        // meanwhile: `LeaseFence`).
        b.tickNow()
        #expect(b.servingPartitions.isEmpty)
        #expect(Set(ledger.owners.values) == ["a"])
    }

    @Test func leave_GoesOnTakingRequests_UntilTheOthersHaveReadTheRowsAgain_WithinItsTimeout() throws {
        // A 3 s lease: every node's timer reads the rows once a second.
        let (store, ledger, a, b) = settledPair(leaseSeconds: 3)
        let began = ContinuousClock.now
        let left = Protected<Duration?>(nil)
        DispatchQueue.global().async {
            b.leave(timeout: .seconds(3))
            left.withLock { $0 = ContinuousClock.now - began }
        }
        // Once b gave its Spins back, a takes them at once, and b sees it: the hand-over
        // is done in moments.
        func given(_ spin: Int) -> Bool { store.lease(of: spin).map { $0.node == "a" || $0.expiresAt <= Date() } ?? true }
        while !Self.all.allSatisfy(given) { Thread.sleep(forTimeInterval: 0.001) }
        a.tickNow()
        b.tickNow()
        #expect(ledger.partitions(of: "a") == Self.all)
        // b still listens: a node whose listener lagged may still send requests there
        // until its timer's next look, a second (and its leeway) after the leave.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(left.withLock { $0 } == nil)
        while left.withLock({ $0 }) == nil { Thread.sleep(forTimeInterval: 0.01) }
        let took = try #require(left.withLock { $0 })
        #expect(took >= .seconds(1) && took < .seconds(3), "\(took)")
    }

    @Test func leave_OfANodeThatServesNothing_EndsAtOnce() {
        let (store, ledger, _, _) = settledPair(leaseSeconds: 3)
        // c joins; its share is still with a and b: no request is ever sent to it.
        let c = coordinator("c", store: store, ledger: ledger, leaseSeconds: 3)
        c.tickNow()
        #expect(c.servingPartitions.isEmpty)
        let began = ContinuousClock.now
        c.leave(timeout: .seconds(3))
        #expect(ContinuousClock.now - began < .milliseconds(500))
    }

    @Test func leave_OfTheLastNode_EndsAtOnce() {
        let store = MemoryClusterStore()
        let a = coordinator("a", store: store, ledger: Ledger(), leaseSeconds: 3)
        a.tickNow()
        let began = ContinuousClock.now
        a.leave(timeout: .seconds(3))
        #expect(ContinuousClock.now - began < .milliseconds(500))
    }

    /// Nodes a and b with a `leaseSeconds` lease (60 s unless given), each serving its share.
    func settledPair(leaseSeconds: Int = 60) -> (MemoryClusterStore, Ledger, ClusterCoordinator, ClusterCoordinator) {
        let store = MemoryClusterStore()
        let ledger = Ledger()
        let a = coordinator("a", store: store, ledger: ledger, leaseSeconds: leaseSeconds)
        let b = coordinator("b", store: store, ledger: ledger, leaseSeconds: leaseSeconds)
        a.tickNow(); b.tickNow(); a.tickNow(); b.tickNow()
        return (store, ledger, a, b)
    }

    @Test func stop_GivesTheLeasesBack_SoTheOthersTakeThemAtOnce() throws {
        let (store, ledger, a, b) = settledPair()
        b.stop()
        #expect(b.servingPartitions.isEmpty)
        // b's heartbeat is still young: a waits for placement to give it b's Spins, which
        // happens once b's row goes stale. With the leases released, nothing else waits.
        #expect(Self.all.allSatisfy { store.lease(of: $0).map { $0.node == "a" || $0.expiresAt <= Date() } ?? true })
    }

    @Test func leave_HandsEverySpinOver_AndTheOthersTakeThemAtTheirNextLook() throws {
        let (store, ledger, a, b) = settledPair()
        let bs = ledger.partitions(of: "b")
        #expect(!bs.isEmpty)
        // b leaves (SIGTERM); a would look at once, told by b's announcement. (The wait
        // for a is cut short here: this test ticks a by hand.)
        let before = store.announcements
        b.leave(timeout: .milliseconds(1))
        #expect(b.servingPartitions.isEmpty)
        #expect(store.announcements > before)
        // Until a took them, requests about them wait at b; they are not refused.
        #expect(b.routing(of: Self.spin(in: bs[0]), hops: 0) == .pending)
        a.tickNow()
        // Not after a lease: b's row no longer says it is alive.
        #expect(ledger.partitions(of: "a") == Self.all)
        #expect(ledger.problems.isEmpty)
        b.tickNow()
        #expect(b.routing(of: Self.spin(in: bs[0]), hops: 0) == .proxy(node: "a", advertise: "http://a:1"))
        // A leaving node takes nothing back, however placement reads.
        b.tickNow()
        #expect(b.servingPartitions.isEmpty)
    }
}

/// `ClusterStore` in memory, with `PostgresClusterStore`'s conditions and the wall clock
/// as the database's.
final class MemoryClusterStore: ClusterStore, @unchecked Sendable {
    private let lock = NSLock()
    private var nodes: [String: ClusterRows.Node] = [:]
    private var leases: [Int: ClusterRows.Lease] = [:]
    private var events: [OutboxEvent] = []

    func open() throws {}
    func close() {}

    func readCluster() throws -> ClusterRows {
        lock.withLock {
            ClusterRows(now: Date(), nodes: nodes.values.sorted { $0.name < $1.name },
                        leases: leases.values.sorted { $0.partition < $1.partition })
        }
    }

    func heartbeat(node: String, advertise: String, definitions: [String: Int]) throws {
        lock.withLock {
            nodes[node] = ClusterRows.Node(name: node, advertise: advertise, heartbeatAt: Date(), definitions: definitions)
        }
    }

    func agree(partitions: Int, liveSeconds: Double) throws {}

    func acquire(partition: Int, node: String, epoch: UInt64, seconds: Double, definitions: [String: Int]) throws -> Date? {
        lock.withLock {
            let now = Date()
            if let row = leases[partition] {
                guard row.epoch == epoch - 1, row.expiresAt <= now || row.node == node else { return nil }
            } else {
                guard epoch == 1 else { return nil }
            }
            let expires = now.addingTimeInterval(seconds)
            leases[partition] = ClusterRows.Lease(partition: partition, node: node, epoch: epoch, expiresAt: expires,
                                                  definitions: definitions)
            return expires
        }
    }

    func renew(_ held: [PartitionLease], node: String, seconds: Double) throws -> [Int: Date] {
        lock.withLock {
            renewals += 1
            let now = Date()
            var renewed: [Int: Date] = [:]
            for lease in held {
                guard let row = leases[lease.partition], row.node == node, row.epoch == lease.epoch, row.expiresAt > now else {
                    continue
                }
                leases[lease.partition]?.expiresAt = now.addingTimeInterval(seconds)
                renewed[lease.partition] = now.addingTimeInterval(seconds)
            }
            return renewed
        }
    }

    /// How many renewal writes the nodes made (one per tick that renewed anything).
    private(set) var renewals = 0

    func release(partition: Int, node: String, epoch: UInt64) throws {
        lock.withLock {
            guard let row = leases[partition], row.node == node, row.epoch == epoch else { return }
            leases[partition]?.expiresAt = Date()
        }
    }

    func outbox(after: Int64, limit: Int) throws -> [OutboxEvent] {
        lock.withLock { Array(events.filter { $0.position > after }.prefix(limit)) }
    }

    func outbox(gears: [String], after: Int64, through: Int64, consumed: [String: UInt64], limit: Int) throws -> [OutboxEvent] {
        lock.withLock {
            Array(events.filter { event in
                gears.contains(event.gear) && event.position > after && event.position <= through
                    && event.senderPosition > consumed[event.sender ?? "", default: 0]
            }.prefix(limit))
        }
    }

    func outboxEnd() throws -> Int64 { lock.withLock { Int64(events.count) } }

    func trimOutbox(olderThanSeconds seconds: Double) throws -> Int { 0 }

    func waitForPublish(timeout: Duration) throws -> Bool {
        Thread.sleep(forTimeInterval: 0.01)
        return false
    }

    func leave(node: String) throws {
        lock.withLock {
            nodes[node]?.heartbeatAt = nil
            changes += 1
        }
    }

    func announce() throws {
        lock.withLock { changes += 1 }
    }

    func waitForChange(timeout: Duration) throws -> Bool {
        Thread.sleep(forTimeInterval: 0.01)
        return false
    }

    private var changes = 0
    /// How many times a node announced a change (`announce`, `leave`).
    var announcements: Int { lock.withLock { changes } }

    func epochs(of partition: Int) -> UInt64? { lock.withLock { leases[partition]?.epoch } }
    func lease(of partition: Int) -> ClusterRows.Lease? { lock.withLock { leases[partition] } }
    var renewalWrites: Int { lock.withLock { renewals } }
}
