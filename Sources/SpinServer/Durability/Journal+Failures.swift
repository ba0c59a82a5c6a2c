import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

// The journal's storage failures: refusing, probing until storage works, recovering
// (see `Journal`, "Storage failures").
extension Journal {
    // MARK: Failures

    /// A write or sync failed: refuse the Spin's acknowledgements, cut the journal back
    /// to what was durable, and have the host roll the Spin back and hold it. In `section`.
    func fail(_ journal: SpinJournal, _ error: any Error) {
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
            // The complete batches before the fault are good: durable now, not dropped
            // (with the commits on their way: what the Spin goes back to includes them).
            if journal.unsynced || !journal.commitsInFlight.isEmpty { commit(journal, sync: true, waiting: true) }
            guard journal.health == .healthy else { return }
            logger.error("journal of \(spin): \(error); the Spin goes back to sequence \(journal.feed.snapshot.sequence)")
            journal.goesOnAtOnce = true
            fail(journal, refusing: error)
        }
    }

    func fail(_ journal: SpinJournal, refusing error: DurabilityError) {
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

    func scheduleProbe() {
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
}
