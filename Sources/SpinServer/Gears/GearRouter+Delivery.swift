import Dispatch
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

// The GearRouter's delivery, in its section: each event to each catching Spin once its
// cause is durable, in order, exactly once (see `GearRouter`).
extension GearRouter {
    // MARK: Delivery (in `section`)

    /// `records` of `sender` became known (durable, recovered or read): kept for the Spins
    /// that catch them and have not settled them, shown on the Gear stream, delivered.
    func add(_ records: [OutboxRecord], from sender: String, redelivered: Bool) {
        var outbox = outboxes[sender] ?? SenderOutbox()
        var wanted: [OutboxRecord] = []
        for record in records {
            if record.position > seen[record.gear, default: [:]][sender] ?? 0 { seen[record.gear, default: [:]][sender] = record.position }
            // Kept while a Spin served here that catches it has not had it (the others
            // are not served here: in a cluster the table keeps it for them).
            let holders = (catchers[record.gear] ?? []).compactMap { receivers[$0] }
            let needs = holders.filter { $0.inbox(sender).delivered < record.position }.count
            if redelivered { bump(\.duplicatesDropped, record.gear, by: holders.count - needs) }
            guard needs > 0 else {
                if !redelivered { show(record, from: sender, redelivered: false) }
                continue
            }
            wanted.append(record)
        }
        let added = outbox.merge(wanted)
        outboxes[sender] = outbox
        for record in added {
            show(record, from: sender, redelivered: redelivered)
            for name in catchers[record.gear] ?? [] { receivers[name]?.dirty.insert(sender) }
        }
        // The Spins that catch these Gears, not every receiver: a cost of what is sent.
        var pumped: Set<String> = []
        for gear in Set(records.map(\.gear)) {
            for name in catchers[gear] ?? [] where pumped.insert(name).inserted {
                if let receiver = receivers[name], receiver.dirty.contains(sender) { pump(receiver) }
            }
        }
        collect(sender)
    }

    /// Hands `receiver` what it has not been handed of the senders marked dirty, in
    /// position order per sender, up to `window` in flight.
    func pump(_ receiver: Receiver) {
        guard !receiver.blocked, !receiver.catchingUp else {
            if receiver.parked, !receiver.wakeAsked, waits(receiver) {
                receiver.wakeAsked = true
                let name = receiver.name
                if let wake = parkedEvent.withLock({ $0 }) { DispatchQueue.global().async { wake(name) } }
            }
            return
        }
        var inFlight = receiver.inFlight
        for sender in receiver.dirty.sorted() {
            guard inFlight < window else { return }
            var inbox = receiver.inbox(sender)
            defer { receiver.inboxes[sender] = inbox }
            guard let outbox = outboxes[sender] else {
                receiver.dirty.remove(sender)
                continue
            }
            var index = outbox.index(after: inbox.delivered)
            while index < outbox.entries.count, inFlight < window, !receiver.blocked {
                let entry = outbox.entries[index]
                if entry.position > inbox.delivered + 1 {
                    // The outbox no longer holds the events in between: consumed before
                    // this Spin was told (unrecorded declines), or trimmed (lagging).
                    guard inbox.items.isEmpty else { break }
                    skip(receiver, sender, &inbox, to: entry.position)
                }
                index += 1
                guard receiver.caught.contains(entry.gear) else {
                    inbox.handed(entry.position, enqueued: 0)
                    continue
                }
                let caught = deliver(entry, from: sender, to: receiver, redelivered: entry.position <= outbox.redeliveredThrough)
                if caught.enqueued == 0 && caught.refused {
                    receiver.blocked = true
                    break
                }
                inbox.handed(entry.position, enqueued: caught.enqueued)
                if caught.enqueued > 0 { inFlight += 1 }
            }
            if index >= outbox.entries.count { receiver.dirty.remove(sender) }
            inbox.durable(through: receiver.durable)
        }
    }

    /// Hands one event to the Spin's catching feedbacks (each Gear object of its Gear the
    /// Spin catches through).
    private func deliver(_ entry: OutboxRecord, from sender: String, to receiver: Receiver, redelivered: Bool) -> GearCatch {
        guard let gear = gear(named: entry.gear) else { return .ignored }
        let (name, generation, consumption) = (receiver.name, receiver.generation, receiver.consumption)
        let position = entry.position
        // Collecting: the events the Spin makes of it (one per catching feedback) go into
        // its loop together, applied and journaled all or none with the position.
        let receipt = GearReceipt(gear: entry.gear, source: sender, position: position, collecting: true) { [weak self] outcome in
            // On the catching Spin's executor.
            if case .declined = outcome { consumption.note(sender, position) }
            self?.section.run { [self] in self?.took(name, generation, sender, position, outcome) }
        }
        var caught = GearCatch.ignored
        var undecodable: [String] = []
        var catching = 0
        for port in gear.ports where port.isCaught(by: name) {
            catching += 1
            switch port.deliver(json: entry.event, from: sender, to: name, receipt: receipt) {
            case .caught(let outcome): caught = caught.combined(with: outcome)
            case .undecodable(let reason): undecodable.append(reason)
            }
        }
        // It caught this Gear when it registered: its loop has stopped since (the event
        // waits for its next start), or the feedbacks that caught it are gone (lifted
        // children of a state it left): nothing of it catches the event.
        if catching == 0 { return receiver.stopped ? .refused : .ignored }
        if caught.enqueued > 0, !receipt.commit() { caught = .refused }
        if caught.enqueued > 0 && redelivered { bump(\.redelivered, entry.gear) }
        if caught.enqueued == 0, !caught.refused, let reason = undecodable.first {
            gear.publish(GearTraffic(gear: entry.gear, from: sender, event: .raw(entry.event), position: position,
                                     skipped: (name, reason)))
            logger.warning("Spin \(name) skipped Gear event \(position) of \(sender) on \(entry.gear): \(reason)")
        }
        return caught
    }

