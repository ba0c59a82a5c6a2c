import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinJSON
import SpinConcurrency

// The journal's opening and recovery (a Spin's snapshot and journal read back and replayed),
// and the Spins made at run time it adopts, recovers and forgets (see `Journal`).
extension Journal {
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
        if let recovered = (store as? FileSpinStore)?.recoveredLog {
            let torn = recovered.tornBytes > 0 ? "; cut its torn tail, \(recovered.tornBytes) bytes never synced" : ""
            let lost = recovered.extended.isEmpty ? "each file held them all"
                : "\(recovered.extended.count) had lost some: \(recovered.extended.sorted().joined(separator: ", "))"
            logger.notice("\(store.location): put \(recovered.frames) appends from \(SyncLog.fileName) back into the journals of \(recovered.spins.count) Spins (\(lost))\(torn)")
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
        var replayed: [(spin: any HostedSpin, feed: SpinFeed, stored: StoredSpin, recovered: Recovered, archived: UInt64)] = []
        var byDefinition: Set<String> = []
        for (spin, feed) in hosted {
            let name = spin.name
            do {
                let stored = try store.read(spin: name, repair: repair)
                // With history kept in segments: every transition not in one yet, too.
                let through = archivedThrough(of: name)
                let keep = max(retain + 1, through.map { after in stored.records.count { $0.sequence >= after } } ?? 0)
                let recovered = try spin.recover(snapshot: stored.snapshot, records: stored.records, keep: keep)
                replayed.append((spin, feed, stored, recovered, through ?? 0))
            } catch let corruption as JournalCorruption {
                guard isolating else { throw RecoveryError(spin: name, problem: "\(corruption)", underlying: corruption) }
                outcome.unrecoverable[name] = Unrecoverable(
                    journal: corruption.journal, sequence: corruption.intactThrough.map { $0 + 1 } ?? 1,
                    offset: corruption.damage.offset, error: corruption.damage.reason)
            } catch let error as RecoveryError {
                // A definition the Spin cannot run under leaves the others running, always.
                guard isolating || error.isolates else { throw error }
                if error.isolates { byDefinition.insert(name) }
                outcome.unrecoverable[name] = Unrecoverable(journal: store.journalName(of: name), sequence: error.sequence,
                                                            error: error.problem)
            }
        }
        for (name, problem) in outcome.unrecoverable.sorted(by: { $0.key < $1.key }) {
            let why = byDefinition.contains(name) ? "its definition as configured cannot run its history" : "storage.onCorruption: isolate"
            logger.error("Spin \(name) is UNRECOVERABLE and does not run (\(why)): \(problem); its storage is left as it was")
        }
        for (spin, feed, stored, recovered, archived) in replayed {
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
            var records = stored.records.count + stored.outbox.count
            if let migration = recovered.migration {
                // Durable (as `storage.fsync` says) before the Spin runs: its history from
                // here on is of the new version.
                try store.append(JournalPayload.records([migration]), spin: name)
                try store.commit(spin: name, sync: policy != .none)
                records += 1
                logger.debug("Spin \(name): migrated from version \(migration.migratedFrom) to \(migration.version) of its definition at sequence \(migration.sequence)")
            }
            var epoch = storedEpoch ?? ""
            if epochChanges {
                epoch = Self.makeEpoch()
                try store.writeEpoch(epoch, spin: name)
                if storedEpoch != nil { logger.notice("Spin \(name): new epoch \(epoch) (its history may not have only grown)") }
            }
            feed.begin(sequence: recovered.sequence, state: recovered.state, history: recovered.history, epoch: epoch)
            // The floor is in the position from here on: no longer kept apart.
            let outboxPosition = max(stored.lastOutboxPosition, recovered.outboxPosition, outboxFloors.removeValue(forKey: name) ?? 0)
            let journal = SpinJournal(name: name, feed: feed, written: recovered.sequence,
                                      records: records, outbox: outboxPosition,
                                      consumed: recovered.consumed)
            journal.version = Int32(spin.definitionVersion)
            beginHistory(of: journal, through: archived, recovered: recovered)
            spins[name] = journal
            // What the segments lack, written now, not at the Spin's next event: the feed
            // holds only the newest of it.
            archiveIfDue(journal, through: journal.written)
            outcome.sequences[name] = recovered.sequence
            outcome.gears[name] = RecoveredGears(outbox: stored.outbox.sorted { $0.position < $1.position },
                                                 outboxPosition: outboxPosition, consumed: recovered.consumed)
        }
        if case .days(let days) = history { historyQueue.async { [self] in trimIfDue(days: days) } }
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
        // Only a definition it cannot run under is isolated here: the caller says so.
        if let problem = outcome.unrecoverable[spin.name] {
            throw RecoveryError(spin: spin.name, problem: problem.error, sequence: problem.sequence, isolates: true)
        }
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
        /// Its history cannot run under its definition as configured (`RecoveryError.isolates`):
        /// it is unrecoverable, its storage left as it was.
        case unrecoverable(Unrecoverable)
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
                    } catch let error as RecoveryError where error.isolates {
                        return .unrecoverable(Unrecoverable(journal: store.journalName(of: entry.spin.name),
                                                            sequence: error.sequence, error: error.problem))
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
}
