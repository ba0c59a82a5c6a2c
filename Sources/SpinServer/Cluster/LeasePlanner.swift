/// One node's lease decisions: which partitions (`SpinPartitions`) to acquire, renew,
/// hand over and stop serving, from what the database shows. Pure: no database, no
/// timers. The caller reads a `ClusterView`, calls `tick` every `renewalInterval`,
/// carries out the actions in order, and reports each lease write's answer to `record`.
/// A node serves the Spins of the partitions it holds; the number of Spins never enters.
///
/// The rules, with `live` the nodes whose heartbeat is younger than the lease
/// duration (this node always counts itself) and `Placement` choosing among them (for a
/// partition whose row says its Spins may be recorded under newer versions of a machine
/// definition than a node runs, among the others first: a rolling upgrade,
/// `Placement.owner(of:among:recorded:)`):
/// - every tick starts with a heartbeat;
/// - a partition this node serves is dropped (`stopServing`) as soon as the view shows
///   another node or a newer epoch on its row (taken over), or once its lease ran out
///   without a renewal this node saw succeed (expired: a paused process wakes up
///   here and stops writing; the database's fencing refuses its writes anyway);
/// - a partition this node serves that placement now gives to another live node is
///   handed over: `stopServing`, then `release` (the new owner is live already, so it
///   takes the partition at its next tick);
/// - a served partition whose lease has two thirds or less of its duration left is
///   renewed (the caller renews every such lease of a tick in one write);
/// - a partition placement gives to this node, whose row is missing, expired or this
///   node's own from an earlier run, is acquired with the next epoch; serving starts
///   only once the database confirms (`record(.acquired)` → `startServing`);
/// - once `leaving` (a graceful stop), no heartbeat is written and this node no longer
///   counts itself live: every partition it serves is handed over as placement gives it
///   to another node (or to none, when it was the last), and nothing is acquired.
///
/// The database makes the writes safe where the views of two nodes differ: an
/// `acquire(partition, e)` succeeds only if the row still has epoch `e - 1` (or there is
/// no row and `e == 1`) and is expired or already this node's; a `renew` or `release`
/// only if the row still has this node and epoch. So no two nodes ever serve one
/// partition under the same epoch.
package struct LeasePlanner<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// Why a node stops serving a partition.
    package enum StopReason: String, Sendable, Equatable {
        /// Its lease ran out before a renewal succeeded.
        case expired
        /// The row shows another node or a newer epoch, or a renewal was refused.
        case takenOver
        /// Placement gives the partition to another live node (a node joined), or this node
        /// leaves the cluster.
        case handedOver
    }

    /// What the node does next, in order.
    package enum Action: Sendable, Equatable {
        /// Write this node's heartbeat (and advertise URL) to its node row.
        case heartbeat
        /// Take the lease of `partition` with `epoch` (the row's epoch + 1) for one lease
        /// duration, if the row still has `epoch - 1` and is expired or this node's.
        case acquire(partition: Int, epoch: UInt64)
        /// Push the lease's expiry one lease duration from now, if the row still has this
        /// node and `epoch`.
        case renew(partition: Int, epoch: UInt64)
        /// Let the lease go (expire it now, keeping its epoch), if the row still has
        /// this node and `epoch`. Follows a `stopServing` of the same partition.
        case release(partition: Int, epoch: UInt64)
        /// Serve the Spins of `partition` (each recovered from its journal when it runs
        /// here), writing under `epoch`.
        case startServing(partition: Int, epoch: UInt64)
        /// Stop applying and writing events of the Spins of `partition` (fencing), for
        /// `reason`.
        case stopServing(partition: Int, epoch: UInt64, reason: StopReason)
    }

    /// The database's answer to a lease write.
    package enum Write: Sendable, Equatable {
        /// `acquire` succeeded: the lease is this node's until `expiresAt`.
        case acquired(partition: Int, epoch: UInt64, expiresAt: Instant)
        /// `renew` succeeded: the lease now runs until `expiresAt`.
        case renewed(partition: Int, epoch: UInt64, expiresAt: Instant)
        /// The row no longer matched (an acquire lost a race, or a renewal came after a
        /// takeover).
        case refused(partition: Int, epoch: UInt64)
    }

    /// A lease this node holds and serves under.
    package struct Held: Sendable, Equatable {
        package var epoch: UInt64
        package var expiresAt: Instant
    }

    /// This node's `cluster.node`.
    package let node: String
    /// The version of each machine definition this node runs, by its stored name.
    package let definitions: [String: Int]
    /// `cluster.leaseSeconds`.
    package let leaseDuration: Duration
    /// The partitions this node serves now, with their leases.
    package private(set) var held: [Int: Held] = [:]
    /// This node is leaving the cluster: the next `tick` hands every partition over.
    package var leaving = false

    package init(node: String, leaseDuration: Duration, definitions: [String: Int] = [:]) {
        self.node = node
        self.leaseDuration = leaseDuration
        self.definitions = definitions
    }

    /// The node placement gives `partition` to among `live` (each with the versions its
    /// row says it runs; this node with its own, as its row may lag).
    private func owner(of partition: Int, among live: Set<String>, view: ClusterView<Instant>) -> String? {
        var versions: [String: [String: Int]] = [:]
        for name in live { versions[name] = name == node ? definitions : view.node(named: name)?.definitions ?? [:] }
        return Placement.owner(of: partition, among: versions, recorded: view.leases[partition]?.definitions ?? [:])
    }

    /// How often to `tick`: a third of the lease, so that a renewal can fail once and
    /// still be retried before the lease runs out.
    package var renewalInterval: Duration { leaseDuration / 3 }

    /// The partitions this node serves now.
    package var serving: Set<Int> { Set(held.keys) }

    /// The decisions for `now`, given the database's `view` and the cluster's `partitions`.
    package mutating func tick(now: Instant, view: ClusterView<Instant>, partitions: Range<Int>) -> [Action] {
        var actions: [Action] = leaving ? [] : [.heartbeat]
        var live = Set(view.liveNodeNames(now: now, leaseDuration: leaseDuration))
        if leaving { live.remove(node) } else { live.insert(node) }
        for partition in held.keys.sorted() {
            guard var lease = held[partition] else { continue }
            if let row = view.leases[partition], row.node != node || row.epoch != lease.epoch {
                held[partition] = nil
                actions.append(.stopServing(partition: partition, epoch: lease.epoch, reason: .takenOver))
                continue
            }
            if let row = view.leases[partition], row.expiresAt > lease.expiresAt {
                lease.expiresAt = row.expiresAt
                held[partition] = lease
            }
            if now >= lease.expiresAt {
                held[partition] = nil
                actions.append(.stopServing(partition: partition, epoch: lease.epoch, reason: .expired))
            } else if owner(of: partition, among: live, view: view) != node {
                held[partition] = nil
                actions.append(.stopServing(partition: partition, epoch: lease.epoch, reason: .handedOver))
                actions.append(.release(partition: partition, epoch: lease.epoch))
            } else if isRenewalDue(lease, now: now) {
                actions.append(.renew(partition: partition, epoch: lease.epoch))
            }
        }
        for partition in partitions where !leaving && held[partition] == nil && owner(of: partition, among: live, view: view) == node {
            let row = view.leases[partition]
            if let row, row.isValid(now: now), row.node != node { continue }
            actions.append(.acquire(partition: partition, epoch: (row?.epoch ?? 0) + 1))
        }
        return actions
    }

    /// The renewals due at `now`: each lease held with two thirds of it or less left, as
    /// `tick` renews them, without a view. For a caller busy since its last tick (a long
    /// recovery of a partition it just took): it renews these between recoveries.
    package func renewalsDue(now: Instant) -> [Action] {
        held.keys.sorted().compactMap { partition in
            guard let lease = held[partition], now < lease.expiresAt, isRenewalDue(lease, now: now) else { return nil }
            return .renew(partition: partition, epoch: lease.epoch)
        }
    }

    /// Whether `lease` (not run out at `now`) is renewed now: two thirds of it or less left.
    private func isRenewalDue(_ lease: Held, now: Instant) -> Bool {
        now.duration(to: lease.expiresAt) <= leaseDuration * 2 / 3
    }

    /// The first instant after `now` at which a partition another node holds becomes
    /// this node's to take (its lease has run out and its holder's heartbeat is too old for
    /// placement to count it live), if placement then gives it here: a tick at that
    /// instant takes it, instead of the next regular tick up to a third of a lease later.
    package func nextTakeover(now: Instant, view: ClusterView<Instant>, partitions: Range<Int>) -> Instant? {
        guard !leaving else { return nil }
        var earliest: Instant?
        for partition in partitions where held[partition] == nil {
            guard let lease = view.validLease(of: partition, now: now), lease.node != node else { continue }
            var at = lease.expiresAt
            if let beat = view.node(named: lease.node)?.heartbeatAt {
                at = max(at, beat.advanced(by: leaseDuration))
            }
            let live = Set(view.nodes.filter { $0.isLive(now: at, leaseDuration: leaseDuration) }.map(\.name))
                .union([node])
            guard owner(of: partition, among: live, view: view) == node else { continue }
            if earliest.map({ at < $0 }) ?? true { earliest = at }
        }
        return earliest
    }

    /// Takes in the database's answer to a lease write; returns what follows from it.
    package mutating func record(_ write: Write, now: Instant) -> [Action] {
        switch write {
        case .acquired(let partition, let epoch, let expiresAt):
            guard now < expiresAt, (held[partition]?.epoch ?? 0) < epoch else { return [] }
            // Taken while this node began to leave: given back at once.
            if leaving { return [.release(partition: partition, epoch: epoch)] }
            held[partition] = Held(epoch: epoch, expiresAt: expiresAt)
            return [.startServing(partition: partition, epoch: epoch)]
        case .renewed(let partition, let epoch, let expiresAt):
            if held[partition]?.epoch == epoch { held[partition]?.expiresAt = expiresAt }
            return []
        case .refused(let partition, let epoch):
            guard held[partition]?.epoch == epoch else { return [] }
            held[partition] = nil
            return [.stopServing(partition: partition, epoch: epoch, reason: .takenOver)]
        }
    }
}
