import Dispatch
import Synchronization
import Logging
import SpinCore
import SpinStorage
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

    let host: SpinHost
    let feeds: SpinFeeds
    /// Seconds of idleness before a made Spin sleeps (`limits.idleSpinSeconds`).
    let idleSeconds: Int
    let journal: Journal?
    let gears: GearRouter
    let metrics: Metrics
    let maxSpins: Int
    let logger: Logger
    let queue = DispatchQueue(label: "spin.runtime-spins")
    /// Where `GET /v1/spins` pages are read from the store: not behind makes and wakes.
    let listing = DispatchQueue(label: "spin.runtime-spins.listing")
    let state = Protected(State())

    /// How a cluster node cuts Spins into partitions (`serve(bringUp:cluster:)`).
    package struct Cluster: Sendable {
        /// The partition of Spin `name`.
        package var partition: @Sendable (_ name: String) -> Int

        package init(partition: @escaping @Sendable (String) -> Int) {
            self.partition = partition
        }
    }

    struct State {
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
    struct Request {
        var name: String
        var kind: String
        var onEvent: Bool
        var respond: @Sendable (Result<Outcome, APIError>) -> Void
    }

    /// A wake asked for (`wake`).
    struct Wake {
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
            return .answered(.failure(.invalidSpinName(name)))
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

}
