import Dispatch
import Synchronization
import Logging
import SpinCore
import SpinStorage
import SpinWire
import SpinConcurrency

/// The Spins made and deleted while the server runs: `PUT /v1/spins/{name}` (and the
/// first event or stream for a name of an `onEvent` kind) and `DELETE /v1/spins/{name}`.
///
/// One change at a time, on its own queue (never a network thread: each waits for the
/// disk), so a `PUT` racing a `DELETE` of the same name is one after the other; the makes
/// asked for meanwhile are taken together and share one sync. A Spin is made in this
/// order, so that a crash at any point leaves it whole or gone:
/// 1. made by its kind (`SpinFactory`), its Gears hosted;
/// 2. recorded in the store with its kind, where it joins its Gears (the positions of
///    their senders now: it never takes what they sent before it existed), where its own
///    Gear outbox starts (`MadeSpin`) and its epoch, synced: from here it exists;
/// 3. hosted, recovered from its (empty) storage, observed and started: answered 201.
///
/// A Spin is deleted in this order: its loop stops (what it took is applied and
/// answered, or comes back unapplied), the store removes it with its history (synced:
/// from here it is gone), its feed ends (streams close with 4004, waiting
/// acknowledgements get 404) and it is no longer hosted: answered 200. A Gear no Spin is
/// attached to any more goes with its last Spin, unless the config names it.
///
/// A made Spin idle for `limits.idleSpinSeconds` sleeps; one that rests (nothing of its
/// own left to deliver) leaves memory with the Spins on its Gears (`release`), and is
/// found again by name in the store when something asks for it (`load`, through `wake`,
/// a make or a delete). Whenever a Spin is in memory, so are the Spins on its Gears
/// (`hostPeers`).
///
/// On a cluster node (`Cluster`) only the Spins of the partitions the node serves are
/// made, found, woken or deleted here (the others' requests go to their owners); when the
/// node gets a partition it brings up the made Spins of it that do not rest
/// (`servePartition`), and when it loses one, every made Spin of it leaves memory, what it
/// applied committed first (`retirePartition`). The Spins on one Gear share a partition
/// (`SpinFactory.groupKey`), so a group is always on one node.
package final class RuntimeSpins: Sendable {
    /// What the server does for Spins it hosts now: recovers each from its storage (all
    /// of them in one piece of the journal's work), registers it with the Gear router
    /// (`made.joined`: where it joins its Gears), observes and starts it. Returns, for
    /// each, whether it runs or why it could not be brought up. Its observations are not
    /// kept (`adopt`).
    package typealias BringUp = @Sendable (_ spins: [Rising]) -> [Result<Void, any Error>]

    /// A Spin to bring up (`BringUp`). `keepFeed`: its feed goes on (its streams stay
    /// open) unless it has ended (`SpinFeeds.continuing`), else a new one takes its place.
    package struct Rising {
        package var spin: any HostedSpin
        package var made: MadeSpin
        package var keepFeed: Bool
    }

    private let host: SpinHost
    private let feeds: SpinFeeds
    /// Seconds of idleness before a made Spin sleeps (`limits.idleSpinSeconds`).
    private let idleSeconds: Int
    private let journal: Journal?
    private let gears: GearRouter
    private let metrics: Metrics
    private let maxSpins: Int
    private let logger: Logger
    private let queue = DispatchQueue(label: "spin.runtime-spins")
    /// Where `GET /v1/spins` pages are read from the store: not behind makes and wakes.
    private let listing = DispatchQueue(label: "spin.runtime-spins.listing")
    private let state = Protected(State())

    /// How a cluster node cuts Spins into partitions (`serve(bringUp:cluster:)`).
    package struct Cluster: Sendable {
        /// The partition of Spin `name`.
        package var partition: @Sendable (_ name: String) -> Int

        package init(partition: @escaping @Sendable (String) -> Int) {
            self.partition = partition
        }
    }

    private struct State {
        var bringUp: BringUp?
        /// Set on a cluster node.
        var cluster: Cluster?
        /// On a cluster node, the partitions it serves (`servePartition`, `retirePartition`).
        var partitions: Set<Int> = []
        /// Partitions served since the queue last brought their Spins up (`bringUpArrived`).
        var arriving: Set<Int> = []
        var arrivingScheduled = false
        /// Partitions whose made Spins the queue has yet to let go of (a lease lost:
        /// `retirePartition` without waiting).
        var retiring: Set<Int> = []
        /// Why this server makes no Spins now (it is shutting down), when it does not.
        var refusal: APIError?
        /// What the catalog says of each made Spin (where it joined its Gears, where its
        /// outbox starts): for a wake, or a restart after a failed deletion.
        var records: [String: MadeSpin] = [:]
        /// The made Spins awake, with when each last applied an event.
        var awake: [String: Activity] = [:]
        var sweeper: DispatchSourceTimer?
        /// How many made Spins the store holds (counted once the server runs; nil before).
        var stored: Int?
        /// The made Spins hosted asleep that may be let go of (`release`): looked at again
        /// by each sweep while something keeps them (a stream, a Spin on their Gears awake).
        var lingering: Set<String> = []
        /// Of the sleeping Spins hosted, those the store holds as resting (durably): nothing
        /// of them is needed in memory.
        var resting: Set<String> = []
        /// Wakes asked for and not taken by the queue yet (see `drainWakes`).
        var wakes: [Wake] = []
        /// Wakes nobody waits for (the Spins of a partition taken over): taken after `wakes`.
        var backgroundWakes: [Wake] = []
        var wakeScheduled = false
        /// Makes asked for and not taken by the queue yet (see `drain`).
        var pending: [Request] = []
        var draining = false
    }

    /// A make asked for: `PUT` (answered with the outcome), or an event or stream for a
    /// name of an `onEvent` kind (`onEvent`: a Spin of that name, of any kind, will do).
    private struct Request {
        var name: String
        var kind: String
        var onEvent: Bool
        var respond: @Sendable (Result<Outcome, APIError>) -> Void
    }

    /// A wake asked for (`wake`).
    private struct Wake {
        var name: String
        var then: @Sendable (Result<Bool, APIError>) -> Void
    }

    /// When a made Spin last applied an event (or woke).
    final class Activity: Sendable {
        private let last = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)
        /// The durable sequence the last look saw (`idleNanoseconds(at:)`).
        private let seen: Atomic<UInt64>

        init(sequence: UInt64) { seen = Atomic(sequence) }

        func touch() { last.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed) }

        /// How long the Spin has been idle, a durable sequence that moved since the last
        /// look (`sequence`) counting as activity now: events are seen by the sweep that
        /// looks, not watched one by one (no observer per awake Spin, no clock read per
        /// event). The sweep looks every quarter of the idle time, so a Spin sleeps between 1
        /// and 1.25 times the idle time after its last event.
        func idleNanoseconds(at sequence: UInt64) -> UInt64 {
            if seen.exchange(sequence, ordering: .relaxed) != sequence { touch() }
            let now = DispatchTime.now().uptimeNanoseconds
            let then = last.load(ordering: .relaxed)
            return now > then ? now - then : 0
        }
    }

    package init(host: SpinHost, feeds: SpinFeeds, journal: Journal?, gears: GearRouter, metrics: Metrics,
                 maxSpins: Int, idleSeconds: Int = SpinServerConfiguration.Limits().idleSpinSeconds, logger: Logger) {
        self.idleSeconds = max(1, idleSeconds)
        self.host = host
        self.feeds = feeds
        self.journal = journal
        self.gears = gears
        self.metrics = metrics
        self.maxSpins = maxSpins
        self.logger = logger
    }

    /// The server runs: from now on Spins are made with `bringUp`. `cluster`: on a cluster
    /// node, only in the partitions it serves.
    package func serve(bringUp: BringUp?, cluster: Cluster? = nil) {
        state.withLock {
            $0.bringUp = bringUp
            $0.cluster = cluster
        }
        // Sleep needs a journal: a Spin kept in memory only would lose its state.
        guard bringUp != nil, journal != nil else { return }
        gears.onParkedEvent { [weak self] name in self?.wakeForGear(name, delay: 1) }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.milliseconds(max(250, idleSeconds * 1000 / 4))
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.sweep() }
        state.withLock { $0.sweeper = timer }
        timer.resume()
        // The count `limits.maxSpins` is held to: the one read of the whole table, on the
        // queue (before any make), not before `/readyz`. Spins of a kind the config no
        // longer has are said here (a start reads only the Spins it needs, so it cannot).
        queue.async { [self] in
            var counts: [String: Int] = [:]
            do {
                counts = try journal?.storedSpinCounts() ?? [:]
            } catch {
                logger.error("the Spins made at run time could not be counted: \(error)")
            }
            state.withLock { $0.stored = counts.values.reduce(0, +) }
            for (kind, count) in counts.sorted(by: { $0.key < $1.key }) where host.factory?.kind(named: kind) == nil {
                logger.error("\(count) Spin(s) of kind \(kind) made at run time are stored and the config has no kind \(kind): they are not found (404) until it is added back to kinds (then DELETE /v1/spins/{name} the ones to drop)")
            }
        }
    }

    /// The server stops: nothing more is made or deleted (what is under way finishes
    /// first). The made Spins' observations end as their loops stop (`SpinHost.stop`).
    package func stop() {
        queue.sync {
            state.withLock { state in
                state.sweeper?.cancel()
                state.sweeper = nil
                state.awake = [:]
                state.bringUp = nil
                state.refusal = .unavailable("the server is shutting down", retryAfter: 1)
            }
        }
    }

    /// Takes in a Spin made at run time, observed and started (or recovered at start-up):
    /// it is awake, no longer a sleeping Spin to let go of. Its observations are not kept:
    /// they end when its loop stops, which every way out of memory does first (sleep,
    /// delete, a partition retired, the server stopping), so a handle per observation
    /// per awake Spin would only cost memory.
    package func adopt(_ spin: any HostedSpin, _ record: MadeSpin) {
        // Its events are seen by the sweep (the durable sequence moves), not watched.
        let activity = Activity(sequence: feeds.feed(spin.name).snapshot.sequence)
        state.withLock {
            $0.records[spin.name] = record
            $0.awake[spin.name] = activity
            $0.lingering.remove(spin.name)
            $0.resting.remove(spin.name)
        }
    }

    /// At start-up, before the Spins start: hosts asleep the resting Spins a start reads
    /// (those of kinds whose Spins share a Gear: kept in memory for good), as `hostAsleep`
    /// does. Throws what it throws.
    package func hostAsleep(atStart spins: [(name: String, record: MadeSpin)]) throws(APIError) {
        try onQueue { () throws(APIError) in try hostAsleep(spins, lingers: false) }
    }

    /// At start-up, before the Spins start: hosts asleep the stored Spins that share a Gear
    /// with `names` (see `hostPeers`). Throws when the store cannot be read.
    package func hostPeers(of names: [String]) throws(APIError) {
        try onQueue { () throws(APIError) in try hostPeers(of: names, gears: nil) }
    }

    /// Runs `body` on the queue and waits for it.
    private func onQueue(_ body: () throws(APIError) -> Void) throws(APIError) {
        let result = queue.sync { () -> Result<Void, APIError> in
            do throws(APIError) { try body() } catch { return .failure(error) }
            return .success(())
        }
        try result.get()
    }

    /// Whether Spin `name`, not hosted, may be one the store holds (asleep, not in memory):
    /// a request for it asks the store (`wake`).
    package func mayBeStored(_ name: String) -> Bool {
        guard journal != nil, state.withLock({ $0.bringUp != nil }) else { return false }
        return host.factory?.mayBeMade(name) ?? false
    }

    /// Whether `GET /v1/spins` lists Spins the store holds that are not in memory (`list`).
    package var listsStored: Bool { journal != nil && state.withLock { $0.bringUp != nil } }

    /// Whether an event or stream for the unknown Spin `name` makes it (an `onEvent` kind
    /// matches it).
    package func makesOnEvent(_ name: String) -> Bool {
        host.factory?.kindMadeOnEvent(for: name) != nil
    }

    /// What `PUT` and `DELETE` answer: `{"name","kind","sequence","status"}`.
    package struct Outcome: Sendable, Equatable {
        package var status: Int
        package var name: String
        package var kind: String
        package var sequence: UInt64
        package var spinStatus: String

        var response: APIResponse {
            .json(status, .object([("name", .string(name)), ("kind", .string(kind)),
                                   ("sequence", .number(String(sequence))), ("status", .string(spinStatus))]))
        }
    }

    /// Makes Spin `name` of `kind` (see the type's notes); `respond` gets 201, or 200 when
    /// it exists with that kind, or the error.
    package func create(_ name: String, kind: String, respond: @escaping @Sendable (Result<APIResponse, APIError>) -> Void) {
        enqueue(Request(name: name, kind: kind, onEvent: false) { respond($0.map(\.response)) })
    }

    /// Makes Spin `name` of the `onEvent` kind its name matches, unless it exists;
    /// `then` gets nil once it is hosted, or why not.
    package func createOnEvent(_ name: String, then: @escaping @Sendable (APIError?) -> Void) {
        guard let kind = host.factory?.kindMadeOnEvent(for: name) else { return then(.spinNotFound(name)) }
        enqueue(Request(name: name, kind: kind.name, onEvent: true) { result in
            if case .failure(let error) = result { return then(error) }
            then(nil)
        })
    }

    /// Makes wait here until the queue takes all of them at once: the records of every
    /// Spin made in one go share one sync (group commit), so a thousand clients making
    /// Spins at once do not wait for a thousand syncs one after the other.
    private func enqueue(_ request: Request) {
        let schedule = state.withLock { state -> Bool in
            state.pending.append(request)
            defer { state.draining = true }
            return !state.draining
        }
        if schedule { queue.async { [self] in drain() } }
    }

    /// Deletes Spin `name` (see the type's notes); `respond` gets 200 or the error.
    package func delete(_ name: String, respond: @escaping @Sendable (Result<APIResponse, APIError>) -> Void) {
        queue.async { [self] in respond(deleteNow(name).map(\.response)) }
    }

    // MARK: On the queue

    /// Makes the Spins asked for since the last time: each checked and made by its kind
    /// (`prepare`), all recorded with one sync, then each started and answered (`finish`).
    /// A second make of a name in the same go waits for the next.
    private func drain() {
        let requests = state.withLock { state -> [Request] in
            state.draining = false
            defer { state.pending = [] }
            return state.pending
        }
        var made: [(request: Request, made: SpinFactory.Made?, record: MadeSpin, hosted: Bool)] = []
        var names = Set<String>()
        var later: [Request] = []
        for request in requests {
            guard !names.contains(request.name) else {
                later.append(request)
                continue
            }
            switch prepare(request, making: made.count) {
            case .answered(let outcome): request.respond(outcome)
            case .made(let spin, let record, let hosted):
                made.append((request, spin, record, hosted))
                names.insert(request.name)
            }
        }
        if !made.isEmpty {
            do {
                try journal?.make(made.map { ($0.request.name, $0.record) })
                state.withLock { $0.stored? += made.count }
                for (request, spin, record, hosted) in made { request.respond(finish(request.name, spin, record, hosted: hosted)) }
            } catch {
                for (request, _, record, _) in made {
                    gears.unregister(request.name)
                    detach(request.name)
                    logger.error("Spin \(request.name) of kind \(record.kind) was not made: its storage failed: \(error)")
                    request.respond(.failure(.storageUnavailable(spin: request.name, "\(error)")))
                }
            }
        }
        guard !later.isEmpty else { return }
        state.withLock { $0.pending.insert(contentsOf: later, at: 0) }
        drain()
    }

    /// What `prepare` came to: an answer already, or a Spin made and joined to its Gears,
    /// to record (none made for a Spin made asleep: only its record, and its Gear receiver
    /// when it is `hosted` in memory).
    private enum Prepared {
        case answered(Result<Outcome, APIError>)
        case made(SpinFactory.Made?, MadeSpin, hosted: Bool)
    }

    /// Checks a make (`making`: how many are being made in this go besides) and makes the
    /// Spin by its kind, its Gears hosted and joined.
    private func prepare(_ request: Request, making: Int) -> Prepared {
        let (name, kindName) = (request.name, request.kind)
        // One the store holds and memory does not is hosted asleep first: it exists.
        do { _ = try load(name) } catch { return .answered(.failure(error)) }
        if request.onEvent, let existing = host.spin(named: name) {
            // Made meanwhile (by another event, or a PUT): the event goes to it.
            return .answered(.success(Outcome(status: 200, name: name, kind: existing.kind, sequence: existing.snapshot().sequence,
                                              spinStatus: existing.status.rawValue)))
        }
        guard let factory = host.factory, let kind = factory.kind(named: kindName) else {
            return .answered(.failure(.kindNotFound(kindName, known: host.factory?.kindNames ?? [])))
        }
        guard SpinHost.isNameText(name), !name.isEmpty else {
            return .answered(.failure(.badRequest("\"\(name)\" is not a valid Spin name: use 1 to 64 letters, digits, '-', '_' or '.'")))
        }
        if factory.configured.contains(name) { return .answered(.failure(.spinExists(name, kind: nil))) }
        if let existing = host.spin(named: name) {
            // Found on disk for this answer only: back to disk (unless something keeps it).
            defer { if existing is SleepingSpin { release(name) } }
            guard existing.kind == kindName else { return .answered(.failure(.spinExists(name, kind: existing.kind))) }
            return .answered(.success(Outcome(status: 200, name: name, kind: kindName, sequence: existing.snapshot().sequence,
                                              spinStatus: existing.status.rawValue)))
        }
        let (running, refusal) = state.withLock { ($0.bringUp != nil, $0.refusal) }
        if let refusal { return .answered(.failure(refusal)) }
        guard running else { return .answered(.failure(.unavailable("the server is not running", retryAfter: 1))) }
        guard spinCount + making < maxSpins else { return .answered(.failure(.tooManySpins(limit: maxSpins))) }
        let gearNames: [String]
        do { gearNames = try factory.hostedGears(of: name, kind: kind) } catch { return .answered(.failure(error)) }
        // The Spins on its Gears are in memory before it joins them.
        do { try hostPeers(of: [name], gears: [name: gearNames]) } catch { return .answered(.failure(error)) }
        if factory.startsAsleep(kindName), journal != nil {
            // Nothing runs until its first event: no loop made now (see `finish`). With no
            // Spin on its Gears in memory, nothing of it is kept there either: it is made
            // on disk only (`release`).
            let alone = !factory.sharesGears(kindName) && gearNames.allSatisfy { gear in
                !factory.lasts(gear) && !factory.holdsShared(on: gear)
                    && factory.peers(on: gear).allSatisfy { $0 == name || host.spin(named: $0) == nil }
            }
            // Alone, nothing sent on its Gears is kept in memory (every Spin that sent on
            // them rests, its outbox empty): it joins them from the start.
            let joined = alone ? [:] : gears.join(name, gears: gearNames, parked: true)
            let record = MadeSpin(kind: kindName, joined: joined, outboxBase: MadeSpin.outboxBaseNow(),
                                  resting: .init(sequence: 0, consumed: joined))
            return .made(nil, record, hosted: !alone)
        }
        let made: SpinFactory.Made
        do { made = try factory.make(name, of: kind) } catch { return .answered(.failure(error)) }
        attach(made)
        // From here the Gears keep what their senders send next for it.
        let record = MadeSpin(kind: kindName, joined: gears.join(name, gears: made.gears.map(\.name)),
                              outboxBase: MadeSpin.outboxBaseNow())
        return .made(made, record, hosted: true)
    }

    /// Starts a Spin whose record is durable: hosted, recovered from its (empty) storage,
    /// observed and started: 201. A Spin of a kind that does nothing until its first
    /// event (`SpinFactory.startsAsleep`, `made` nil) is hosted asleep instead, its Gear
    /// receiver parked: its first request or Gear event starts it as a wake does. Either
    /// way it takes events now: 201 says `running`. One not `hosted` is on disk only: its
    /// first request or Gear event finds it there.
    private func finish(_ name: String, _ made: SpinFactory.Made?, _ record: MadeSpin, hosted: Bool) -> Result<Outcome, APIError> {
        guard let bringUp = state.withLock({ $0.bringUp }) else {
            return abandon(name, made, record, because: APIError.unavailable("the server is shutting down", retryAfter: 1))
        }
        guard let made else {
            guard hosted else {
                logger.info("Spin \(name) of kind \(record.kind) made (on disk until its first event)")
                return .success(Outcome(status: 201, name: name, kind: record.kind, sequence: 0, spinStatus: SpinStatus.running.rawValue))
            }
            do {
                try host.insert(SleepingSpin(name: name, kind: record.kind, sequence: 0))
            } catch {
                return abandon(name, nil, record, because: error)
            }
            state.withLock {
                $0.records[name] = record
                $0.resting.insert(name)
            }
            logger.info("Spin \(name) of kind \(record.kind) made (asleep until its first event)")
            // On disk only, unless a Spin on its Gears is in memory.
            release(name)
            return .success(Outcome(status: 201, name: name, kind: record.kind, sequence: 0, spinStatus: SpinStatus.running.rawValue))
        }
        do {
            // Hosted (found by requests) once it runs.
            try bringUp([Rising(spin: made.spin, made: record, keepFeed: false)])[0].get()
            try host.insert(made.spin)
            adopt(made.spin, record)
        } catch {
            return abandon(name, made, record, because: error)
        }
        logger.info("Spin \(name) of kind \(record.kind) made")
        return .success(Outcome(status: 201, name: name, kind: record.kind, sequence: 0, spinStatus: made.spin.status.rawValue))
    }

    /// A Spin recorded and not started is taken back if the storage lets it (else the next
    /// start recovers it, at sequence 0, or the next PUT makes it again).
    private func abandon(_ name: String, _ made: SpinFactory.Made?, _ record: MadeSpin,
                         because error: any Error) -> Result<Outcome, APIError> {
        logger.error("Spin \(name) of kind \(record.kind) could not start: \(error)")
        made?.spin.stopAndWait()
        endTerm(of: name)
        gears.unregister(name)
        do {
            try journal?.delete(name)
        } catch {
            journal?.retire(spin: name)
        }
        feeds.remove(name, ending: .deleted(spin: name))
        detach(name)
        if let error = error as? APIError { return .failure(error) }
        return .failure(.storageUnavailable(spin: name, "\(error)"))
    }

    private func deleteNow(_ name: String) -> Result<Outcome, APIError> {
        do { _ = try load(name) } catch { return .failure(error) }
        guard let spin = host.spin(named: name) else { return .failure(.spinNotFound(name)) }
        if host.factory?.configured.contains(name) ?? true { return .failure(.spinExists(name, kind: nil, deleting: true)) }
        if let refusal = state.withLock({ $0.refusal }) { return .failure(refusal) }
        let asleep = spin is SleepingSpin
        spin.stopAndWait()
        let sequence = spin.snapshot().sequence
        if !asleep {
            endTerm(of: name)
            // Nothing of it reaches the router (nor its journal, below) from now on.
            gears.unregister(name)
        }
        do {
            try journal?.delete(name)
        } catch {
            // Nothing was removed: the Spin runs again from what is durable (one asleep
            // sleeps on, its Gear receiver parked as it was).
            logger.error("Spin \(name) was not deleted: its storage failed: \(error)")
            if !asleep { restart(name) }
            return .failure(.storageUnavailable(spin: name, "\(error)"))
        }
        if asleep { gears.unregister(name) }
        state.withLock {
            $0.records[name] = nil
            $0.resting.remove(name)
            $0.lingering.remove(name)
            $0.stored? -= 1
        }
        gears.forgetSender(name, gears: gears.gearNames(of: name))
        feeds.remove(name, ending: .deleted(spin: name))
        host.remove(named: name)
        detach(name)
        metrics.forget(spin: name)
        logger.info("Spin \(name) of kind \(spin.kind) deleted at sequence \(sequence)")
        // The Spins it shared Gears with may go from memory now.
        if let kind = host.factory?.kind(named: spin.kind), let gearNames = try? host.factory?.hostedGears(of: name, kind: kind) {
            for peer in Set(gearNames.flatMap { host.factory?.peers(on: $0) ?? [] }) where host.spin(named: peer) is SleepingSpin {
                release(peer)
            }
        }
        return .success(Outcome(status: 200, name: name, kind: spin.kind, sequence: sequence, spinStatus: "deleted"))
    }

    // MARK: Sleep and wake

    /// Wakes Spin `name` when it sleeps, in memory or only on disk (else does nothing);
    /// `then` gets whether it woke now (false: it was awake, or no Spin has the name), or
    /// why it could not. The wakes asked for meanwhile are taken together (`drainWakes`);
    /// `background` ones (nobody waits for them) after the others.
    package func wake(_ name: String, background: Bool = false,
                      then: @escaping @Sendable (Result<Bool, APIError>) -> Void) {
        let schedule = state.withLock { state -> Bool in
            if background {
                state.backgroundWakes.append(Wake(name: name, then: then))
            } else {
                state.wakes.append(Wake(name: name, then: then))
            }
            defer { state.wakeScheduled = true }
            return !state.wakeScheduled
        }
        if schedule { queue.async { [self] in drainWakes() } }
    }

    /// A request about Spin `name`: it counts as activity.
    package func touch(_ name: String) {
        state.withLock { $0.awake[name] }?.touch()
    }

    /// A Gear event waits for sleeping Spin `name`: woken, and, when that fails (its
    /// storage cannot be read now), tried again after `delay` seconds, doubling up to 30.
    private func wakeForGear(_ name: String, delay: Int) {
        wake(name) { [weak self] woke in
            guard case .failure = woke, let self, state.withLock({ $0.records[name] != nil && $0.bringUp != nil }) else { return }
            queue.asyncAfter(deadline: .now() + .seconds(delay)) { [weak self] in
                self?.wakeForGear(name, delay: min(30, delay * 2))
            }
        }
    }

    /// Whether Spin `name` was made at run time (or may be: one not in memory is looked for
    /// in the store when it is woken).
    package func isMade(_ name: String) -> Bool {
        state.withLock { $0.records[name] != nil } || mayBeStored(name)
    }

    /// Wakes up to `chunk` of the Spins asked for (`wake`; a quarter of that of the
    /// background ones, when no request waits), together: each found (in memory or on disk)
    /// and made by its kind, then all brought up with their storage read in one piece of
    /// the journal's work, so that a burst of first events to sleeping Spins waits behind
    /// the journal's sync once per go, not once per Spin. Each caller gets whether its Spin
    /// woke now, or why not.
    private func drainWakes(chunk: Int = 64) {
        // At most `chunk` at a time: the rest are taken after what the queue holds
        // meanwhile (a make, a delete), so that a node taking over many Spins at once does
        // not keep those waiting for a whole go.
        let requests = state.withLock { state -> [Wake] in
            // Those a request waits for first; then a few of the others, so that a request
            // that comes meanwhile waits for no more than that.
            var taken = Array(state.wakes.prefix(chunk))
            state.wakes.removeFirst(taken.count)
            if taken.isEmpty {
                taken = Array(state.backgroundWakes.prefix(chunk / 4))
                state.backgroundWakes.removeFirst(taken.count)
            }
            if state.wakes.isEmpty, state.backgroundWakes.isEmpty {
                state.wakeScheduled = false
            } else {
                queue.async { [weak self] in self?.drainWakes(chunk: chunk) }
            }
            return taken
        }
        var outcomes: [String: Result<Bool, APIError>] = [:]
        var rising: [(name: String, made: SpinFactory.Made, record: MadeSpin, sequence: UInt64)] = []
        var asked = Set<String>()
        for request in requests where asked.insert(request.name).inserted {
            switch prepareWake(request.name) {
            case .answered(let outcome): outcomes[request.name] = outcome
            case .made(let made, let record, let sequence): rising.append((request.name, made, record, sequence))
            }
        }
        if !rising.isEmpty {
            let results = state.withLock({ $0.bringUp })?(rising.map { Rising(spin: $0.made.spin, made: $0.record, keepFeed: true) })
            for (index, entry) in rising.enumerated() {
                guard let result = results?[index] else {
                    outcomes[entry.name] = .failure(.unavailable("the server is shutting down", retryAfter: 1))
                    continue
                }
                switch result {
                case .success:
                    host.replace(with: entry.made.spin)
                    adopt(entry.made.spin, entry.record)
                    logger.debug("Spin \(entry.name) woke at sequence \(entry.sequence)")
                    outcomes[entry.name] = .success(true)
                case .failure(let error):
                    logger.error("Spin \(entry.name) could not wake: \(error)")
                    outcomes[entry.name] = .failure(.storageUnavailable(spin: entry.name, "it could not be read back: \(error)"))
                }
            }
        }
        for request in requests { request.then(outcomes[request.name] ?? .success(false)) }
    }

    /// What `prepareWake` came to: an answer already, or the Spin made by its kind and
    /// attached to its Gears, to bring up.
    private enum PreparedWake {
        case answered(Result<Bool, APIError>)
        case made(SpinFactory.Made, MadeSpin, sequence: UInt64)
    }

    /// Finds Spin `name` (in memory, or on disk: `load`) and, when it sleeps, makes it by
    /// its kind.
    private func prepareWake(_ name: String) -> PreparedWake {
        do {
            guard try load(name) else { return .answered(.success(false)) }
        } catch {
            return .answered(.failure(error))
        }
        guard let sleeping = host.spin(named: name) as? SleepingSpin else { return .answered(.success(false)) }
        guard state.withLock({ $0.bringUp != nil }), let factory = host.factory, let kind = factory.kind(named: sleeping.kind) else {
            return .answered(.failure(.unavailable("the server is shutting down", retryAfter: 1)))
        }
        let record = state.withLock { $0.records[name] } ?? MadeSpin(kind: sleeping.kind)
        let made: SpinFactory.Made
        do { made = try factory.make(name, of: kind) } catch { return .answered(.failure(error)) }
        attach(made)
        return .made(made, record, sequence: sleeping.sequence)
    }

    /// Puts to sleep the made Spins idle for `idleSeconds`: no event applied since, nothing
    /// waiting in their inbox or for the disk, no Gear event in flight, no timer of their
    /// own running. On the queue.
    /// At most `chunk` Spins sleep in one go: the rest are taken after what the queue holds
    /// meanwhile (a wake, a make), so that none waits for a whole sweep.
    private func sweep(chunk: Int = 32) {
        let limit = UInt64(idleSeconds) * 1_000_000_000
        let awake = state.withLock { $0.awake }
        let idle = awake.filter { name, activity in
            activity.idleNanoseconds(at: feeds.feed(name).snapshot.sequence) >= limit
        }.map(\.key)
        var slept = 0
        for name in idle {
            guard let spin = host.spin(named: name), !(spin is SleepingSpin), spin.unrecoverable == nil,
                  spin.pendingEvents == 0, !spin.awaitsTime,
                  !feeds.feed(name).isFailing, feeds.feed(name).pendingCount == 0, gears.isSettled(name) else { continue }
            if slept == chunk { return queue.async { [weak self] in self?.sweep(chunk: chunk) } }
            sleep(spin)
            slept += 1
        }
        // The sleeping Spins kept in memory meanwhile: let go of when nothing keeps them.
        for name in state.withLock({ $0.lingering }) where host.spin(named: name) is SleepingSpin {
            release(name)
        }
    }

    /// `spin` sleeps: its loop stops, what it applied is synced and its journal closed, its
    /// Gear receiver keeps what it is sent, its feed stays only for the streams that watch
    /// it, and a `SleepingSpin` takes its place. Events it took and did not apply come back
    /// to their requests, which wake it again (`APIRouter.followMove`).
    private func sleep(_ spin: any HostedSpin) {
        let name = spin.name
        spin.stopAndWait()
        endTerm(of: name)
        // Synced first: what it took of its Gears is settled before its receiver is
        // parked with what it settled (else it would ask to be woken for them at once).
        let rests = journal?.sleep(spin: name) ?? false
        gears.park(name)
        let sequence = spin.snapshot().sequence
        host.replace(with: SleepingSpin(name: name, kind: spin.kind, sequence: sequence))
        feeds.dropUnwatched(name)
        metrics.forget(spin: name)
        if rests { state.withLock { _ = $0.resting.insert(name) } }
        logger.debug("Spin \(name) sleeps at sequence \(sequence)")
        release(name)
    }

    /// Spin `name` no longer runs here (deleted, asleep, or not started; its loop has
    /// stopped, which ended its observations): it is no longer watched for idleness.
    private func endTerm(of name: String) {
        _ = state.withLock { $0.awake.removeValue(forKey: name) }
    }

    // MARK: In memory or on disk

    /// How many Spins are hosted, made ones on disk included (what `limits.maxSpins` holds).
    /// On the queue.
    private var spinCount: Int {
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
    private func load(_ name: String) throws(APIError) -> Bool {
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
    private func hostAsleep(_ spins: [(name: String, record: MadeSpin)], lingers: Bool = true) throws(APIError) -> [String: [String]] {
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
    private func hostPeers(of names: [String], gears known: [String: [String]]?) throws(APIError) {
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
    private func release(_ name: String) {
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
    private func bringUpArrived() {
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
    private func owns(_ name: String) -> Bool {
        state.withLock { state in state.cluster.map { state.partitions.contains($0.partition(name)) } ?? true }
    }

    /// `retirePartition` of one Spin. On the queue.
    private func retire(_ name: String) {
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
    private static func first(_ left: inout ArraySlice<Listed>, _ right: inout ArraySlice<Listed>) -> Listed? {
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
    private func detach(_ name: String) {
        let emptied = gears.detach(name)
        let gone = host.factory?.forget(emptied) ?? []
        gears.uninstall(gone)
        for gear in gone { host.removeGear(named: gear) }
    }

    /// A Spin whose deletion failed before anything was removed runs again; when its
    /// storage cannot be read now either, it leaves memory (what it had is in storage, and
    /// the next request finds it there), rather than stay as a fresh, unrecovered instance
    /// that would show its initial state and hold every event sent to it.
    private func restart(_ name: String) {
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
