import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

/// The lease loop of one cluster node: every third of `cluster.leaseSeconds`, and at
/// once whenever another node announces a change (it took or gave back a lease, joined
/// or left: `ClusterStore.waitForChange`), it reads the shared rows (`ClusterStore`),
/// lets `LeasePlanner` decide, carries the decisions out against the database (every
/// renewal of a tick in one statement), announces its own changes, and starts or stops
/// serving partitions through `Serving`. It also answers where a request about a Spin
/// is served (`routing`: where the Spin's partition is), from what it last read.
///
/// Leases are per partition (`SpinPartitions`), so an idle node's work per tick is a
/// read of the rows, a heartbeat and one renewal, whatever the number of Spins.
///
/// A planned move therefore takes a few database round trips, not a tick: the old owner
/// stops serving the partition (requests about its Spins wait, `ClusterRouting.pending`),
/// commits and gives the lease back, and announces it; the new owner takes the lease at
/// once, recovers and announces; every node then routes the waiting requests to it.
///
/// Times: the database's clock decides leases. Each read maps the database's timestamps
/// onto this process's `ContinuousClock` by the offset between the two at the read, so
/// the planner and the routing work on local instants.
///
/// Everything mutable is confined to `queue`, but what `routing` reads (`Published`).
package final class ClusterCoordinator: @unchecked Sendable {
    /// What the node does when it gets or loses a partition.
    package struct Serving: Sendable {
        /// Serve the Spins of `partition`, writing under `epoch`. Throwing gives the
        /// lease back.
        package var start: @Sendable (_ partition: Int, _ epoch: UInt64) throws -> Void
        /// Stop applying and writing events of the Spins of `partition`.
        package var stop: @Sendable (_ partition: Int, _ epoch: UInt64, _ reason: LeasePlanner<ContinuousClock.Instant>.StopReason) -> Void

        package init(start: @escaping @Sendable (Int, UInt64) throws -> Void,
                     stop: @escaping @Sendable (Int, UInt64, LeasePlanner<ContinuousClock.Instant>.StopReason) -> Void) {
            self.start = start
            self.stop = stop
        }
    }

    /// What the routing of requests reads: the newest view and the partitions served here.
    private struct Published: Sendable {
        var view = ClusterView<ContinuousClock.Instant>()
        var running: Set<Int> = []
    }

    package let node: String
    private let store: any ClusterStore
    /// How the cluster cuts Spins into partitions (`cluster.partitions`).
    package let partitions: SpinPartitions
    /// The Spins that always exist (the config's `spins`): `GET /v1/cluster` names their
    /// owners; Spins made at run time are found through their partition.
    private let spins: [String]
    private let serving: Serving
    private let logger: Logger
    private let queue = DispatchQueue(label: "spin.cluster")
    private var planner: LeasePlanner<ContinuousClock.Instant>
    private var advertise: String
    private var view = ClusterView<ContinuousClock.Instant>()
    private var timer: DispatchSourceTimer?
    private var stopped = false
    private var lastProblem: String?
    private let published = Protected(Published())
    /// Called after each tick with the cluster as read (for `GET /v1/cluster`, metrics).
    private let onStatus: @Sendable (ClusterStatus) -> Void

    /// Called when the database stops or starts answering the loop (nil: it answers).
    private let onProblem: @Sendable (String?) -> Void
    /// Called once, when placement first settled (every partition held by the node
    /// placement gives it to, this node serving its share), or a lease after the start.
    private let onSettled: @Sendable () -> Void
    private var settled = false
    private var startedAt = ContinuousClock.now
    /// A tick was asked for (`tickSoon`) and has not run yet.
    private var tickQueued = false
    /// This tick changed the node or lease rows: the other nodes are told at its end.
    private var changed = false
    /// Whether this node has written a heartbeat since it started (its first one is news).
    private var announcedHeartbeat = false
    /// When this node last wrote its heartbeat (`keepAliveIfDue`).
    private var lastHeartbeat = ContinuousClock.now
    /// False once `stop` was called: the thread that waits for announcements ends.
    private let listening = Protected(true)

    package init(node: String, advertise: String, leaseSeconds: Int, partitions: SpinPartitions, spins: [String],
                 definitions: [String: Int] = [:], store: any ClusterStore,
                 serving: Serving, logger: Logger, onStatus: @escaping @Sendable (ClusterStatus) -> Void = { _ in },
                 onProblem: @escaping @Sendable (String?) -> Void = { _ in },
                 onSettled: @escaping @Sendable () -> Void = {}) {
        self.onProblem = onProblem
        self.onSettled = onSettled
        self.node = node
        self.advertise = advertise
        self.store = store
        self.partitions = partitions
        self.spins = spins
        self.serving = serving
        self.logger = logger
        self.onStatus = onStatus
        planner = LeasePlanner(node: node, leaseDuration: .seconds(leaseSeconds), definitions: definitions)
        leaseDuration = .seconds(leaseSeconds)
    }

    /// How long a lease lasts (a copy: `planner` is the queue's alone).
    package let leaseDuration: Duration

    /// Runs the first tick now (so a starting node holds and serves its share before it
    /// answers requests), then one every `LeasePlanner.renewalInterval` and one soon
    /// after every change another node announces.
    package func start(advertise: String) {
        queue.sync {
            self.advertise = advertise
            startedAt = .now
            tick()
        }
        listenForChanges()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let interval = leaseDuration / 3   // `LeasePlanner.renewalInterval`
        timer.schedule(deadline: .now() + DispatchTimeInterval(interval), repeating: DispatchTimeInterval(interval),
                       leeway: .milliseconds(50))
        timer.setEventHandler { [weak self] in self?.tick() }
        queue.sync { self.timer = timer }
        timer.resume()
    }

    /// Runs one tick now (tests; and a node that wants to react at once).
    package func tickNow() {
        queue.sync { tick() }
    }

    /// Runs a tick soon on the loop's queue; asks made before it runs share it.
    package func tickSoon() {
        queue.async { [self] in
            guard !tickQueued else { return }
            tickQueued = true
            queue.async { [self] in
                tickQueued = false
                tick()
            }
        }
    }

    /// A thread that waits for the other nodes' announcements and ticks soon after each.
    private func listenForChanges() {
        let thread = Thread { [weak self] in
            while let self, self.listening.withLock({ $0 }) {
                do {
                    if try self.store.waitForChange(timeout: .seconds(1)) { self.tickSoon() }
                } catch {
                    // The database is away: the timer's ticks go on and report it.
                    guard self.listening.withLock({ $0 }) else { return }
                    Thread.sleep(forTimeInterval: 0.5)
                }
            }
        }
        thread.name = "spin.cluster.listen"
        thread.start()
    }

    /// A graceful stop's first half: this node leaves the cluster (its row no longer
    /// says it is alive) and hands every partition it serves over at once, then waits up
    /// to `timeout` until another live node serves each of them, while requests about
    /// their Spins wait here and are then sent on to the new owners. `stop` comes after.
    ///
    /// Then, if it served any partition and other nodes live, it goes on taking requests (and
    /// sending them on) until a renewal interval has passed since it left, within
    /// `timeout`: another node hears of the leave at once (`ClusterStore.waitForChange`)
    /// and routes nothing here from then on, but one whose listener lagged still sends
    /// requests here until its next regular tick reads the rows, and those must not meet
    /// a closed listener (503 `spin_unavailable` from the relay).
    package func leave(timeout: Duration) {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let handed: Set<Int> = queue.sync {
            guard !stopped else { return [] }
            let serving = planner.serving
            planner.leaving = true
            do {
                try store.leave(node: node)
            } catch {
                logger.warning("cluster: cannot mark node \(node) as leaving: \(error); the others see it gone once its heartbeat ages")
            }
            tick()
            return serving
        }
        // Every other node's timer reads the rows once a renewal interval (its leeway and
        // the read itself included) after the leave.
        let seen = min(deadline, ContinuousClock.now.advanced(by: leaseDuration / 3 + .milliseconds(250)))
        var othersLive = false
        while ContinuousClock.now < deadline {
            let moved = queue.sync { () -> Bool in
                let now = ContinuousClock.now
                let others = view.liveNodeNames(now: now, leaseDuration: leaseDuration).filter { $0 != node }
                othersLive = !others.isEmpty
                guard othersLive else { return true }
                return handed.allSatisfy { partition in
                    guard let lease = view.validLease(of: partition, now: now) else { return false }
                    return others.contains(lease.node)
                }
            }
            if moved { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        // Requests are sent on only to a partition's owner: a node that served none gets none.
        if othersLive, !handed.isEmpty, ContinuousClock.now < seen {
            Thread.sleep(forTimeInterval: ContinuousClock.now.duration(to: seen).seconds)
        }
        if !handed.isEmpty {
            logger.notice("cluster: node \(node) handed over \(handed.count) partition(s) and leaves the cluster")
        }
    }

    /// Stops the loop and stops serving every partition, giving each lease back (and
    /// telling the other nodes) so that the partitions move at once instead of after the
    /// lease runs out. After `leave` nothing is left to give back.
    package func stop() {
        queue.sync {
            guard !stopped else { return }
            stopped = true
            listening.withLock { $0 = false }
            timer?.cancel()
            timer = nil
            var released = false
            for partition in planner.serving.sorted() {
                guard let epoch = planner.held[partition]?.epoch else { continue }
                published.withLock { _ = $0.running.remove(partition) }
                serving.stop(partition, epoch, .handedOver)
                do {
                    try store.release(partition: partition, node: node, epoch: epoch)
                    released = true
                } catch {
                    logger.warning("cluster: could not give back the lease of partition \(partition): \(error); it moves when the lease runs out")
                }
            }
            if released { try? store.announce() }
        }
    }

    /// Where a request about `spin` is served (where its partition is), from the newest view.
    package func routing(of spin: String, hops: Int) -> ClusterRouting {
        let partition = partitions.partition(of: spin)
        let (view, running) = published.withLock { ($0.view, $0.running) }
        return ClusterRouting.decide(partition: partition, now: ContinuousClock.now, serving: running, view: view,
                                     node: node, leaseDuration: leaseDuration, hops: hops)
    }

    /// The partitions this node serves now.
    package var servingPartitions: Set<Int> { published.withLock { $0.running } }


    // MARK: The loop (on `queue`)

    private func tick() {
        guard !stopped else { return }
        let now = ContinuousClock.now
        tickProblem = nil
        do {
            let rows = try store.readCluster()
            view = map(rows, now: now)
        } catch {
            // The database is away: the planner decides on the last view; leases this
            // node cannot renew run out, and it stops serving them then.
            note("cannot read the cluster's rows: \(error)")
        }
        changed = false
        run(planner.tick(now: now, view: view, partitions: partitions.all))
        if changed {
            do {
                try store.announce()
            } catch {
                note("cannot tell the other nodes of a change: \(error)")
            }
        }
        publish()
        report(tickProblem)
        scheduleTakeover()
        if !settled, placementSettled(now: .now) || startedAt.duration(to: .now) >= leaseDuration {
            settled = true
            onSettled()
        }
    }

    /// When the next takeover tick is scheduled (`scheduleTakeover`).
    private var takeoverAt: ContinuousClock.Instant?

    /// A dead node's partitions are taken the moment its lease and heartbeat run out
    /// (`LeasePlanner.nextTakeover`), not at the next regular tick.
    private func scheduleTakeover() {
        let now = ContinuousClock.now
        guard let at = planner.nextTakeover(now: now, view: view, partitions: partitions.all),
              now.duration(to: at) < planner.renewalInterval,
              takeoverAt.map({ at < $0 || $0 <= now }) ?? true else { return }
        takeoverAt = at
        let delay = now.duration(to: at) + .milliseconds(20)
        queue.asyncAfter(deadline: .now() + DispatchTimeInterval(delay)) { [weak self] in
            guard let self else { return }
            takeoverAt = nil
            tick()
        }
    }

    /// Every partition is held by the live node placement gives it to, and those of
    /// this node are served here.
    private func placementSettled(now: ContinuousClock.Instant) -> Bool {
        let live = Set(view.liveNodeNames(now: now, leaseDuration: leaseDuration)).union([node])
        let serving = planner.serving
        return partitions.all.allSatisfy { partition in
            guard let owner = Placement.owner(of: partition, among: live),
                  view.validLease(of: partition, now: now)?.node == owner else { return false }
            return owner != node || serving.contains(partition)
        }
    }

    /// The first problem of this tick (reported once the tick is over).
    private var tickProblem: String?

    private func note(_ problem: String) {
        if tickProblem == nil { tickProblem = problem }
    }

    private func run(_ actions: [LeasePlanner<ContinuousClock.Instant>.Action]) {
        let seconds = Double(leaseDuration.components.seconds)
        // A tick's renewals go to the database together, where the first of them stood.
        let renewals = Self.leases(renewedBy: actions)
        var renewed = false
        for action in actions {
            switch action {
            case .heartbeat:
                writeHeartbeat()
            case .acquire(let partition, let epoch):
                do {
                    // The row keeps the newest versions any holder ran (this node's too).
                    let recorded = (view.leases[partition]?.definitions ?? [:]).merging(planner.definitions) { max($0, $1) }
                    if let expires = try store.acquire(partition: partition, node: node, epoch: epoch, seconds: seconds,
                                                       definitions: recorded) {
                        changed = true
                        view.leases[partition] = .init(partition: partition, node: node, epoch: epoch, expiresAt: local(expires))
                        // Routing sees the lease at once: while the partition's Spins recover,
                        // requests about them wait here instead of going to the previous owner.
                        published.withLock { $0.view = view }
                        run(planner.record(.acquired(partition: partition, epoch: epoch, expiresAt: local(expires)), now: .now))
                    } else {
                        run(planner.record(.refused(partition: partition, epoch: epoch), now: .now))
                    }
                } catch {
                    note("cannot take the lease of partition \(partition): \(error)")
                }
            case .renew:
                guard !renewed else { continue }
                renewed = true
                renew(renewals, seconds: seconds)
            case .release(let partition, let epoch):
                do {
                    try store.release(partition: partition, node: node, epoch: epoch)
                    changed = true
                    if view.leases[partition]?.node == node { view.leases[partition]?.expiresAt = .now }
                    published.withLock { $0.view = view }
                } catch {
                    note("cannot give back the lease of partition \(partition): \(error)")
                }
            case .startServing(let partition, let epoch):
                do {
                    try serving.start(partition, epoch)
                    published.withLock { _ = $0.running.insert(partition) }
                    logger.info("cluster: node \(node) serves partition \(partition) (epoch \(epoch))")
                } catch {
                    logger.error("cluster: cannot serve partition \(partition): \(error); giving its lease back")
                    run(planner.record(.refused(partition: partition, epoch: epoch), now: .now))
                    if (try? store.release(partition: partition, node: node, epoch: epoch)) != nil { changed = true }
                }
                keepAliveIfDue()
            case .stopServing(let partition, let epoch, let reason):
                published.withLock { _ = $0.running.remove(partition) }
                serving.stop(partition, epoch, reason)
                logger.notice("cluster: node \(node) stops serving partition \(partition) (epoch \(epoch)): \(reason.rawValue)")
            }
        }
    }

    /// A partition's Spins are recovered on this loop (`Serving.start`), so the partitions
    /// a tick takes are served one after the other: when that outlasts `renewalInterval`
    /// (a long journal, a busy machine), the heartbeat and the leases due are renewed
    /// between them, so that a slow recovery does not cost the node its other leases, nor
    /// its place in the cluster (the others count a node live by its heartbeat).
    private func keepAliveIfDue() {
        guard !planner.leaving, lastHeartbeat.duration(to: .now) >= planner.renewalInterval else { return }
        writeHeartbeat()
        let due = Self.leases(renewedBy: planner.renewalsDue(now: .now))
        if !due.isEmpty { renew(due, seconds: Double(leaseDuration.components.seconds)) }
    }

    /// Writes this node's heartbeat; what it wrote shows in the view at once (routing,
    /// `/v1/cluster`), and the first one is news to the other nodes.
    private func writeHeartbeat() {
        do {
            try store.heartbeat(node: node, advertise: advertise, definitions: planner.definitions)
            lastHeartbeat = .now
            if !announcedHeartbeat {
                // A node joins: the others make room for it now.
                announcedHeartbeat = true
                changed = true
            }
            view.nodes.removeAll { $0.name == node }
            view.nodes.append(.init(name: node, advertise: advertise, heartbeatAt: .now, definitions: planner.definitions))
        } catch {
            note("cannot write this node's heartbeat: \(error)")
        }
    }

    /// The leases the `.renew` actions of `actions` name.
    private static func leases(renewedBy actions: [LeasePlanner<ContinuousClock.Instant>.Action]) -> [PartitionLease] {
        actions.compactMap { action in
            if case .renew(let partition, let epoch) = action { return PartitionLease(partition: partition, epoch: epoch) }
            return nil
        }
    }

    /// Renews `leases` in one statement; a lease missing from the answer was refused
    /// (taken over), and the node stops serving its partition.
    private func renew(_ leases: [PartitionLease], seconds: Double) {
        do {
            let expiries = try store.renew(leases, node: node, seconds: seconds)
            for lease in leases {
                if let expires = expiries[lease.partition] {
                    view.leases[lease.partition]?.expiresAt = local(expires)
                    run(planner.record(.renewed(partition: lease.partition, epoch: lease.epoch, expiresAt: local(expires)),
                                       now: .now))
                } else {
                    run(planner.record(.refused(partition: lease.partition, epoch: lease.epoch), now: .now))
                }
            }
            // Routing sees the new expiries at once (a partition whose lease ran out by
            // this node's clock is not answered here: `ClusterRouting.decide`), also in a
            // tick that recovers Spins for long after this (`keepAliveIfDue`).
            published.withLock { $0.view = view }
        } catch {
            // Tried again at the next tick; a lease runs out if none succeeds.
            note("cannot renew the leases of \(leases.count) partition(s): \(error)")
        }
    }

    private func publish() {
        published.withLock { $0.view = view }
        onStatus(ClusterStatus.shared(view: view, now: .now, leaseDuration: leaseDuration, selfNode: node,
                                      partitions: partitions, spins: spins))
    }

    /// Logs a problem once, and when it clears.
    private func report(_ problem: String?) {
        guard problem != lastProblem else { return }
        onProblem(problem)
        if let problem {
            logger.error("cluster: \(problem)")
        } else if lastProblem != nil {
            logger.notice("cluster: the database answers again")
        }
        lastProblem = problem
    }

    // MARK: Time

    /// The rows as a view on the local clock; from now on `local` maps by this read.
    private func map(_ rows: ClusterRows, now: ContinuousClock.Instant) -> ClusterView<ContinuousClock.Instant> {
        databaseBase = (rows.now, now)
        return ClusterView(
            nodes: rows.nodes.map {
                .init(name: $0.name, advertise: $0.advertise, heartbeatAt: $0.heartbeatAt.map(local), definitions: $0.definitions)
            },
            leases: rows.leases.map {
                .init(partition: $0.partition, node: $0.node, epoch: $0.epoch, expiresAt: local($0.expiresAt),
                      definitions: $0.definitions)
            })
    }

    /// The database's time and the local instant of the last read.
    private var databaseBase: (date: Date, instant: ContinuousClock.Instant)?

    /// A database time as a local instant (by the offset of the last read).
    private func local(_ date: Date) -> ContinuousClock.Instant {
        guard let base = databaseBase else { return .now }
        return base.instant.advanced(by: Self.duration(seconds: date.timeIntervalSince(base.date)))
    }

    private static func duration(seconds: Double) -> Duration {
        .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
