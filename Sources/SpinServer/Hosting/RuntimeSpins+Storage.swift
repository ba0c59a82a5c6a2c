import Dispatch
import Synchronization
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

extension RuntimeSpins {
    // MARK: In memory or on disk

    /// How many Spins are hosted, made ones on disk included (what `limits.maxSpins` holds).
    /// On the queue.
    var spinCount: Int {
        guard journal != nil else { return host.count }
        let (loaded, stored) = state.withLock { ($0.records.count, $0.stored ?? 0) }
        return host.count - loaded + stored
    }

    /// How many made Spins sleep on disk only (not in memory).
    package var onDiskOnly: Int {
        guard journal != nil else { return 0 }
        return state.withLock { max(0, ($0.stored ?? 0) - $0.records.count) }
    }

    /// Hosts asleep the Spin `name` the store holds, when memory does not hold it, with the
    /// Spins it shares Gears with (`hostPeers`). Returns whether it is hosted now (false:
    /// no Spin has the name). On the queue.
    func load(_ name: String) throws(APIError) -> Bool {
        if host.spin(named: name) != nil { return true }
        guard let journal, let factory = host.factory, factory.mayBeMade(name) else { return false }
        // Its partition moved away since the request was routed here: it goes there again.
        guard owns(name) else { throw .spinUnavailable(name, retryAfter: 1) }
        let record: MadeSpin?
        do {
            record = try journal.storedSpin(named: name)
        } catch {
            throw .storageUnavailable(spin: name, "it could not be looked up: \(error)")
        }
        guard let record else { return false }
        let gearNames = try hostAsleep([(name, record)])
        try hostPeers(of: [name], gears: gearNames)
        return true
    }

    /// Hosts the stored Spins `spins` asleep: listed, found, each one's Gear receiver
    /// parked after what it consumed (the first Gear event for it wakes it); a journal is
    /// read when its Spin wakes. `lingers`: each may be let go of again (`release`).
    /// Returns the Gears each is on. On the queue (or at start-up).
    @discardableResult
    func hostAsleep(_ spins: [(name: String, record: MadeSpin)], lingers: Bool = true) throws(APIError) -> [String: [String]] {
        guard let factory = host.factory else { return [:] }
        var parked: [(name: String, gears: [String], consumed: [String: UInt64])] = []
        // The receivers of those hosted, in one piece of the router's work (also when one
        // after them cannot be hosted).
        defer { gears.rest(parked) }
        for (name, record) in spins {
            guard let kind = factory.kind(named: record.kind) else {
                throw .internal("Spin \(name) was made of kind \(record.kind), which the config no longer has: add the kind back to kinds (then DELETE /v1/spins/\(name) if it is to go)")
            }
            let gearNames = try factory.hostedGears(of: name, kind: kind)
            do {
                try host.insert(SleepingSpin(name: name, kind: record.kind, sequence: record.resting?.sequence ?? 0))
            } catch {
                throw .internal("Spin \(name) could not be hosted: \(error)")
            }
            state.withLock {
                $0.records[name] = record
                if lingers { $0.lingering.insert(name) }
                if record.resting != nil { $0.resting.insert(name) }
            }
            parked.append((name, gearNames, (record.resting?.consumed ?? [:]).merging(record.joined) { max($0, $1) }))
        }
        return Dictionary(uniqueKeysWithValues: parked.map { ($0.name, $0.gears) })
    }

    /// Hosts asleep every Spin the store holds that shares a Gear with `names` (through a
    /// Gear name with `{key}`, `SpinFactory.peers(on:)`), and theirs in turn: whenever a
    /// Spin is in memory, so is every Spin on its Gears, so that what it sends is kept for
    /// them and wakes them. `gears`: the Gears of some of `names`, when known. Throws when
    /// the store cannot be read (or a Spin found there cannot be hosted): then whatever
    /// needed them does not go on.
    func hostPeers(of names: [String], gears known: [String: [String]]?) throws(APIError) {
        guard let journal, let factory = host.factory else { return }
        var pending = names
        var seen = Set(names)
        while let name = pending.popLast() {
            var gearNames = known?[name] ?? gears.gearNames(of: name)
            if gearNames.isEmpty, let spin = host.spin(named: name), let kind = factory.kind(named: spin.kind) {
                gearNames = (try? factory.hostedGears(of: name, kind: kind)) ?? []
            }
            for gear in gearNames {
                for peer in factory.peers(on: gear) where seen.insert(peer).inserted && host.spin(named: peer) == nil {
                    let record: MadeSpin?
                    do {
                        record = try journal.storedSpin(named: peer)
                    } catch {
                        throw .storageUnavailable(spin: name, "Spin \(peer), on Gear \(gear) with it, could not be looked up: \(error)")
                    }
                    guard let record else { continue }
                    try hostAsleep([(peer, record)])
                    pending.append(peer)
                }
            }
        }
    }

    /// Lets go of the sleeping Spin `name`, and of every Spin it shares Gears with, when
    /// nothing keeps any of them in memory: each sleeps resting (its store holds where it
    /// rests), no stream watches it, nothing waits for it on its Gears, none of its Gears
    /// lasts (`SpinFactory.lasts`) or holds values shared in memory (`holdsShared`), and
    /// its kind's Spins do not all share one. They are
    /// then only on disk: found again by name (`load`). Else they linger, looked at again
    /// by each sweep. On the queue.
    func release(_ name: String) {
        guard journal != nil, let factory = host.factory else { return }
        var group: [String] = []
        var pending = [name]
        var seen: Set<String> = [name]
        var kept = false
        let resting = state.withLock { $0.resting }
        while let next = pending.popLast() {
            guard let spin = host.spin(named: next) else { continue }
            group.append(next)
            guard spin is SleepingSpin, resting.contains(next), !factory.sharesGears(spin.kind), !feeds.isWatched(next),
                  let kind = factory.kind(named: spin.kind), let gearNames = try? factory.hostedGears(of: next, kind: kind) else {
                kept = true
                continue
            }
            for gear in gearNames {
                if factory.lasts(gear) || factory.holdsShared(on: gear) { kept = true }
                for peer in factory.peers(on: gear) where seen.insert(peer).inserted { pending.append(peer) }
            }
        }
        guard !kept, gears.release(group) else {
            let asleep = group.filter { host.spin(named: $0) is SleepingSpin }
            state.withLock { $0.lingering.formUnion(asleep) }
            return
        }
        for member in group {
            host.remove(named: member)
            detach(member)
            feeds.dropUnwatched(member)
            state.withLock {
                $0.records[member] = nil
                $0.resting.remove(member)
                $0.lingering.remove(member)
            }
        }
    }
}