    /// One event the Spin made of a delivery was applied or declined.
    private func took(_ spin: String, _ generation: UInt64, _ sender: String, _ position: UInt64,
                      _ outcome: GearReceiptOutcome) {
        guard let receiver = receivers[spin], receiver.generation == generation,
              var inbox = receiver.inboxes[sender] else { return }
        let sequence: UInt64
        switch outcome {
        case .applied(let at), .declined(let at): sequence = at
        }
        guard inbox.took(position, sequence: sequence) else { return }
        inbox.durable(through: receiver.durable)
        receiver.inboxes[sender] = inbox
        collect(sender)
        pump(receiver)
        finish()
    }

    /// The Spin's journal moved on: settle what it took, and let senders drop what every
    /// catching Spin settled.
    func settle(_ receiver: Receiver) {
        var moved = false
        for (sender, var inbox) in receiver.inboxes where inbox.durable(through: receiver.durable) > 0 {
            receiver.inboxes[sender] = inbox
            moved = true
        }
        guard moved else { return }
        for sender in Array(outboxes.keys) { collect(sender) }
        // Delivery may have stopped at a gap in a sender's positions (events this Spin
        // does not catch, or trimmed) until what it held settled.
        pump(receiver)
    }

    /// Whether a sender's outbox holds an event of a Gear `receiver` catches that it was not
    /// handed yet.
    func waits(_ receiver: Receiver) -> Bool {
        for sender in receiver.dirty {
            guard let outbox = outboxes[sender] else { continue }
            let from = outbox.index(after: receiver.inbox(sender).delivered)
            if outbox.entries[from...].contains(where: { receiver.caught.contains($0.gear) }) { return true }
        }
        return false
    }

    /// Whether `spin` has nothing in flight: every Gear event it was handed is settled.
    package func isSettled(_ spin: String) -> Bool {
        section.sync { [self] in (receivers[spin]?.inFlight ?? 0) == 0 }
    }

    /// The outbox no longer holds `sender`'s events up to `position - 1` for `receiver`.
    private func skip(_ receiver: Receiver, _ sender: String, _ inbox: inout GearInbox, to position: UInt64) {
        let from = inbox.delivered + 1
        inbox.skip(to: position)
        receiver.consumption.note(sender, position - 1)
        if let reason = receiver.lagging[sender] {
            logger.warning("Spin \(receiver.name) missed Gear events \(from)–\(position - 1) of \(sender): \(reason)")
        } else {
            logger.debug("Spin \(receiver.name): Gear events \(from)–\(position - 1) of \(sender) are no longer kept (consumed before)")
        }
    }

    /// Drops the front of `sender`'s outbox that every Spin catching it settled; past
    /// `backlog`, the oldest event goes anyway and the Spins holding it back lag.
    func collect(_ sender: String) {
        guard var outbox = outboxes[sender] else { return }
        var drop = 0
        while drop < outbox.entries.count {
            let entry = outbox.entries[drop]
            let holders = (catchers[entry.gear] ?? []).compactMap { receivers[$0] }
                .filter { $0.inbox(sender).settled < entry.position }
            if holders.isEmpty {
                drop += 1
                continue
            }
            guard outbox.entries.count - drop > backlog else { break }
            for receiver in holders where receiver.lagging[sender] == nil {
                let reason = receiver.blocked
                    ? "it is suspended, and more than limits.gearBacklog (\(backlog)) of \(sender)'s Gear events waited for it"
                    : "it fell more than limits.gearBacklog (\(backlog)) Gear events of \(sender) behind"
                receiver.lagging[sender] = reason
                laggingReceivers.insert(receiver.name)
                logger.warning("Spin \(receiver.name) is LAGGING on Gear \(entry.gear): \(reason); the oldest are no longer kept for it")
            }
            drop += 1
        }
        guard drop > 0 else { return }
        outbox.entries.removeFirst(drop)
        if outbox.entries.isEmpty && outbox.redeliveredThrough == 0 {
            outboxes[sender] = nil
        } else {
            outboxes[sender] = outbox
        }
    }

    /// An event propagated on a hosted Gear from outside the server's Spins: to every
    /// Spin here that catches it, now, without a receipt.
    func untracked(gear name: String, event: [UInt8], from source: String?) {
        guard let gear = gear(named: name) else { return }
        gear.publish(GearTraffic(gear: name, from: source, event: .raw(event)))
        for spin in (catchers[name] ?? []).sorted() {
            for port in gear.ports where port.isCaught(by: spin) {
                _ = port.deliver(json: event, from: source, to: spin, receipt: nil)
            }
        }
    }

    private func show(_ record: OutboxRecord, from sender: String, redelivered: Bool) {
        gear(named: record.gear)?.publish(GearTraffic(gear: record.gear, from: sender, event: .raw(record.event),
                                                position: record.position, redelivered: redelivered))
    }
}
