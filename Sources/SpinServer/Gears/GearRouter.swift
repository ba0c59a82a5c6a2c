import Dispatch
import Logging
import SpinCore
import SpinStorage
import SpinWire
import SpinConcurrency

/// Gear delivery in the server: exactly once, in order per sender, and output-gated
/// (docs/OPERATIONS.md, "Gear delivery").
///
/// The router takes the fan-out of every hosted Gear over (`Gear.route(through:)`). A Gear
/// event a Spin's feedbacks propagate while they are given a new state is journaled with
/// that transition, as the Spin's **outbox** (`GearCapture`, `OutboxRecord`); one
/// propagated apart from a transition (an effect's) is journaled on its own. It is sent
/// only once its journal write is as durable as `storage.fsync` says, so no Spin ever
/// catches an event whose cause a crash can take back.
///
/// Each catching Spin consumes each sender's outbox in position order (`GearInbox`): an
/// event is handed to its catching feedbacks with a `GearReceipt`, the event they make of
/// it is journaled with the sender and position it consumed (`HostedTransition.consumed`),
/// and once that is durable the position is settled. After a crash, a restart, a move
/// between nodes or a storage outage, what a catching Spin has not consumed is delivered
/// again from the outbox, and what it has is dropped by its position.
///
/// Where the outboxes come from (`Mode`):
/// - `journaled` (the file backend): each Spin's journal keeps its outbox; the journal
///   tells the router what became durable (`journalDurable`), and recovery what it holds
///   (`seed`). The router keeps a sender's events until every Spin that catches them has
///   settled them (at most `backlog` per sender; past it, a Spin that holds them back is
///   marked lagging and skips the oldest), and a compaction keeps them (`outboxToKeep`).
/// - `cluster` (PostgreSQL): outbox rows are written in the journal's transaction and
///   every node reads them in commit order (`GearOutboxReader` → `received`); a Spin a node
///   starts serving is caught up from the table (`caughtUp`).
/// - `inMemory` (no storage): an event is sent once its state was given to the feedbacks.
///
/// Everything the router keeps is confined to its serial section; calls come from the
/// Spins' executors, the journal's section and the outbox reader.
package final class GearRouter: JournalGearListener, @unchecked Sendable {
    package enum Mode: Sendable, Equatable {
        case inMemory, journaled, cluster
    }

    package let mode: Mode
    /// Events of one sender kept for a catching Spin that has not settled them, at most.
    package let backlog: Int
    /// Events handed to one catching Spin and not yet applied or declined, at most.
    package let window: Int
    private let logger: Logger
    private let section: SerialSection
    /// Journals Gear events propagated apart from a transition (`Journal.record(spin:outbox:)`).
    private let recordAlone: @Sendable (String, [GearOutput]) -> Void
    /// Asks the outbox reader for what a Spin starting here has not consumed (cluster).
    private let catchUp = Protected<(@Sendable (CatchUp) -> Void)?>(nil)

    // Set by `install`, before any Spin starts; read-only after.
    /// The hosted Gears by name, and the Gears each Spin is attached to (Spins and Gears
    /// made at run time join them).
    private let hosted = Protected<(gears: [String: any HostedGear], bySpin: [String: SmallSet<String>])>(([:], [:]))

    // Confined to `section`.
    private var outboxes: [String: SenderOutbox] = [:]
    private var receivers: [String: Receiver] = [:]
    /// The registered Spins that catch each Gear.
    private var catchers: [String: SmallSet<String>] = [:]
    /// In memory: each sender's last position.
    private var memoryPositions: [String: UInt64] = [:]

    /// Looked up from any thread (a propagation).
    private let captures = Protected<[String: GearCapture]>([:])
    /// What `/metrics` and `GET /v1/gears` read, updated at the end of each piece of work.
    private let readings = Protected(Readings())

    /// One sender's outbox as the router holds it: the events some registered Spin that
    /// catches them has not settled, in position order.
    private struct SenderOutbox {
        var entries: [OutboxRecord] = []
        /// Events up to this position came from a recovery or a catch-up: sent again.
        var redeliveredThrough: UInt64 = 0

        /// The index of the first entry after `position`.
        func index(after position: UInt64) -> Int {
            var low = 0, high = entries.count
            while low < high {
                let middle = (low + high) / 2
                if entries[middle].position <= position { low = middle + 1 } else { high = middle }
            }
            return low
        }

        /// Adds `new` (any order, maybe known already); returns the ones it did not hold.
        mutating func merge(_ new: [OutboxRecord]) -> [OutboxRecord] {
            var added: [OutboxRecord] = []
            for entry in new {
                if let last = entries.last, entry.position <= last.position {
                    let index = index(after: entry.position - 1)
                    if index < entries.count, entries[index].position == entry.position { continue }
                    entries.insert(entry, at: index)
                } else {
                    entries.append(entry)
                }
                added.append(entry)
            }
            return added
        }
    }

    /// A catching Spin served here. Confined to `section`.
    private final class Receiver: @unchecked Sendable {
        let name: String
        let consumption: GearConsumption
        /// The Gears it catches (some feedback of its loop catches events of them).
        var caught: SmallSet<String>
        /// Where its consumption of each sender stands.
        var inboxes: SmallDictionary<String, GearInbox> = [:]
        /// What it had consumed when it started here (durable).
        var consumed: [String: UInt64]
        /// Its journal is durable through this sequence.
        var durable: UInt64
        /// Takes no event now (suspended, or refused one): delivery waits for a resume.
        var blocked = false
        /// Waiting for the outbox reader's catch-up (cluster): nothing is delivered before it.
        var catchingUp = false
        /// Bumped whenever what was handed over is handed back: older receipts are stale.
        var generation: UInt64 = 0
        /// Senders whose outbox may hold something not handed over yet.
        var dirty: SmallSet<String> = []
        /// Why it no longer gets some sender's oldest events (`backlog`), per sender.
        var lagging: [String: String] = [:]
        var subscription: SpinSubscription?
        /// The Spin that registered it (`register`); nil for one waiting for its Spin.
        weak var spin: (any HostedSpin)?
        var registered = false
        /// Whether its loop stopped (then an event no feedback catches waits for the
        /// Spin's next start rather than being consumed): a registered Spin gone counts.
        var stopped: Bool { spin.map(\.isStopped) ?? registered }
        /// Its registration's number (`CatchUp.registration`).
        var registration: UInt64 = 0
        /// The Spin sleeps (`park`): what it catches is kept for it, and the first event
        /// that arrives for it wakes it (`onParkedEvent`), once (`wakeAsked`).
        var parked = false
        var wakeAsked = false

        init(name: String, consumption: GearConsumption, caught: SmallSet<String>, consumed: [String: UInt64], durable: UInt64) {
            self.name = name
            self.consumption = consumption
            self.caught = caught
            self.consumed = consumed
            self.durable = durable
        }

        func inbox(_ sender: String) -> GearInbox {
            inboxes[sender] ?? GearInbox(consumed: consumed[sender] ?? 0)
        }

        var inFlight: Int { inboxes.values.reduce(0) { $0 + $1.inFlight } }
    }

    /// What the router reports (`GET /v1/gears`, `/metrics`).
    package struct Readings: Sendable, Equatable {
        /// Per Gear and catching Spin: events of the Gear produced and not yet settled by it.
        package var pending: [String: [String: Int]] = [:]
        /// Per catching Spin and sender: why it is lagging.
        package var lagging: [String: [String: String]] = [:]
        /// Per Gear: events delivered again, and events read again that were already
        /// consumed (dropped by their position), since the start.
        package var redelivered: [String: Int] = [:]
        package var duplicatesDropped: [String: Int] = [:]
    }

    /// A Spin starting on a cluster node wants what it has not consumed of the Gears it
    /// catches (`GearOutboxReader.catchUp`), then `caughtUp`.
    package struct CatchUp: Sendable {
        package var spin: String
        package var gears: [String]
        package var consumed: [String: UInt64]
        /// Which registration of the Spin asked (`caughtUp` from an earlier one, which
        /// read from other positions, is ignored).
        package var registration: UInt64 = 0
    }

    /// Numbers registrations (in `section`).
    private var registrations: UInt64 = 0
    /// Per Gear, the last position of each sender the router was given (in `section`):
    /// where a Spin made now joins it (`join`).
    private var seen: [String: SmallDictionary<String, UInt64>] = [:]

    /// What wakes a sleeping Spin when an event arrives for it (`park`).
    private let parkedEvent = Protected<(@Sendable (String) -> Void)?>(nil)

    /// Where the router says that a sleeping Spin has an event waiting (once per sleep).
    package func onParkedEvent(_ handler: @escaping @Sendable (String) -> Void) {
        parkedEvent.withLock { $0 = handler }
    }

    /// Spin `spin` goes to sleep (its loop stopped, what it consumed durable): its receiver
    /// stays, holding what it settled of each sender, and keeps what they send for it;
    /// the first such event asks for it to be woken (`onParkedEvent`). `register` (when it
    /// wakes) takes over from there.
    package func park(_ spin: String) {
        captures.withLock { _ = $0.removeValue(forKey: spin) }
        consumptions.withLock { _ = $0.removeValue(forKey: spin) }
        section.sync { [self] in
            guard let awake = receivers[spin] else { return }
            awake.subscription?.cancel()
            var consumed = awake.consumed
            for (sender, inbox) in awake.inboxes { consumed[sender] = max(consumed[sender] ?? 0, inbox.settled) }
            let parked = waiting(spin, caught: awake.caught, consumed: consumed)
            parked.parked = true
            parked.lagging = awake.lagging
            parked.registration = awake.registration
            parked.dirty = SmallSet(outboxes.keys)
            receivers[spin] = parked
            pump(parked)
            finish()
        }
    }

    /// A receiver for `spin` that is handed nothing (as while a cluster catches it up), and
    /// for which what its senders send after `consumed` is kept: a Spin not running yet, or
    /// asleep. `register` takes its place.
    private func waiting(_ spin: String, caught: SmallSet<String>, consumed: [String: UInt64]) -> Receiver {
        let receiver = Receiver(name: spin, consumption: GearConsumption(), caught: caught, consumed: consumed, durable: 0)
        receiver.catchingUp = true
        return receiver
    }

    /// Spin `spin`, made now, joins the Gears `gears`: returns where (per sender on them,
    /// the last position given to the router: it never takes what was sent before), and
    /// from this moment the router keeps what those senders send next for it, waiting
    /// (as a cluster's catch-up waits) until the Spin registers and is handed it. Costs
    /// the senders that sent on those Gears. `unregister` undoes it.
    /// `parked`: the Spin is made asleep, its receiver parked at once (see `park`).
    package func join(_ spin: String, gears: [String], parked: Bool = false) -> [String: UInt64] {
        section.sync { [self] in
            var joined: [String: UInt64] = [:]
            for gear in gears {
                for (sender, position) in seen[gear] ?? [:] { joined[sender] = max(joined[sender] ?? 0, position) }
            }
            receive(spin, gears: gears, consumed: joined, parked: parked)
            return joined
        }
    }

    /// The Spins that rest (`MadeSpin.resting`) are hosted asleep at start-up: each one's
    /// receiver is parked, waiting after `consumed`; the first event for it asks for it to
    /// be woken. All in one piece of the section's work.
    package func rest(_ spins: [(name: String, gears: [String], consumed: [String: UInt64])]) {
        guard !spins.isEmpty else { return }
        section.sync { [self] in
            for spin in spins { receive(spin.name, gears: spin.gears, consumed: spin.consumed, parked: true) }
        }
    }

    /// The sleeping Spins `spins` are let go of (they rest on disk, `RuntimeSpins`): their
    /// parked receivers go, with nothing kept for them, once nothing waits for any of
    /// them or in their outboxes. All or none: false (and nothing changed) when some
    /// receiver is not parked, was handed something it has not settled, or has an event
    /// waiting, or some outbox holds events.
    package func release(_ spins: [String]) -> Bool {
        section.sync { [self] in
            for name in spins {
                if let entries = outboxes[name]?.entries, !entries.isEmpty { return false }
                guard let receiver = receivers[name] else { continue }
                guard receiver.parked, !receiver.wakeAsked, receiver.inFlight == 0, !waits(receiver) else { return false }
            }
            for name in spins {
                outboxes[name] = nil
                guard let receiver = receivers.removeValue(forKey: name) else { continue }
                receiver.subscription?.cancel()
                for gear in receiver.caught {
                    catchers[gear]?.remove(name)
                    if catchers[gear]?.isEmpty == true { catchers[gear] = nil }
                }
                laggingReceivers.remove(name)
            }
            return true
        }
    }

    /// A waiting receiver for `spin`, catching `gears`. In the section.
    private func receive(_ spin: String, gears: [String], consumed: [String: UInt64], parked: Bool) {
        let receiver = waiting(spin, caught: SmallSet(gears), consumed: consumed)
        receiver.parked = parked
        receivers[spin] = receiver
        for gear in gears { catchers[gear, default: []].insert(spin) }
    }

    package init(mode: Mode, backlog: Int, window: Int = 256, logger: Logger,
                 recordAlone: @escaping @Sendable (String, [GearOutput]) -> Void = { _, _ in }) {
        self.mode = mode
        self.backlog = max(1, backlog)
        self.window = max(1, window)
        self.logger = logger
        self.recordAlone = recordAlone
        self.section = SerialSection(queue: DispatchQueue(label: "spin.gear-router"))
    }

    /// Routes every Gear object of `gears` through the router: before any Spin starts, or
    /// a Gear made at run time before the Spins on it register.
    package func install(_ gears: [any HostedGear]) {
        hosted.withLock { hosted in
            for gear in gears {
                hosted.gears[gear.name] = gear
                for spin in gear.attached { hosted.bySpin[spin, default: []].insert(gear.name) }
            }
        }
        for gear in gears {
            for port in gear.ports { route(port, of: gear.name) }
        }
    }

    /// Routes `port`, a Gear object of the hosted Gear `name`.
    private func route(_ port: any GearPort, of name: String) {
        port.route { [weak self] json, source, cause in
            self?.propagated(gear: name, json, from: source, cause: cause)
        }
    }

    /// A Spin made at run time attaches to the hosted Gear `gear` (installed), with the Gear
    /// objects it brought (`ports`, new to the Gear). Before it registers.
    package func attach(_ spin: String, to gear: String, ports: [any GearPort]) {
        guard let hostedGear = hosted.withLock({ hosted -> (any HostedGear)? in
            hosted.bySpin[spin, default: []].insert(gear)
            return hosted.gears[gear]
        }) else { return }
        hostedGear.attach(spin)
        for port in ports {
            hostedGear.add(port: port)
            route(port, of: gear)
        }
    }

    /// A Spin removed at run time leaves its Gears (after `unregister`). Returns the Gears
    /// no Spin is attached to any more.
    package func detach(_ spin: String) -> [String] {
        let gears = hosted.withLock { hosted -> [any HostedGear] in
            let names = hosted.bySpin.removeValue(forKey: spin) ?? []
            return names.compactMap { hosted.gears[$0] }
        }
        return gears.filter { $0.detach(spin) == 0 }.map(\.name)
    }

    /// Forgets the Gears `names` (no Spin is attached to them any more, and nothing will
    /// attach to them again under these objects).
    package func uninstall(_ names: [String]) {
        guard !names.isEmpty else { return }
        hosted.withLock { hosted in for name in names { hosted.gears[name] = nil } }
        section.sync { [self] in
            for name in names {
                catchers[name] = nil
                seen[name] = nil
            }
        }
    }

    /// In memory: `spin`'s outbox positions go on from `base` (a Spin made at run time).
    package func startOutbox(_ spin: String, at base: UInt64) {
        section.sync { [self] in memoryPositions[spin] = max(memoryPositions[spin] ?? 0, base) }
    }

    /// A Spin is deleted: what it sent and the Spins catching it have not taken yet is
    /// still delivered (from memory: its journal is gone, so a restart before that loses
    /// it); it is no longer where a Spin made later joins.
    package func forgetSender(_ spin: String, gears: [String]) {
        captures.withLock { _ = $0.removeValue(forKey: spin) }
        section.sync { [self] in
            memoryPositions[spin] = nil
            for gear in gears { seen[gear]?[spin] = nil }
        }
    }

    /// The hosted Gear `name`.
    private func gear(named name: String) -> (any HostedGear)? {
        hosted.withLock { $0.gears[name] }
    }

    /// Where a cluster's catch-ups go (`GearOutboxReader`).
    package func catchUp(with handler: @escaping @Sendable (CatchUp) -> Void) {
        catchUp.withLock { $0 = handler }
    }

    /// The names of the Gears hosted, and those `spin` is attached to.
    package func gearNames(of spin: String) -> [String] {
        hosted.withLock { $0.bySpin[spin].map { $0.sorted() } ?? [] }
    }

    // MARK: Senders

    /// The capture of `spin`'s Gear events (it is attached to a Gear); from now on what it
    /// propagates is routed as its outbox. Nil for a Spin on no Gear.
    ///
    /// - Parameters:
    ///   - initial: the Spin has no history (sequence 0, nothing in its outbox): what its
    ///     feedbacks propagate for its initial state is sent, once.
    ///   - recorded: the sequence it starts from.
    ///   - faulted: whether it refused a state and is going back (`HostedSpin.isFaulted`):
    ///     what it propagates meanwhile is dropped, as its state will be.
    ///   - refuse: how the router suspends it for a Gear event that does not encode.
    package func sender(_ spin: String, initial: Bool = false, recorded: UInt64 = 0,
                        faulted: @escaping @Sendable () -> Bool = { false },
                        refuse: (@Sendable (String) -> Void)? = nil) -> GearCapture? {
        guard !gearNames(of: spin).isEmpty else { return nil }
        let capture = GearCapture(spin: spin, initial: initial, recorded: recorded, faulted: faulted, refuse: refuse)
        captures.withLock { $0[spin] = capture }
        return capture
    }

    /// A Spin's feedbacks propagated `json` on Gear `gear` (from a routed port).
    private func propagated(gear: String, _ json: Result<[UInt8], any Error>, from source: String?, cause: GearCause?) {
        guard let source, let capture = captures.withLock({ $0[source] }) else {
            // Not a Spin of this server (code that propagates on a hosted Gear itself):
            // there is no outbox to keep it in. Sent at once, at most once.
            guard case .success(let bytes) = json else {
                logger.error("Gear \(gear): an event propagated from \(source ?? "outside the server's Spins") does not encode as JSON; dropped")
                return
            }
            section.run { [self] in untracked(gear: gear, event: bytes, from: source) }
            return
        }
        // A state given again (a start, a resume) sent its events when it was new; but
        // the initial state of a Spin without history is new.
        if let cause, !cause.fresh, !capture.takesInitial(cause) { return }
        switch json {
        case .failure(let error):
            let reason = "a Gear event it propagated on \(gear) does not encode as JSON: \(HostedLoop<Int, Int>.describe(error))"
            // In a transition's delivery the transition fails (`GearCapture.end`); apart
            // from one the Spin is suspended all the same.
            if capture.fail(reason, cause: cause) == .alone { refuseUnencodable(source, reason) }
        case .success(let bytes):
            let output = GearOutput(gear: gear, event: bytes, cause: cause?.sequence ?? 0)
            if let cause {
                switch capture.add(output, cause: cause) {
                case .kept, .dropped: return
                case .alone: break
                }
            } else if capture.isFaulted {
                return
            }
            alone(source, [output])
        }
    }

    /// Called when a Gear event of `spin` did not encode outside a transition.
    private func refuseUnencodable(_ spin: String, _ reason: String) {
        captures.withLock { $0[spin] }?.refuse(unencodable: reason)
    }

    /// Gear events of `spin` that belong to no transition being journaled.
    private func alone(_ spin: String, _ outputs: [GearOutput]) {
        switch mode {
        case .inMemory: sent(spin, outputs)
        case .journaled, .cluster: recordAlone(spin, outputs)
        }
    }

    /// In memory: `spin`'s Gear events are sent now (its transition's state was given).
    package func sent(_ spin: String, _ outputs: [GearOutput]) {
        guard !outputs.isEmpty else { return }
        section.run { [self] in
            var position = memoryPositions[spin] ?? 0
            let records = outputs.map { output -> OutboxRecord in
                position += 1
                return OutboxRecord(position: position, gear: output.gear, cause: output.cause, event: output.event)
            }
            memoryPositions[spin] = position
            add(records, from: spin, redelivered: false)
            finish()
        }
    }

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

    /// Each registered Spin's `GearConsumption`, looked up from its executor.
    private let consumptions = Protected<[String: GearConsumption]>([:])

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

    // MARK: Delivery (in `section`)

    /// `records` of `sender` became known (durable, recovered or read): kept for the Spins
    /// that catch them and have not settled them, shown on the Gear stream, delivered.
    private func add(_ records: [OutboxRecord], from sender: String, redelivered: Bool) {
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
    private func pump(_ receiver: Receiver) {
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
    private func settle(_ receiver: Receiver) {
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
    private func waits(_ receiver: Receiver) -> Bool {
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
    private func collect(_ sender: String) {
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
    private func untracked(gear name: String, event: [UInt8], from source: String?) {
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

    /// The receivers ever marked lagging (a reading looks at these, not at every receiver;
    /// one registered again, or gone, leaves at the next reading).
    private var laggingReceivers: Set<String> = []
    /// The counters of `Readings`, kept in `section`.
    private var counts = Readings()
    /// A reading is taken at most every `readingInterval` (it looks at every event kept and
    /// at the receivers marked lagging).
    private var readingScheduled = false
    private static let readingInterval = DispatchTimeInterval.milliseconds(100)

    private func bump(_ counter: WritableKeyPath<Readings, [String: Int]>, _ gear: String, by amount: Int = 1) {
        guard amount > 0 else { return }
        counts[keyPath: counter][gear, default: 0] += amount
    }

    /// At the end of a piece of work: a new reading within `readingInterval`.
    private func finish() {
        guard !readingScheduled else { return }
        readingScheduled = true
        section.queue.asyncAfter(deadline: .now() + Self.readingInterval) { [weak self] in
            self?.section.run { [weak self] in self?.takeReading() }
        }
    }

    private func takeReading() {
        readingScheduled = false
        var reading = Readings(redelivered: counts.redelivered, duplicatesDropped: counts.duplicatesDropped)
        for name in laggingReceivers {
            guard let receiver = receivers[name], !receiver.lagging.isEmpty else {
                laggingReceivers.remove(name)
                continue
            }
            reading.lagging[name] = receiver.lagging
        }
        // From the events kept, to the Spins that catch them: what no Spin holds back
        // costs nothing (not each receiver times each sender). The Spins with nothing
        // pending are filled in when the reading is read (`reading`).
        for (sender, outbox) in outboxes where !outbox.entries.isEmpty {
            for entry in outbox.entries {
                for name in catchers[entry.gear] ?? [] {
                    guard let receiver = receivers[name], entry.position > receiver.inbox(sender).settled else { continue }
                    reading.pending[entry.gear, default: [:]][name, default: 0] += 1
                }
            }
        }
        readings.withLock { $0 = reading }
    }

    /// What the router reports now: the last reading, with a 0 for each catching Spin
    /// served here that has nothing pending.
    package var reading: Readings {
        section.sync { [self] in
            var reading = readings.withLock { $0 }
            for (gear, names) in catchers {
                for name in names where receivers[name] != nil { reading.pending[gear, default: [:]][name, default: 0] += 0 }
            }
            return reading
        }
    }

    /// Waits until the router has done what it was given, and takes a reading (tests).
    package func settleDown() {
        section.sync { [self] in takeReading() }
    }
}
