import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinWire
import SpinJSON
import SpinConcurrency

/// The durable storage of hosted Spins (docs/OPERATIONS.md, "Durability"): what to journal and
/// when it counts as durable, on top of a `SpinStore` (SpinStorage: the files of a
/// storage directory, `FileSpinStore`, or a PostgreSQL database, `PostgresSpinStore`), which keeps per Spin a journal of applied events
/// (batches whole), a snapshot `{"sequence":N,"epoch":..,"state":..}` the journal starts
/// from, and the epoch of its history (see below). The snapshot is rewritten when the
/// journal is compacted, which keeps at least `retainEvents` events after it (what
/// `?since=N` resumes from).
///
/// Writing happens in the journal's serial section (`SerialSection`), one write at a
/// time. Transitions recorded on a network thread (`EndOfTurn`) are written by that
/// thread at the end of its turn, together with whatever other Spins recorded meanwhile
/// (one `write` per Spin for all of them), when the journal is idle; a thread that finds
/// it busy leaves them to the one writing (group commit by combining). Those recorded
/// elsewhere, and every write of a PostgreSQL store, are written on the journal's queue.
/// What waits for the disk is the Spin's `SpinFeed`, told by `durable(through:)` once a
/// write is as durable as `storage.fsync` says: `none` counts a write handed to the OS
/// (so the thread that applied a request's event also writes it and answers, with no
/// other thread woken); `batch` syncs (`fdatasync`) on the journal's queue as soon as a
/// write needs it, and every write made while that sync runs shares the next one (group
/// commit by combining: one sync per Spin for all of them, at once when the disk is
/// idle, so a lone event waits for one sync and not for a window); `always` writes and
/// syncs each on the journal's queue. No sync, probe or database write runs on a network
/// thread (which serves other connections meanwhile).
///
/// **Storage failures.** When a write or sync fails (a full disk, an I/O error), the
/// Spin's feed refuses every waiting acknowledgement (`DurabilityError.storageFailed`), the
/// journal is cut back to what was durable, and `onFailure` asks the host to roll the
/// Spin back to its last durable state and hold it. Every second a probe writes and
/// syncs a scratch file, or reconnects to the database and writes (`SpinStore.probe`);
/// once it succeeds, `onRecovery` lets the Spin go on.
///
/// **Recovery** reads the snapshot and replays the journal after it through the pure
/// reducer. A torn tail (an unfinished last write, `JournalRecord.Damage`) is cut and
/// logged; corruption (a bad record with data after it), or a record the Spin cannot
/// replay, stops start-up naming the file and position, and changes nothing on disk,
/// unless `storage.onCorruption` is `truncate` (`--repair`), which cuts a corrupt
/// journal there, or `isolate`, which leaves that Spin's storage alone and starts the
/// others (the host serves it as an `UnrecoverableSpin`).
///
/// **Epochs.** A Spin's epoch stays the same while its durable history only grows. It
/// changes when recovery cannot promise that: a repair cut acknowledged events, or the
/// previous server did not stop cleanly under `fsync: none` (what it streamed may not
/// have reached the disk).
package final class Journal: @unchecked Sendable {
    // Everything mutable is confined to `section`, except during `open`/`recover`, which
    // run before any Spin starts. So is `store`, but for its suspension methods.
    package let store: any SpinStore
    private let policy: SpinServerConfiguration.Storage.Fsync
    private let retain: Int
    private let repair: Bool
    /// `storage.onCorruption` is `isolate`: a Spin that cannot be recovered does not stop
    /// the others (single server; a cluster node never adopts such a Spin).
    private let isolate: Bool
    private let logger: Logger
    private let queue = DispatchQueue(label: "spin.journal")
    /// Where the journal's work runs, one piece at a time (see above).
    private let section: SerialSection
    /// Whether a network thread writes what it recorded: not when each write syncs
    /// (`always`) or goes over the network (PostgreSQL): a network thread never waits
    /// for a disk or a database while its other connections wait for it.
    private let inlineWrites: Bool
    /// The previous server stopped cleanly (`.clean` was there).
    private var wasClean = true
    private var spins: [String: SpinJournal] = [:]
    /// Where the Gear outbox positions of a Spin made at run time start (`MadeSpin.outboxBase`:
    /// above any an earlier Spin of its name gave), while it is being recovered; then its
    /// journal's position carries it.
    private var outboxFloors: [String: UInt64] = [:]
    private var syncScheduled = false
    /// The journals written since the last group commit (`unsynced`), in order: what
    /// `syncBatch` commits, without looking at every Spin's journal.
    private var awaitingSync: [SpinJournal] = []
    /// Transitions recorded and not yet taken by the section (see `record`).
    private let incoming = Protected(Incoming())
    private struct Incoming {
        var items: [(spin: String, item: Item)] = []
        var scheduled = false
    }

    /// What a Spin hands its journal: an applied transition (with the Gear events its
    /// state propagated), or Gear events propagated apart from one (a feedback's effect,
    /// a feedback on its own queue).
    private enum Item {
        case transition(HostedTransition)
        case outbox([GearOutput])
    }
    private var probeScheduled = false
    /// What the host does when a Spin's storage fails and when it works again; set
    /// before the Spins start.
    private var onFailure: @Sendable (String) -> Void = { _ in }
    private var onRecovery: @Sendable (String) -> Void = { _ in }

    /// How often a failing storage is tried again.
    package static let probeInterval: DispatchTimeInterval = .seconds(1)

    private final class SpinJournal {
        let name: String
        let feed: SpinFeed
        /// Records received and not yet written: the first `complete` of them (up to
        /// `completeLast`) end a batch and are written next; the rest belong to a batch
        /// still arriving.
        var batch: [JournalRecord.Record] = []
        var complete = 0
        var completeLast: UInt64 = 0
        /// The last sequence written to the store.
        var written: UInt64
        var unsynced = false
        /// Records in the store's journal (what compaction looks at).
        var records: Int
        var health: Health = .healthy
        /// Why `reopen` failed last (logged when it changes).
        var reopenProblem: String?
        /// The failure was the Spin's (a transition that did not encode), not the
        /// storage's: once the Spin is rolled back, journaling goes on at once.
        var goesOnAtOnce = false

        // The Spin's Gear outbox (`OutboxRecord`): positions are given in `writeIncoming`,
        // in the order its Gear events reach the journal.
        /// The last position given.
        var outboxGiven: UInt64
        /// The last position of a record that is durable.
        var outboxDurable: UInt64
        /// The outbox records in `batch`, in order; the first `outboxComplete` of them are
        /// in its complete batches.
        var outboxBatch: [OutboxRecord] = []
        var outboxComplete = 0
        /// Outbox records written and not yet durable, in order.
        var outboxWritten: [OutboxRecord] = []
        /// What the Spin consumed of each sender's outbox, as of its durable records (what
        /// a compaction's snapshot says), and as of the records written.
        var consumed: [String: UInt64]
        var consumedWritten: [String: UInt64]
        /// The same, of the records in `batch` (complete or not).
        var consumedBatch: [String: UInt64] = [:]
        var consumedComplete: [String: UInt64] = [:]

        enum Health: Equatable {
            case healthy
            /// Writes failed; `restored` once the host rolled the Spin back.
            case failing(restored: Bool)
        }

        init(name: String, feed: SpinFeed, written: UInt64, records: Int, outbox: UInt64, consumed: [String: UInt64]) {
            self.name = name
            self.feed = feed
            self.written = written
            self.records = records
            self.outboxGiven = outbox
            self.outboxDurable = outbox
            self.consumed = consumed
            self.consumedWritten = consumed
        }

        /// Back to what is durable (a write or sync failed, or the Spin's transition did
        /// not encode): nothing waiting is written.
        func discardPending() {
            batch.removeAll()
            complete = 0
            unsynced = false
            outboxBatch.removeAll()
            outboxComplete = 0
            outboxWritten.removeAll()
            outboxGiven = outboxDurable
            consumedBatch = [:]
            consumedComplete = [:]
            consumedWritten = consumed
        }
    }

    /// Told when a Spin's journal is durable (the Gear router: which outbox records may
    /// be sent, and how far a catching Spin's consumption is durable), and asked which
    /// outbox records a compaction keeps. Set before the Spins start.
    private weak var gears: (any JournalGearListener)?

    package init(store: any SpinStore, storage: SpinServerConfiguration.Storage, logger: Logger) {
        self.store = store
        self.policy = storage.fsync
        self.retain = storage.retainEvents
        self.repair = storage.onCorruption == .truncate
        self.isolate = storage.onCorruption == .isolate
        self.logger = logger
        self.section = SerialSection(queue: queue)
        self.inlineWrites = storage.fsync != .always && store.writesLocally
    }

    // MARK: Opening and recovery

    /// What `recover` came to.
    package struct RecoveryOutcome {
        /// The recovered sequence of each Spin that runs.
        package var sequences: [String: UInt64] = [:]
        /// The Spins that could not be recovered (only under `isolate`).
        package var unrecoverable: [String: Unrecoverable] = [:]
        /// Each recovered Spin's Gear outbox as its journal keeps it (the file backend's;
        /// none for a store that keeps the outbox apart) and what it consumed of others'.
        package var gears: [String: RecoveredGears] = [:]
    }

    /// A recovered Spin's part in Gear delivery.
    package struct RecoveredGears: Sendable {
        /// Its outbox records still in the journal, in position order.
        package var outbox: [OutboxRecord]
        /// Its last outbox position.
        package var outboxPosition: UInt64
        /// What it consumed of each sender's outbox.
        package var consumed: [String: UInt64]
    }

    /// Takes the store (its directory's lock) and notes whether the last server stopped
    /// cleanly.
    package func open() throws {
        do {
            wasClean = try store.open()
        } catch {
            throw RecoveryError(spin: nil, problem: "\(error)", underlying: error)
        }
    }

    /// Restores every Spin from its snapshot and journal and starts its feed there, in
    /// two steps: first every journal is read and replayed through the pure reducers,
    /// changing nothing on disk; only when that worked for every Spin (or for those it
    /// worked for, under `isolate`) are torn tails cut, epochs written and journals
    /// opened. So a Spin that cannot be recovered stops start-up with nothing changed on
    /// disk, or — with `isolating` — is reported in `unrecoverable` with its storage left
    /// as it was, and the others go on.
    package func recover(_ hosted: [(spin: any HostedSpin, feed: SpinFeed)],
                         isolating: Bool? = nil) throws -> RecoveryOutcome {
        let isolating = isolating ?? isolate
        var outcome = RecoveryOutcome()
        var replayed: [(spin: any HostedSpin, feed: SpinFeed, stored: StoredSpin, recovered: Recovered)] = []
        for (spin, feed) in hosted {
            let name = spin.name
            do {
                let stored = try store.read(spin: name, repair: repair)
                let recovered = try spin.recover(snapshot: stored.snapshot, records: stored.records, keep: retain + 1)
                replayed.append((spin, feed, stored, recovered))
            } catch let corruption as JournalCorruption {
                guard isolating else { throw RecoveryError(spin: name, problem: "\(corruption)", underlying: corruption) }
                outcome.unrecoverable[name] = Unrecoverable(
                    journal: corruption.journal, sequence: corruption.intactThrough.map { $0 + 1 } ?? 1,
                    offset: corruption.damage.offset, error: corruption.damage.reason)
            } catch let error as RecoveryError {
                guard isolating else { throw error }
                outcome.unrecoverable[name] = Unrecoverable(journal: store.journalName(of: name), sequence: error.sequence,
                                                            error: error.problem)
            }
        }
        for (name, problem) in outcome.unrecoverable.sorted(by: { $0.key < $1.key }) {
            logger.error("Spin \(name) is UNRECOVERABLE and does not run (storage.onCorruption: isolate): \(problem); its storage is left as it was")
        }
        for (spin, feed, stored, recovered) in replayed {
            let name = spin.name
            let storedEpoch = stored.epoch
            var epochChanges = storedEpoch == nil || (!wasClean && policy == .none)
            if let damage = stored.damage {
                switch damage.kind {
                case .tornTail:
                    // Never acknowledged (what was synced decodes): the crash cut a write short.
                    logger.warning("journal of \(name) (\(store.journalName(of: name))): cut a torn tail: \(damage)")
                case .corruption:
                    logger.error("journal of \(name): REPAIRED by cutting at byte \(damage.offset): \(damage); every event after it is lost")
                    epochChanges = true
                }
            }
            try store.startJournal(spin: name, cuttingAt: stored.damage)
            var epoch = storedEpoch ?? ""
            if epochChanges {
                epoch = Self.makeEpoch()
                try store.writeEpoch(epoch, spin: name)
                if storedEpoch != nil { logger.notice("Spin \(name): new epoch \(epoch) (its history may not have only grown)") }
            }
            feed.begin(sequence: recovered.sequence, state: recovered.state, history: recovered.history, epoch: epoch)
            // The floor is in the position from here on: no longer kept apart.
            let outboxPosition = max(stored.lastOutboxPosition, recovered.outboxPosition, outboxFloors.removeValue(forKey: name) ?? 0)
            spins[name] = SpinJournal(name: name, feed: feed, written: recovered.sequence,
                                      records: stored.records.count + stored.outbox.count, outbox: outboxPosition,
                                      consumed: recovered.consumed)
            outcome.sequences[name] = recovered.sequence
            outcome.gears[name] = RecoveredGears(outbox: stored.outbox.sorted { $0.position < $1.position },
                                                 outboxPosition: outboxPosition, consumed: recovered.consumed)
        }
        return outcome
    }

    /// A cluster node starts serving `spin` (after `start`): recovers it from what the
    /// store holds now (what the node that served it before made durable), begins its
    /// feed there and journals it from now on. In the journal's section, so that it never
    /// races the writes of other Spins. Returns the recovered sequence.
    package func adopt(_ spin: any HostedSpin, feed: SpinFeed) throws -> (sequence: UInt64, gears: RecoveredGears?) {
        // A node only adopts a Spin under a lease the database just gave it: the history it
        // reads is the whole durable one, whatever this node saw before.
        try section.sync { [self] in try recoverAlone(spin, feed: feed) }
    }

    /// Recovers `spin` alone from what its storage holds now, as from a clean stop (its
    /// history is whole: nothing the process lost can be in it). In the section.
    private func recoverAlone(_ spin: any HostedSpin, feed: SpinFeed) throws -> (sequence: UInt64, gears: RecoveredGears?) {
        let saved = wasClean
        wasClean = true
        defer { wasClean = saved }
        let outcome = try recover([(spin, feed)], isolating: false)
        return (outcome.sequences[spin.name] ?? 0, outcome.gears[spin.name])
    }

    /// A cluster node stops serving `spin` (its loop is stopped): what it applied and
    /// the journal holds is committed if the store still takes it (a hand-over: the
    /// lease is still this node's), then the Spin is forgotten. A refused commit (the
    /// lease was taken over: the fence) is logged and dropped: it was never acknowledged.
    /// Transitions recorded after this are ignored.
    package func retire(spin: String) {
        _ = section.sync { [self] in retireNow(spin: spin) }
    }

    /// A Spin made at run time goes to sleep (its loop is stopped): what it applied is
    /// committed and synced, and its journal closed (`retire`), on the journal's queue.
    /// When every Spin that catches its Gear events has consumed them, it rests
    /// (`SpinStore.rest`): the next start hosts it asleep without reading its journal.
    /// Returns whether the Spin rests (durably marked so: nothing of it is needed in memory).
    @discardableResult
    package func sleep(spin: String) -> Bool {
        (try? syncOnQueue { [self] () -> Bool in
            guard let journal = spins[spin], retireNow(spin: spin), gears?.outboxToKeep(of: spin).isEmpty ?? true else { return false }
            do {
                try store.rest(spin, sequence: journal.written, consumed: journal.consumed)
                return true
            } catch {
                logger.warning("Spin \(spin) sleeps, not resting (the next start reads its journal): \(error)")
                return false
            }
        }) ?? false
    }

    /// `retire`, in the section. Returns whether what it applied is committed.
    @discardableResult
    private func retireNow(spin: String) -> Bool {
        writeIncoming()
        guard let journal = spins.removeValue(forKey: spin) else { return false }
        defer { store.release(spin: spin) }
        guard journal.health == .healthy else {
            store.discardUncommitted(spin: spin)
            return false
        }
        do {
            if journal.complete > 0 {
                try store.append(Array(journal.batch[..<journal.complete]), spin: spin)
                takeWritten(journal)
            }
            try store.commit(spin: spin, sync: true)
            markDurable(journal, compacting: false)
            return true
        } catch {
            logger.warning("journal of \(spin): not committed as this node stops serving it (\(error)); nothing of it was acknowledged")
            store.discardUncommitted(spin: spin)
            return false
        }
    }

    // MARK: Spins made at run time

    /// The Spins made at run time that the store holds (`SpinStore.madeSpins`), after `open`
    /// and before `recover`.
    package func madeSpins(including kinds: Set<String> = []) throws -> [String: MadeSpin] {
        do {
            let made = try store.madeSpins(repair: repair, including: kinds)
            if let moved = (store as? FileSpinStore)?.migratedSpins, moved > 0 {
                logger.notice("\(store.location): moved \(moved) Spins made at run time from their files (spins.catalog) into \(SpinDatabase.fileName)")
            }
            return made
        } catch {
            throw RecoveryError(spin: nil, problem: "\(error)", underlying: error)
        }
    }

    /// The Spin made at run time of that name, resting or not (nil: none). Straight from
    /// the store, off the journal's queue (the store's own lock orders it).
    package func storedSpin(named name: String) throws -> MadeSpin? { try store.madeSpin(named: name) }

    /// How many Spins made at run time the store holds, by kind.
    package func storedSpinCounts() throws -> [String: Int] { try store.madeSpinCounts() }

    /// A page of the Spins made at run time the store holds (see `SpinStore.madeSpins(prefix:after:limit:)`).
    package func storedSpins(prefix: String, after: String?, limit: Int) throws -> [(name: String, kind: String, sequence: UInt64)] {
        try store.madeSpins(prefix: prefix, after: after, limit: limit)
    }

    /// Records that the Spins exist, each under a fresh epoch (all durable on return, with
    /// one sync, or none). Straight from the caller's thread, not through the journal's
    /// queue: no journal of these names is open (a Spin is made before its journal begins,
    /// and a deleted one's journal was closed by `delete`, which waits), and the store's
    /// own lock orders the write with the journals' (a failure mid-turn leaves their rows
    /// in doubt, which their next commit reports, as when a commit of theirs fails).
    package func make(_ spins: [(name: String, spin: MadeSpin)]) throws {
        try store.make(spins.map { ($0.name, $0.spin, Self.makeEpoch()) })
    }

    /// Where the outbox positions of the Spins made at run time that `recover` reads at
    /// start-up start (before it; each is dropped once its Spin is recovered).
    package func setOutboxFloors(_ floors: [String: UInt64]) {
        section.sync { [self] in outboxFloors.merge(floors) { $1 } }
    }

    /// What `begin(_:)` found for one Spin: where it starts, or why its storage could not
    /// be read (the error's description).
    package enum Begun: Sendable {
        case begun(sequence: UInt64, gears: RecoveredGears?)
        case failed(String)
    }

    /// Makes Spins made at run time journaled from now on, each recovered from what its
    /// storage holds (nothing but its record and epoch when it is new; its history when it
    /// wakes), its Gear outbox positions above `outboxFloor` (`MadeSpin.outboxBase`). All
    /// in one piece of the journal's work (the Spins woken together wait once behind what
    /// the queue is doing, a sync, not once each).
    package func begin(_ spins: [(spin: any HostedSpin, feed: SpinFeed, outboxFloor: UInt64)]) -> [Begun] {
        do {
            return try syncOnQueue { [self] in
                // What an earlier Spin of a name recorded is written (or dropped) first.
                writeIncoming()
                return spins.map { entry in
                    outboxFloors[entry.spin.name] = entry.outboxFloor
                    defer { outboxFloors[entry.spin.name] = nil }
                    do {
                        let (sequence, gears) = try recoverAlone(entry.spin, feed: entry.feed)
                        return .begun(sequence: sequence, gears: gears)
                    } catch {
                        return .failed("\(error)")
                    }
                }
            }
        } catch {
            return spins.map { _ in .failed("\(error)") }
        }
    }

    /// Runs `body` in the section on the journal's queue, never on a network thread (it
    /// waits for the disk), and waits for it.
    private func syncOnQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try SerialSection.wait(for: body, submittedBy: runOnQueue)
    }

    /// Removes Spin `name` and its history (durable on return), and nothing it records
    /// later is written. Its loop is stopped. Throws when nothing was removed (the store
    /// could not record the deletion): the Spin's journal goes on as it was.
    package func delete(_ name: String) throws {
        try syncOnQueue { [self] in
            writeIncoming()
            try store.delete(name)
            spins[name] = nil
            outboxFloors[name] = nil
        }
    }

    /// A fresh epoch: unique enough that two histories of one Spin never share one.
    package static func makeEpoch() -> String {
        String(UInt64.random(in: 1...UInt64.max), radix: 36)
    }

    /// Starts journaling: from now on `record` writes, failures reach `onFailure`, and
    /// recovered storage `onRecovery`. When the storage does not take writes now (a full
    /// disk at start-up), every Spin starts failing: the caller holds them before they
    /// run. Returns the names of the Spins that start failing.
    package func start(onFailure: @escaping @Sendable (String) -> Void,
                       onRecovery: @escaping @Sendable (String) -> Void,
                       gears: (any JournalGearListener)? = nil) -> [String] {
        section.sync { [self] in
            self.onFailure = onFailure
            self.onRecovery = onRecovery
            self.gears = gears
            do {
                // Until `close`, the store is in use.
                try store.markInUse()
                try store.probe()
                return []
            } catch {
                logger.critical("\(store.location) does not take writes: \(error); the Spins wait until it does")
                for journal in spins.values {
                    journal.health = .failing(restored: true)
                    journal.feed.fail(.storageFailed(spin: journal.name, "\(error)"), rolledBack: true)
                }
                scheduleProbe()
                return spins.keys.sorted()
            }
        }
    }

    // MARK: Writing

    /// Records a transition; called on the Spin's executor, in order, after its feed got
    /// it. Transitions wait in `incoming` until the journal's section takes them all at
    /// once: at the end of this thread's turn when it is a network thread (unless the
    /// policy is `always` or the store is remote, see `inlineWrites`), else on the
    /// queue; under load one
    /// `write` per Spin carries many events (and many client batches), instead of one per
    /// event.
    package func record(spin: String, _ transition: HostedTransition) {
        take(spin, .transition(transition))
    }

    /// Records Gear events `spin` propagated apart from a transition (an effect's, or a
    /// feedback's on its own queue): they take the next places in its outbox and are
    /// written as a batch of their own (or with the client batch still arriving), like
    /// a transition.
    package func record(spin: String, outbox: [GearOutput]) {
        guard !outbox.isEmpty else { return }
        take(spin, .outbox(outbox))
    }

    private func take(_ spin: String, _ item: Item) {
        let wakeUp = incoming.withLock { incoming -> Bool in
            incoming.items.append((spin, item))
            guard !incoming.scheduled else { return false }
            incoming.scheduled = true
            return true
        }
        guard wakeUp else { return }
        if inlineWrites, let turn = EndOfTurn.current {
            turn.atEndOfTurn { [self] in section.run { [self] in writeIncoming() } }
        } else {
            section.schedule { [self] in writeIncoming() }
        }
    }

    /// Appends what `record` collected: every complete batch of a Spin in one append (a
    /// batch still arriving waits for its last record). In `section`.
    private func writeIncoming() {
        let items = incoming.withLock { incoming in
            incoming.scheduled = false
            defer { incoming.items.removeAll(keepingCapacity: true) }
            return incoming.items
        }
        var written: [SpinJournal] = []
        for (spin, item) in items {
            guard let journal = spins[spin], journal.health == .healthy else { continue }
            switch item {
            case .transition(let transition):
                var record = JournalPayload.record(transition)
                if transition.outbox.isEmpty {
                    journal.batch.append(record)
                } else {
                    // The outbox records follow their event's record, in its batch: the
                    // last of them ends the batch when the event does.
                    record.endsBatch = false
                    journal.batch.append(record)
                    appendOutbox(transition.outbox, to: journal, endingBatch: transition.endsBatch)
                }
                for (sender, position) in transition.consumed {
                    journal.consumedBatch[sender] = max(journal.consumedBatch[sender] ?? 0, position)
                }
                guard transition.endsBatch else { continue }
                journal.completeLast = transition.sequence
            case .outbox(let outputs):
                // With a batch still arriving, they go with it (all or none); else they
                // are a batch of their own.
                let alone = journal.complete == journal.batch.count
                appendOutbox(outputs, to: journal, endingBatch: alone)
                guard alone else { continue }
            }
            if journal.complete == 0 { written.append(journal) }
            journal.complete = journal.batch.count
            journal.outboxComplete = journal.outboxBatch.count
            journal.consumedComplete = journal.consumedBatch
        }
        for journal in written where journal.health == .healthy { write(journal) }
    }

    /// Gives `outputs` the next places in the Spin's outbox and appends their records.
    private func appendOutbox(_ outputs: [GearOutput], to journal: SpinJournal, endingBatch: Bool) {
        for (offset, output) in outputs.enumerated() {
            journal.outboxGiven += 1
            let entry = OutboxRecord(position: journal.outboxGiven, gear: output.gear, cause: output.cause, event: output.event)
            journal.outboxBatch.append(entry)
            journal.batch.append(entry.journalRecord(endsBatch: endingBatch && offset == outputs.count - 1))
        }
    }

    /// Appends a Spin's complete batches and makes them as durable as `policy` says.
    private func write(_ journal: SpinJournal) {
        let complete = journal.complete
        do {
            try store.append(complete == journal.batch.count ? journal.batch : Array(journal.batch[..<complete]),
                             spin: journal.name)
        } catch {
            return fail(journal, error)
        }
        journal.records += complete
        takeWritten(journal)
        switch policy {
        case .always:
            commit(journal, sync: true)
        case .none:
            commit(journal, sync: false)
        case .batch:
            if !journal.unsynced {
                journal.unsynced = true
                awaitingSync.append(journal)
            }
            if !syncScheduled {
                syncScheduled = true
                runOnQueue { [self] in syncBatch() }
            }
        }
    }

    /// The complete batches were appended to the store: what they hold counts as
    /// written (the records, the outbox records, what the Spin consumed).
    private func takeWritten(_ journal: SpinJournal) {
        journal.written = journal.completeLast
        journal.batch.removeFirstReleasing(journal.complete)
        journal.complete = 0
        if journal.outboxComplete > 0 {
            journal.outboxWritten += journal.outboxBatch[..<journal.outboxComplete]
            journal.outboxBatch.removeFirstReleasing(journal.outboxComplete)
            journal.outboxComplete = 0
        }
        if !journal.consumedComplete.isEmpty {
            journal.consumedWritten.merge(journal.consumedComplete) { max($0, $1) }
            let complete = journal.consumedComplete
            if journal.consumedBatch.allSatisfy({ complete[$0.key] == $0.value }) {
                // Nothing past the complete batches (the usual case): no copy to empty.
                journal.consumedBatch = [:]
            } else {
                for (sender, position) in complete where journal.consumedBatch[sender] == position {
                    journal.consumedBatch[sender] = nil
                }
            }
            journal.consumedComplete = [:]
        }
    }

    /// Runs `body` in the section on the journal's queue, never on a network thread: a
    /// sync or a probe waits for the disk. (The section may be held by a network thread
    /// writing when the queue asks for it; that thread would run `body` when it leaves,
    /// so it hands `body` back to the queue instead.)
    private func runOnQueue(_ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            section.run { [self] in
                guard EndOfTurn.current == nil else { return runOnQueue(body) }
                body()
            }
        }
    }

    /// Group commit: one sync per Spin written since the last one began. In `section`.
    private func syncBatch() {
        syncScheduled = false
        let written = awaitingSync
        awaitingSync.removeAll(keepingCapacity: true)
        // A journal retired or failed meanwhile is no longer unsynced (or no longer here).
        for journal in written where journal.unsynced && spins[journal.name] === journal { commit(journal, sync: true) }
    }

    private func commit(_ journal: SpinJournal, sync: Bool) {
        journal.unsynced = false
        guard journal.health == .healthy else { return }
        do {
            try store.commit(spin: journal.name, sync: sync)
        } catch {
            return fail(journal, error)
        }
        markDurable(journal)
    }

    private func markDurable(_ journal: SpinJournal, compacting: Bool = true) {
        journal.feed.durable(through: journal.written)
        journal.consumed = journal.consumedWritten
        let outbox = journal.outboxWritten
        if let last = outbox.last {
            journal.outboxDurable = last.position
            // A new buffer when one is needed (`outbox` shares this one meanwhile).
            journal.outboxWritten = []
        }
        gears?.journalDurable(spin: journal.name, through: journal.written, outbox: outbox)
        if compacting { compactIfDue(journal) }
    }

    // MARK: Compaction

    /// Records between two compactions: with at least `retain` kept, a journal holds
    /// between `retain` and `retain + compactEvery` records, so rewriting it costs at
    /// most one extra write per event, and recovery replays at most that many.
    private var compactEvery: Int { max(1000, retain) }

    /// Once the journal holds `retain + compactEvery` records: the state `retain` events
    /// back becomes the snapshot, and the journal is rewritten with the events after it.
    /// The store replaces both so that a crash at any point leaves a snapshot and a
    /// journal that fit (recovery skips records the snapshot covers).
    private func compactIfDue(_ journal: SpinJournal) {
        // Records of a batch still arriving (`journal.batch`) are only in memory: they are
        // appended to the rewritten journal once their batch is complete.
        guard journal.records >= retain + compactEvery,
              let base = journal.feed.oldestRetained,
              let kept = journal.feed.retained(after: base.sequence), kept.last?.sequence == journal.written else { return }
        let name = journal.name
        do {
            var members: [(String, JSONValue)] = [("sequence", .number(String(base.sequence))),
                                                  ("epoch", .string(journal.feed.epoch)), ("state", base.state)]
            // What it consumed is the newest durable (no record after the snapshot takes
            // more back); the outbox position, its newest durable one.
            if !journal.consumed.isEmpty {
                members.append(("consumed", .object(journal.consumed.sorted { $0.key < $1.key }.map {
                    ($0.key, .number(String($0.value)))
                })))
            }
            if journal.outboxDurable > 0 { members.append(("outbox", .number(String(journal.outboxDurable)))) }
            // The outbox records some catching Spin has not consumed yet stay, as a batch.
            let keep = gears?.outboxToKeep(of: name) ?? []
            let records = keep.enumerated().map { $0.element.journalRecord(endsBatch: $0.offset == keep.count - 1) }
                + kept.map(JournalPayload.record)
            try store.compact(spin: name, snapshot: JSONValue.object(members).bytes, records: records)
            journal.records = records.count
            logger.debug("journal of \(name): compacted to \(kept.count) records after sequence \(base.sequence)")
        } catch {
            // The old journal is intact unless the rename happened; either way what was
            // durable stays durable. The next write tells whether storage fails.
            logger.warning("journal of \(name): compaction failed: \(error)")
        }
    }

    // MARK: Failures

    /// A write or sync failed: refuse the Spin's acknowledgements, cut the journal back
    /// to what was durable, and have the host roll the Spin back and hold it. In `section`.
    private func fail(_ journal: SpinJournal, _ error: any Error) {
        guard journal.health == .healthy else { return }
        logger.critical("journal of \(journal.name): \(error); the Spin goes back to sequence \(journal.feed.snapshot.sequence) and waits until storage works")
        fail(journal, refusing: .storageFailed(spin: journal.name, "\(error)"))
    }

    /// A transition of `spin` did not encode (`HostedSpin.observe`; the Spin suspended
    /// itself): what it recorded before is written and committed, then the journal drops
    /// the rest (a batch the fault cut) as for a failed write, every acknowledgement waiting gets `error`, and the
    /// host rolls the Spin back. The probe finds the storage working and journaling goes
    /// on; the Spin stays suspended until resumed.
    package func fail(spin: String, _ error: DurabilityError) {
        section.schedule { [self] in
            writeIncoming()
            guard let journal = spins[spin], journal.health == .healthy else { return }
            // The complete batches before the fault are good: durable now, not dropped.
            if journal.unsynced { commit(journal, sync: true) }
            guard journal.health == .healthy else { return }
            logger.error("journal of \(spin): \(error); the Spin goes back to sequence \(journal.feed.snapshot.sequence)")
            journal.goesOnAtOnce = true
            fail(journal, refusing: error)
        }
    }

    private func fail(_ journal: SpinJournal, refusing error: DurabilityError) {
        journal.health = .failing(restored: false)
        journal.discardPending()
        journal.feed.fail(error)
        store.discardUncommitted(spin: journal.name)
        journal.written = journal.feed.snapshot.sequence
        let name = journal.name
        let onFailure = self.onFailure
        // Off the journal's section: the host's rollback runs on the Spin's executor,
        // which may be waiting to hand this section a transition (or be this thread).
        DispatchQueue.global().async { onFailure(name) }
    }

    /// The host rolled `spin` back to its durable state; every transition it applied
    /// before is behind this call in the section, so probing may begin.
    package func restored(spin: String) {
        section.schedule { [self] in
            guard let journal = spins[spin], journal.health == .failing(restored: false) else { return }
            journal.health = .failing(restored: true)
            if journal.goesOnAtOnce {
                probe()
            } else {
                scheduleProbe()
            }
        }
    }

    private func scheduleProbe() {
        guard !probeScheduled else { return }
        probeScheduled = true
        queue.asyncAfter(deadline: .now() + Self.probeInterval) { [self] in runOnQueue { [self] in probe() } }
    }

    /// Tries the storage again; the Spins whose journals work go on.
    private func probe() {
        probeScheduled = false
        let waiting = spins.values.filter { $0.health == .failing(restored: true) }
        guard !waiting.isEmpty else {
            if spins.values.contains(where: { $0.health != .healthy }) { scheduleProbe() }
            return
        }
        do {
            try store.probe()
        } catch {
            logger.debug("storage still failing: \(error)")
            return scheduleProbe()
        }
        for journal in waiting {
            do {
                if let stored = try store.reopen(spin: journal.name), stored > journal.outboxDurable {
                    // Positions a commit in doubt took in the shared database.
                    logger.warning("journal of \(journal.name): Gear outbox positions \(journal.outboxDurable + 1)–\(stored) were taken by a commit whose outcome was lost; the next event gets \(stored + 1)")
                    journal.outboxDurable = stored
                    journal.outboxGiven = max(journal.outboxGiven, stored)
                }
            } catch {
                // Storage works but this journal does not: said once at error level (a
                // database that lost commits holds the Spin until a restart).
                let problem = "\(error)"
                if journal.reopenProblem != problem {
                    journal.reopenProblem = problem
                    logger.error("journal of \(journal.name) cannot resume: \(problem)")
                }
                continue
            }
            journal.health = .healthy
            journal.feed.recovered()
            if journal.goesOnAtOnce {
                journal.goesOnAtOnce = false
                logger.notice("journal of \(journal.name) goes on from sequence \(journal.written)")
            } else {
                logger.notice("storage of \(journal.name) works again: the Spin goes on from sequence \(journal.written)")
            }
            onRecovery(journal.name)
        }
        if spins.values.contains(where: { $0.health != .healthy }) { scheduleProbe() }
    }

    // MARK: Closing

    /// Start-up failed before anything was written: releases the store (its directory's
    /// lock) and leaves everything stored as it was.
    package func abandon() {
        section.sync { [self] in
            spins = [:]
            store.close()
        }
    }

    /// Syncs every journal, marks the store cleanly stopped and releases it (its lock).
    /// Throws when what was written could not be made durable (the exit status says so).
    package func close() throws {
        let problem: (any Error)? = section.sync { [self] () -> (any Error)? in
            var problem: (any Error)?
            for journal in spins.values where journal.health == .healthy {
                do {
                    try store.commit(spin: journal.name, sync: true)
                    journal.unsynced = false
                    markDurable(journal)
                } catch {
                    problem = problem ?? error
                }
            }
            // A Spin held for a transition that did not encode (`fail(spin:)`) has its
            // journal committed up to the fault and cut back after it: its storage did
            // not fail, even when the stop comes before the rollback let it go on.
            let failing = spins.values.filter { $0.health != .healthy && !$0.goesOnAtOnce }.map(\.name).sorted()
            if problem == nil, !failing.isEmpty {
                problem = RecoveryError(spin: nil, problem: "the storage of \(failing.joined(separator: ", ")) was failing at shutdown")
            }
            if problem == nil {
                do {
                    try store.markClean()
                } catch {
                    problem = error
                }
            }
            spins = [:]
            store.close()
            return problem
        }
        if let problem { throw problem }
    }
}

/// What a `Journal` tells the Gear router (`GearRouter`) and asks of it.
package protocol JournalGearListener: AnyObject, Sendable {
    /// `spin`'s journal is durable through `sequence`; `outbox` holds the outbox records
    /// that became durable with it, in position order. Called in the journal's section:
    /// must not block.
    func journalDurable(spin: String, through sequence: UInt64, outbox: [OutboxRecord])
    /// The outbox records of `spin` a compaction of its journal keeps: those some Spin
    /// that catches them has not consumed yet (nothing, when the outbox is kept apart).
    func outboxToKeep(of spin: String) -> [OutboxRecord]
}
