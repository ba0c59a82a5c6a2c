import Dispatch
import Synchronization
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

extension RuntimeSpins {
    // MARK: Partitions (a cluster node)

    /// This node got `partition`: the made Spins of it that a start would host are brought
    /// up, on the queue (after what it holds): those that do not rest (awake when their
    /// last owner stopped serving them: woken, as a start recovers them) and those of kinds
    /// whose Spins share a Gear (hosted asleep, kept). The others stay on disk until
    /// something asks for them. The partitions a node gets together (a tick's) share one
    /// read of the store, and their wakes are taken a chunk at a time (`drainWakes`).
    package func servePartition(_ partition: Int) {
        let schedule = state.withLock { state -> Bool in
            state.partitions.insert(partition)
            state.arriving.insert(partition)
            defer { state.arrivingScheduled = true }
            return !state.arrivingScheduled
        }
        if schedule { queue.async { [self] in bringUpArrived() } }
    }

    /// `servePartition` of the partitions that arrived since the last time. On the queue.
    func bringUpArrived() {
        let arrived = state.withLock { state -> Set<Int> in
            state.arrivingScheduled = false
            defer { state.arriving = [] }
            return state.arriving
        }
        guard let journal, let factory = host.factory,
              let cluster = state.withLock({ $0.bringUp == nil ? nil : $0.cluster }) else { return }
        let made: [String: MadeSpin]
        do {
            made = try journal.madeSpins(including: factory.sharingKinds)
        } catch {
            return logger.error("the Spins made at run time of partitions \(arrived.sorted()) could not be read: \(error); each wakes when something asks for it")
        }
        var kept: [(name: String, record: MadeSpin)] = []
        var awake: [(name: String, record: MadeSpin)] = []
        for (name, record) in made.sorted(by: { $0.key < $1.key })
        where arrived.contains(cluster.partition(name)) && host.spin(named: name) == nil && owns(name) {
            if record.resting == nil { awake.append((name, record)) } else { kept.append((name, record)) }
        }
        do throws(APIError) {
            let gears = try hostAsleep(kept, lingers: false).merging(try hostAsleep(awake)) { first, _ in first }
            try hostPeers(of: kept.map(\.name) + awake.map(\.name), gears: gears)
        } catch {
            logger.error("the Spins made at run time of partitions \(arrived.sorted()) could not all be hosted: \(error.message); each wakes when something asks for it")
        }
        for (name, _) in awake {
            wake(name, background: true) { [logger] woke in
                if case .failure(let error) = woke { logger.error("Spin \(name) could not wake on this node: \(error.message)") }
            }
        }
        if !awake.isEmpty {
            logger.info("partitions \(arrived.sorted()): \(awake.count) Spin(s) made at run time were awake when they moved; waking here")
        }
    }

    /// This node no longer serves `partition`: every made Spin of it in memory stops (what
    /// it applied is committed while the lease allows it, as `ServedSpins.retire` does for
    /// configured Spins), its streams end (their clients resume at the new owner) and it
    /// leaves memory. From now on none of its Spins is made, found or woken here (`owns`).
    ///
    /// `wait`: whether this returns only once that is done. A hand-over waits (the lease
    /// goes back after this, and what the Spins applied must be committed under it first);
    /// a lease that ran out or was taken over does not: nothing can be committed under it
    /// any more, and the lease loop must not stand behind the queue, which may be waiting
    /// for the database (a make or wake while it restarts) — the loop's next renewals and
    /// takeovers are what brings the other partitions back. The queue is serial, so a
    /// make or wake it is carrying out finishes before the Spins are let go, either way,
    /// and a later `servePartition` of the same partition comes after them.
    package func retirePartition(_ partition: Int, wait: Bool) {
        // A node that makes no Spins (`serve` without `bringUp`) has none to let go of.
        let makes = state.withLock { state -> Bool in
            state.partitions.remove(partition)
            return state.bringUp != nil && state.cluster != nil
        }
        guard makes else { return }
        let letGo: @Sendable () -> Void = { [self] in
            defer { state.withLock { _ = $0.retiring.remove(partition) } }
            guard let cluster = state.withLock({ $0.cluster }) else { return }
            let names = state.withLock { $0.records.keys.filter { cluster.partition($0) == partition } }
            for name in names.sorted() { retire(name) }
        }
        if wait { return queue.sync(execute: letGo) }
        state.withLock { _ = $0.retiring.insert(partition) }
        queue.async(execute: letGo)
    }

    /// Returns once the made Spins of `partition` that a lost lease left to the queue are
    /// gone (`retirePartition` without waiting): before the partition is served again, so
    /// that nothing they applied under the lost lease is committed under the new one.
    package func awaitRetired(_ partition: Int) {
        guard state.withLock({ $0.retiring.contains(partition) }) else { return }
        queue.sync {}
    }

    /// Whether this server makes, finds and wakes Spin `name`: always, but on a cluster
    /// node, whose partitions it serves.
    func owns(_ name: String) -> Bool {
        state.withLock { state in state.cluster.map { state.partitions.contains($0.partition(name)) } ?? true }
    }

