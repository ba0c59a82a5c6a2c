import Dispatch
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

// The GearRouter's receivers (the Spins that catch Gear events: registered, rolled back,
// suspended) and what the journal and a cluster's outbox reader tell it (see `GearRouter`).
extension GearRouter {
    // MARK: Receivers

    /// `spin` runs here from now on (its loop is made, not started): it gets what it has
    /// not consumed of the Gears it catches. Returns what its observer journals with each
    /// event (nil for a Spin on no Gear). `consumed` is what recovery found; `durable` its
    /// recovered sequence.
    @discardableResult
    package func register(_ spin: any HostedSpin, consumed: [String: UInt64], durable: UInt64,
                          watchingSuspensions: Bool = true) -> GearConsumption? {
        let names = gearNames(of: spin.name)
        guard !names.isEmpty else { return nil }
        let consumption = GearConsumption()
        let name = spin.name
        consumptions.withLock { $0[name] = consumption }
        let caught = SmallSet(names.filter { gear in self.gear(named: gear)?.ports.contains { $0.isCaught(by: name) } ?? false })
        let receiver = Receiver(name: name, consumption: consumption, caught: caught, consumed: consumed,
                                durable: mode == .inMemory ? .max : durable)
        receiver.catchingUp = mode == .cluster && !caught.isEmpty
        receiver.spin = spin
        receiver.registered = true
        if watchingSuspensions {
            receiver.subscription = spin.onSuspensionChange { [weak self] suspension in
                self?.spinSuspensionChanged(name, suspended: suspension != nil)
            }
        }
        section.sync { [self] in
            registrations += 1
            receiver.registration = registrations
            if let earlier = receivers[name] {
                earlier.subscription?.cancel()
                for gear in earlier.caught { catchers[gear]?.remove(name) }
            }
            receivers[name] = receiver
            for gear in caught { catchers[gear, default: []].insert(name) }
            receiver.dirty = SmallSet(outboxes.keys)
            receiver.dirty.formUnion(consumed.keys)
            pump(receiver)
            finish()
        }
        if receiver.catchingUp, let catchUp = catchUp.withLock({ $0 }) {
            catchUp(CatchUp(spin: name, gears: caught.sorted(), consumed: consumed, registration: receiver.registration))
        }
        return consumption
    }

    /// `spin` no longer runs here (a cluster node stops serving it, or it stops).
    package func unregister(_ spin: String) {
        captures.withLock { _ = $0.removeValue(forKey: spin) }
        consumptions.withLock { _ = $0.removeValue(forKey: spin) }
        section.sync { [self] in
            guard let receiver = receivers.removeValue(forKey: spin) else { return }
            receiver.subscription?.cancel()
            for gear in receiver.caught { catchers[gear]?.remove(spin) }
            for sender in Array(outboxes.keys) { collect(sender) }
            finish()
        }
    }

    /// `spin` went back to its durable state at `sequence` (its storage failed, or a
    /// transition of it did not encode): what it took after that is delivered again. On
    /// the Spin's executor, as it goes back.
    package func rolledBack(_ spin: String, to sequence: UInt64) {
        captures.withLock { $0[spin] }?.rolledBack(to: sequence)
        receiverConsumption(spin)?.forget()
        section.run { [self] in
            guard let receiver = receivers[spin] else { return }
            var handedBack = 0
            for (sender, var inbox) in receiver.inboxes {
                handedBack += inbox.rollBack(to: sequence)
                receiver.inboxes[sender] = inbox
                receiver.dirty.insert(sender)
            }
            if handedBack > 0 { receiver.generation += 1 }
            // In memory every take is settled at once (`durable` stays at the top).
            if mode != .inMemory { receiver.durable = min(receiver.durable, sequence) }
            pump(receiver)
            finish()
        }
    }

    private func receiverConsumption(_ spin: String) -> GearConsumption? {
        consumptions.withLock { $0[spin] }
    }

    /// Spin `spin` suspended or runs again, on its executor: what a host that watches its
    /// suspensions itself tells the router (`register(...watchingSuspensions: false)`, one
    /// suspension handler per Spin, not two).
    package func spinSuspensionChanged(_ spin: String, suspended: Bool) {
        section.run { [self] in suspensionChanged(spin, suspended: suspended) }
    }

    /// The Spin suspended (its pending events were dropped: what was in flight comes
    /// back) or runs again (delivery goes on). In `section`.
    private func suspensionChanged(_ spin: String, suspended: Bool) {
        guard let receiver = receivers[spin] else { return }
        if suspended {
            receiver.blocked = true
            var handedBack = 0
            for (sender, var inbox) in receiver.inboxes {
                handedBack += inbox.dropInFlight()
                receiver.inboxes[sender] = inbox
                receiver.dirty.insert(sender)
            }
            if handedBack > 0 { receiver.generation += 1 }
        } else {
            receiver.blocked = false
            pump(receiver)
        }
        finish()
    }

    // MARK: Durability

    /// A Spin's journal is durable through `sequence` (journal's section): as a catching
    /// Spin, what it took up to there is settled; as a sender (`journaled`), `outbox` is
    /// sent.
    package func journalDurable(spin: String, through sequence: UInt64, outbox: [OutboxRecord]) {
        section.run { [self] in
            if let receiver = receivers[spin], mode != .inMemory {
                receiver.durable = sequence
                settle(receiver)
            }
            if mode == .journaled, !outbox.isEmpty { add(outbox, from: spin, redelivered: false) }
            finish()
        }
    }

    /// What a compaction of `spin`'s journal keeps of its outbox.
    package func outboxToKeep(of spin: String) -> [OutboxRecord] {
        guard mode == .journaled else { return [] }
        return section.sync { [self] in outboxes[spin]?.entries ?? [] }
    }

    /// Recovery found `outbox` in `spin`'s journal (`journaled`): the events some Spin that
    /// catches them has not consumed are delivered again. Before the Spins start.
    package func seed(_ spin: String, outbox: [OutboxRecord]) {
        guard mode == .journaled, !outbox.isEmpty else { return }
        section.sync { [self] in
            outboxes[spin, default: SenderOutbox()].redeliveredThrough = outbox.map(\.position).max() ?? 0
            add(outbox, from: spin, redelivered: true)
            finish()
        }
    }

    /// Outbox rows a cluster node read (`GearOutboxReader`), in commit order; `catchUp`
    /// for rows it read for a Spin starting here (then `caughtUp`).
    package func received(_ rows: [(sender: String, record: OutboxRecord)], catchUp: Bool) {
        guard !rows.isEmpty else { return }
        section.run { [self] in
            var bySender: [String: [OutboxRecord]] = [:]
            var order: [String] = []
            for row in rows {
                if bySender[row.sender] == nil { order.append(row.sender) }
                bySender[row.sender, default: []].append(row.record)
            }
            for sender in order {
                let records = bySender[sender] ?? []
                if catchUp {
                    let last = records.map(\.position).max() ?? 0
                    outboxes[sender, default: SenderOutbox()].redeliveredThrough =
                        max(outboxes[sender]?.redeliveredThrough ?? 0, last)
                }
                add(records, from: sender, redelivered: catchUp)
            }
            finish()
        }
    }

    /// The outbox reader has read what `spin` had not consumed (its catch-up): delivery starts.
    package func caughtUp(_ spin: String, registration: UInt64 = 0) {
        section.run { [self] in
            guard let receiver = receivers[spin], registration == 0 || receiver.registration == registration else { return }
            receiver.catchingUp = false
            receiver.dirty.formUnion(outboxes.keys)
            pump(receiver)
            finish()
        }
    }
}
