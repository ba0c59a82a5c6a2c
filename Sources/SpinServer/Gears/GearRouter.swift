import Dispatch
import Logging
import SpinCore
import SpinStorage
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
    let logger: Logger
    let section: SerialSection
    /// Journals Gear events propagated apart from a transition (`Journal.record(spin:outbox:)`).
    let recordAlone: @Sendable (String, [GearOutput]) -> Void
    /// Asks the outbox reader for what a Spin starting here has not consumed (cluster).
    let catchUp = Protected<(@Sendable (CatchUp) -> Void)?>(nil)

    // Set by `install`, before any Spin starts; read-only after.
    /// The hosted Gears by name, and the Gears each Spin is attached to (Spins and Gears
    /// made at run time join them).
    private let hosted = Protected<(gears: [String: any HostedGear], bySpin: [String: SmallSet<String>])>(([:], [:]))

    // Confined to `section`.
    var outboxes: [String: SenderOutbox] = [:]
    var receivers: [String: Receiver] = [:]
    /// The registered Spins that catch each Gear.
    var catchers: [String: SmallSet<String>] = [:]
    /// In memory: each sender's last position.
    var memoryPositions: [String: UInt64] = [:]

    /// Looked up from any thread (a propagation).
    let captures = Protected<[String: GearCapture]>([:])
    /// What `/metrics` and `GET /v1/gears` read, updated at the end of each piece of work.
    let readings = Protected(Readings())

    /// One sender's outbox as the router holds it: the events some registered Spin that
    /// catches them has not settled, in position order.
    struct SenderOutbox {
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
    final class Receiver: @unchecked Sendable {
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
    var registrations: UInt64 = 0
    /// Per Gear, the last position of each sender the router was given (in `section`):
    /// where a Spin made now joins it (`join`).
    var seen: [String: SmallDictionary<String, UInt64>] = [:]

    /// What wakes a sleeping Spin when an event arrives for it (`park`).
    let parkedEvent = Protected<(@Sendable (String) -> Void)?>(nil)

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
    func gear(named name: String) -> (any HostedGear)? {
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

    /// Each registered Spin's `GearConsumption`, looked up from its executor.
    let consumptions = Protected<[String: GearConsumption]>([:])

    /// The receivers ever marked lagging (a reading looks at these, not at every receiver;
    /// one registered again, or gone, leaves at the next reading).
    var laggingReceivers: Set<String> = []
    /// The counters of `Readings`, kept in `section`.
    var counts = Readings()
    /// A reading is taken at most every `readingInterval` (it looks at every event kept and
    /// at the receivers marked lagging).
    var readingScheduled = false
    static let readingInterval = DispatchTimeInterval.milliseconds(100)
}