    /// `retirePartition` of one Spin. On the queue.
    func retire(_ name: String) {
        if let spin = host.spin(named: name) {
            spin.stopAndWait()
            endTerm(of: name)
            if !(spin is SleepingSpin) { journal?.retire(spin: name) }
        }
        gears.unregister(name)
        feeds.retire(name, ending: .moved(spin: name))
        host.remove(named: name)
        detach(name)
        metrics.forget(spin: name)
        state.withLock {
            $0.records[name] = nil
            $0.resting.remove(name)
            $0.lingering.remove(name)
        }
    }

    /// What `GET /v1/spins` lists: a Spin in memory, or one only on disk (asleep).
    package enum Listed: Sendable {
        case hosted(any HostedSpin)
        case stored(name: String, kind: String, sequence: UInt64)

        package var name: String {
            switch self {
            case .hosted(let spin): spin.name
            case .stored(let name, _, _): name
            }
        }
    }

    /// A page of `GET /v1/spins`: up to `limit` Spins in name order (UTF-8 byte order)
    /// whose names start with `prefix`, after `after`, that `include` takes, in memory or
    /// on disk; and whether more follow. Read off the network threads (the store waits for
    /// its lock); `then` gets the page or why the store could not be read. Costs the page
    /// (and the Spins `include` refuses on the way), not the Spins on disk.
    package func list(prefix: String, after: String?, limit: Int, include: @escaping @Sendable (String) -> Bool,
                      then: @escaping @Sendable (Result<(page: [Listed], more: Bool), APIError>) -> Void) {
        listing.async { [self] in
            guard let journal else { return then(.success(([], false))) }
            let (hosted, _) = host.spins(prefix: prefix, after: after, limit: limit + 1, where: include)
            var stored: [Listed] = []
            var cursor = after
            do {
                while stored.count <= limit {
                    let rows = try journal.storedSpins(prefix: prefix, after: cursor, limit: limit + 1)
                    // A Spin in memory is listed as it is there (it may have been loaded since
                    // the page of memory was read: the merge keeps one entry per name).
                    for row in rows where include(row.name) {
                        stored.append(host.spin(named: row.name).map(Listed.hosted)
                                      ?? .stored(name: row.name, kind: row.kind, sequence: row.sequence))
                    }
                    guard rows.count == limit + 1, let last = rows.last else { break }
                    cursor = last.name
                }
            } catch {
                return then(.failure(.unavailable("the Spins made at run time could not be listed: \(error)", retryAfter: 1)))
            }
            var merged: [Listed] = []
            var names = Set<String>()
            var (left, right) = (hosted.map(Listed.hosted)[...], stored[...])
            while merged.count <= limit, let next = Self.first(&left, &right) {
                if names.insert(next.name).inserted { merged.append(next) }
            }
            let more = merged.count > limit
            then(.success((Array(merged.prefix(limit)), more)))
        }
    }

    /// Takes the first (in name order) of the two sorted runs' heads.
    static func first(_ left: inout ArraySlice<Listed>, _ right: inout ArraySlice<Listed>) -> Listed? {
        guard let l = left.first else { return right.popFirst() }
        guard let r = right.first else { return left.popFirst() }
        return SpinHost.byteOrder(r.name, l.name) ? right.popFirst() : left.popFirst()
    }

    /// Hosts the Gears `made` brings and attaches it to them (before it registers).
    package func attach(_ made: SpinFactory.Made) {
        for gear in made.gears {
            if let new = gear.new {
                host.insert(gear: new)
                gears.install([new])
            }
            gears.attach(made.spin.name, to: gear.name, ports: gear.ports)
        }
    }

    /// `name` leaves its Gears; those left without a Spin go, unless the config names them.
    func detach(_ name: String) {
        let emptied = gears.detach(name)
        let gone = host.factory?.forget(emptied) ?? []
        gears.uninstall(gone)
        for gear in gone { host.removeGear(named: gear) }
    }

    /// A Spin whose deletion failed before anything was removed runs again; when its
    /// storage cannot be read now either, it leaves memory (what it had is in storage, and
    /// the next request finds it there), rather than stay as a fresh, unrecovered instance
    /// that would show its initial state and hold every event sent to it.
    func restart(_ name: String) {
        guard let bringUp = state.withLock({ $0.bringUp }), let kind = host.spin(named: name)?.kind else { return }
        let record = state.withLock { $0.records[name] }
        guard let fresh = host.replace(named: name) else { return }
        do {
            try bringUp([Rising(spin: fresh, made: record ?? MadeSpin(kind: kind), keepFeed: true)])[0].get()
            adopt(fresh, record ?? MadeSpin(kind: kind))
        } catch {
            logger.error("Spin \(name) could not run again after a failed deletion: \(error); it is read from storage again when something asks for it")
            gears.unregister(name)
            feeds.retire(name, ending: .storageFailed(spin: name, "it could not be read back: \(error)"))
            host.remove(named: name)
            detach(name)
            state.withLock {
                $0.records[name] = nil
                $0.resting.remove(name)
                $0.lingering.remove(name)
            }
        }
    }
}
