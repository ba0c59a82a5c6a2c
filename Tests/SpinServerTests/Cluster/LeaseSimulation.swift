@testable import SpinServer

typealias Planner = LeasePlanner<TestInstant>
typealias View = ClusterView<TestInstant>

/// The `spin_nodes` and `spin_partitions` tables and the conditional writes a database
/// runs for the planner's actions, in memory: what makes a lease race safe.
struct FakeLeaseDatabase {
    var nodes: [String: View.Node] = [:]
    var leases: [Int: View.Lease] = [:]
    let leaseDuration: Duration

    var view: View { View(nodes: Array(nodes.values), leases: Array(leases.values)) }

    /// Runs `action` for `node` at `now`; the answer for lease writes that have one.
    mutating func run(_ action: Planner.Action, by node: String, now: TestInstant) -> Planner.Write? {
        switch action {
        case .heartbeat:
            nodes[node] = View.Node(name: node, advertise: "http://\(node):8080", heartbeatAt: now)
            return nil
        case .acquire(let partition, let epoch):
            let row = leases[partition]
            let matches = row.map { $0.epoch + 1 == epoch && ($0.expiresAt <= now || $0.node == node) } ?? (epoch == 1)
            guard matches else { return .refused(partition: partition, epoch: epoch) }
            let expiresAt = now.advanced(by: leaseDuration)
            leases[partition] = View.Lease(partition: partition, node: node, epoch: epoch, expiresAt: expiresAt)
            return .acquired(partition: partition, epoch: epoch, expiresAt: expiresAt)
        case .renew(let partition, let epoch):
            guard let row = leases[partition], row.node == node, row.epoch == epoch else {
                return .refused(partition: partition, epoch: epoch)
            }
            leases[partition]?.expiresAt = now.advanced(by: leaseDuration)
            return .renewed(partition: partition, epoch: epoch, expiresAt: now.advanced(by: leaseDuration))
        case .release(let partition, let epoch):
            if let row = leases[partition], row.node == node, row.epoch == epoch { leases[partition]?.expiresAt = now }
            return nil
        case .startServing, .stopServing:
            return nil
        }
    }
}

/// Several nodes' planners over one fake database, ticked by a test at instants it
/// chooses; records every decision to serve and to stop.
struct LeaseSimulation {
    static let leaseDuration = Duration.seconds(9)

    var database = FakeLeaseDatabase(leaseDuration: leaseDuration)
    var planners: [String: Planner] = [:]
    let partitions: Range<Int>
    /// Every `startServing`, in order: (node, partition, epoch).
    var started: [(node: String, partition: Int, epoch: UInt64)] = []
    /// Every `stopServing`, in order.
    var stopped: [(node: String, partition: Int, epoch: UInt64, reason: Planner.StopReason)] = []

    init(nodes: [String], partitions: Int) {
        self.partitions = 0..<partitions
        for node in nodes { planners[node] = Planner(node: node, leaseDuration: Self.leaseDuration) }
    }

    /// One tick of `node` at `now`: its actions run in order, each write's answer
    /// recorded. Returns the tick's actions (not those `record` added).
    @discardableResult
    mutating func tick(_ node: String, at now: TestInstant) -> [Planner.Action] {
        if planners[node] == nil { planners[node] = Planner(node: node, leaseDuration: Self.leaseDuration) }
        let actions = planners[node]!.tick(now: now, view: database.view, partitions: partitions)
        var queue = actions
        while !queue.isEmpty {
            let action = queue.removeFirst()
            switch action {
            case .startServing(let partition, let epoch): started.append((node, partition, epoch))
            case .stopServing(let partition, let epoch, let reason): stopped.append((node, partition, epoch, reason))
            default: break
            }
            let before = database.leases
            let write = database.run(action, by: node, now: now)
            if action == .heartbeat { database.nodes[node]?.definitions = planners[node]!.definitions }
            // An acquire keeps the newest versions any holder ran (`ClusterCoordinator`).
            if case .acquired(let partition, _, _)? = write {
                database.leases[partition]?.definitions = before[partition].map {
                    $0.definitions.merging(planners[node]!.definitions) { max($0, $1) }
                } ?? planners[node]!.definitions
            }
            if let write {
                queue.insert(contentsOf: planners[node]!.record(write, now: now), at: 0)
            }
        }
        return actions
    }

    /// Ticks `nodes` (in order) every third of the lease from `start` up to `end` inclusive.
    mutating func run(_ nodes: [String], from start: Double, to end: Double) {
        var time = start
        while time <= end + 1e-9 {
            for node in nodes { tick(node, at: at(time)) }
            time += 3
        }
    }

    /// The partitions `node` serves.
    func serving(_ node: String) -> Set<Int> { planners[node]?.serving ?? [] }

    /// The owners rendezvous hashing gives among `nodes`.
    func placed(among nodes: [String]) -> [String: Set<Int>] {
        var placed: [String: Set<Int>] = [:]
        for partition in partitions { placed[Placement.owner(of: partition, among: nodes)!, default: []].insert(partition) }
        return placed
    }
}
