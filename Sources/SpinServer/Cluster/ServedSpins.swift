import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

/// The Spins a cluster node serves, each for a term: from the moment the lease loop
/// gives it the lease of the Spin's partition (`serve`: recovered from what is durable,
/// observed, started) to the moment the lease goes (`retire`: stopped, committed, its
/// requests answered or sent on). What `ClusterCoordinator.Serving` does on a
/// `LoopServer` node: `servePartition` and `retirePartition` do it for every Spin of a
/// partition.
package final class ServedSpins: Sendable {
    private let host: SpinHost
    private let feeds: SpinFeeds
    private let journal: Journal
    private let fence: LeaseFence
    private let gears: GearRouter
    private let feedbackBudget: Int
    private let logger: Logger
    /// The hosted Spins of each partition (`SpinPartitions`).
    private let members: [Int: [String]]
    /// The Spins made at run time, told of each partition this node gets or loses
    /// (`RuntimeSpins.servePartition`, `retirePartition`).
    private let made: RuntimeSpins?
    /// Sees every event a Spin applies, from before it starts (`LoopServer.observe`: the
    /// feed, the journal, the metrics, the suspensions), with what it consumes of Gears.
    private let observe: @Sendable (any HostedSpin, SpinFeed, Served) -> [SpinSubscription]

    /// What a Spin starting here brings to Gear delivery: what it journals with each event
    /// (nil on no Gear), and its outbox's last position.
    package struct Served {
        package var consumption: GearConsumption?
        package var outboxPosition: UInt64
    }
    /// Each served Spin's observations, cancelled when the node stops serving it.
    private let terms = Protected<[String: [SpinSubscription]]>([:])

    package init(host: SpinHost, feeds: SpinFeeds, journal: Journal, fence: LeaseFence, gears: GearRouter,
                 feedbackBudget: Int, logger: Logger, made: RuntimeSpins? = nil,
                 observe: @escaping @Sendable (any HostedSpin, SpinFeed, Served) -> [SpinSubscription]) {
        self.made = made
        var members: [Int: [String]] = [:]
        for spin in host.spins.map(\.name).sorted() { members[fence.partitions.partition(of: spin), default: []].append(spin) }
        self.members = members
        self.host = host
        self.feeds = feeds
        self.journal = journal
        self.fence = fence
        self.gears = gears
        self.feedbackBudget = feedbackBudget
        self.logger = logger
        self.observe = observe
    }

    /// What the lease loop calls when this node gets or loses a partition.
    package var serving: ClusterCoordinator.Serving {
        .init(start: { [self] partition, epoch in try servePartition(partition, epoch: epoch) },
              stop: { [self] partition, _, reason in retirePartition(partition, handedOver: reason == .handedOver) })
    }

    /// This node got `partition`'s lease under `epoch`: its writes pass the fence from
    /// now, and each hosted Spin of the partition is served (`serve`). One that cannot
    /// be recovered retires those served before it and throws: the lease goes back. Then
    /// the Spins made at run time of it that were awake come up (`made`). First, the made
    /// Spins a lost lease of it left in memory are let go of (`RuntimeSpins.awaitRetired`).
    package func servePartition(_ partition: Int, epoch: UInt64) throws {
        made?.awaitRetired(partition)
        fence.serve(partition: partition, epoch: epoch)
        let spins = members[partition] ?? []
        for (index, spin) in spins.enumerated() {
            do {
                try serve(spin)
            } catch {
                for served in spins[..<index] { retire(served) }
                fence.stopServing(partition: partition)
                throw error
            }
        }
        made?.servePartition(partition)
    }

    /// This node no longer serves `partition`: every Spin of it retires (`retire`), and
    /// from then on the fence refuses their writes. `handedOver`: the lease goes back
    /// after this (a planned move), so the made Spins' commits are waited for; else the
    /// lease is already gone and they are let go without holding up the lease loop
    /// (`RuntimeSpins.retirePartition`).
    package func retirePartition(_ partition: Int, handedOver: Bool = true) {
        for spin in members[partition] ?? [] { retire(spin) }
        made?.retirePartition(partition, wait: handedOver)
        fence.stopServing(partition: partition)
    }

    /// This node serves `spin`'s partition: a fresh instance of the Spin, recovered
    /// from everything durable (what the previous owner wrote), observed and started.
    package func serve(_ spin: String) throws {
        let began = ContinuousClock.now
        guard let hosted = host.replace(named: spin) else { return }
        let feed = feeds.replace(spin, ending: .moved(spin: spin))
        let sequence: UInt64
        let recovered: Journal.RecoveredGears?
        do {
            (sequence, recovered) = try journal.adopt(hosted, feed: feed)
        } catch let error as RecoveryError where error.isolates {
            // Its definition here cannot run its history (the journal logged why): this
            // Spin is unrecoverable on this node, the partition's others are served.
            host.replace(named: spin)
            feeds.retire(spin, ending: .moved(spin: spin))
            host.isolate(named: spin, Unrecoverable(journal: journal.store.journalName(of: spin), sequence: error.sequence,
                                                    error: error.problem))
            return
        } catch {
            host.replace(named: spin)
            feeds.retire(spin, ending: .moved(spin: spin))
            throw error
        }
        hosted.prepare(feedbackBudget: feedbackBudget)
        let markers = SuspensionMarker(store: journal.store)
        // It gets what it has not consumed of its Gears (read from the outbox), from now.
        // Its suspensions reach the router through its observation (`LoopServer.observe`).
        let consumption = gears.register(hosted, consumed: recovered?.consumed ?? [:], durable: sequence,
                                         watchingSuspensions: false)
        let served = Served(consumption: consumption, outboxPosition: recovered?.outboxPosition ?? 0)
        terms.withLock { $0[spin] = observe(hosted, feed, served) }
        if let reason = try? markers.read(spin: spin) { hosted.suspend(reason: reason) }
        hosted.start()
        let took = (ContinuousClock.now - began).components
        logger.info("recovered \(spin) at sequence \(sequence) in \(took.seconds * 1000 + took.attoseconds / 1_000_000_000_000_000) ms")
    }

    /// This node no longer serves `spin` (its partition's lease goes: a hand-over, a node
    /// leaving, or a lease lost). In this order, so that a planned move refuses nothing:
    /// 1. The loop stops, and this waits until it applies nothing more: events it had
    ///    taken and not applied come back unapplied, and their requests follow the Spin
    ///    to its next owner (`APIRouter.followMove`); a batch it was applying is applied
    ///    whole and observed (so journaled) first.
    /// 2. What it applied is committed while the lease allows it, and every request that
    ///    waits for it is acknowledged then. Only a commit the store refuses (the lease
    ///    was taken over: the fence; or the storage fails) leaves acknowledgements
    ///    waiting: they get 503 `spin_unavailable` (nothing of it is durable; the new
    ///    owner recovers without it).
    /// 3. The feed ends: streams close (their clients resume at the new owner), and until
    ///    this node serves the Spin again, events that still reach it are refused as
    ///    stopped, so they follow the move too.
    /// 4. A fresh, unmade instance takes the Spin's place; the Gear router forgets it (its
///    next owner gets from the outbox what it had not consumed).
    package func retire(_ spin: String) {
        host.spin(named: spin)?.stopAndWait()
        for subscription in terms.withLock({ $0.removeValue(forKey: spin) ?? [] }) { subscription.cancel() }
        journal.retire(spin: spin)
        gears.unregister(spin)
        feeds.retire(spin, ending: .moved(spin: spin))
        host.replace(named: spin)
    }
}
