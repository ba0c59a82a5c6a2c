import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinJSON
import SpinConcurrency

// The journal's writing (what Spins record, written and synced as `storage.fsync` says)
// and compaction (see `Journal`).
extension Journal {
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
    func writeIncoming() {
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
                if let replacement = transition.replacement, !replacement.epoch.isEmpty {
                    // The new epoch is stored before the replacement can be durable: no client
                    // sees it before a restart would find it (storing it early only costs
                    // clients of the old one a snapshot).
                    do {
                        try store.writeEpoch(replacement.epoch, spin: spin)
                    } catch {
                        fail(journal, error)
                        continue
                    }
                }
                var record = JournalPayload.record(transition, after: &journal.lastTime)
                if history.archives { journal.historyPending.append(transition) }
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
        // Every Spin's batches first, then the commits: a store that shares one commit
        // among its Spins (the made Spins' database) commits once for this whole turn,
        // not once per Spin (the first commit takes them all, the others find nothing
        // left to do).
        for journal in written where journal.health == .healthy { append(journal) }
        for journal in written where journal.health == .healthy { makeDurable(journal) }
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

    /// Appends a Spin's complete batches (`makeDurable` then makes them as durable as
    /// `policy` says).
    private func append(_ journal: SpinJournal) {
        let complete = journal.complete
        do {
            try store.append(complete == journal.batch.count ? journal.batch : Array(journal.batch[..<complete]),
                             spin: journal.name)
        } catch {
            return fail(journal, error)
        }
        journal.records += complete
        takeWritten(journal)
    }

    /// Commits what `append` wrote (`none`, `always`) or has it synced with the next
    /// group commit (`batch`).
    private func makeDurable(_ journal: SpinJournal) {
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
                // A network thread asks for the sync once it has left the section: on a
                // busy core the woken queue thread may run at once, and would find the
                // section still held (and hand the sync back, waking a thread again).
                if let turn = EndOfTurn.current {
                    turn.atEndOfTurn { [self] in runOnQueue { [self] in syncBatch() } }
                } else {
                    runOnQueue { [self] in syncBatch() }
                }
            }
        }
    }

    /// The complete batches were appended to the store: what they hold counts as
    /// written (the records, the outbox records, what the Spin consumed).
    func takeWritten(_ journal: SpinJournal) {
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
    func runOnQueue(_ body: @escaping @Sendable () -> Void) {
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

    /// `waiting`: until the store committed, with every commit of the Spin before it
    /// (else a store that keeps commits in flight does so, `beginCommit`).
    func commit(_ journal: SpinJournal, sync: Bool, waiting: Bool = false) {
        journal.unsynced = false
        guard journal.health == .healthy else { return }
        if !waiting, journal.outboxWritten.isEmpty, let pipelined = store as? any PipelinedCommits {
            return beginCommit(journal, sync: sync, on: pipelined)
        }
        do {
            try store.commit(spin: journal.name, sync: sync)
        } catch {
            return fail(journal, error)
        }
        journal.commitsInFlight.removeAll()
        // What this commit made durable reaches each event loop in one batch (`HandOffs`):
        // off the loops, the acknowledgements of every request it covered go back to the
        // loops they were asked on together. Each commit apart: a sync batch of many
        // Spins does not hold the first one's answers until the last one's sync.
        HandOffs.gathering { markDurable(journal) }
    }

    func markDurable(_ journal: SpinJournal, compacting: Bool = true) {
        journal.feed.durable(through: journal.written)
        journal.consumed = journal.consumedWritten
        let outbox = journal.outboxWritten
        if let last = outbox.last {
            journal.outboxDurable = last.position
            // A new buffer when one is needed (`outbox` shares this one meanwhile).
            journal.outboxWritten = []
        }
        gears?.journalDurable(spin: journal.name, through: journal.written, outbox: outbox)
        archiveIfDue(journal, through: journal.written)
        if compacting { compactIfDue(journal) }
    }
}
