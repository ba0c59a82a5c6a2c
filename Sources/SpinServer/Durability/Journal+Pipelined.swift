import SpinStorage
import SpinConcurrency

// Commits on a store that keeps several in flight (PostgreSQL: `PipelinedCommits`), see
// `Journal`.
extension Journal {
    /// `commit` without waiting for the store: the next write of this Spin (or of
    /// another) goes to the store while this commit waits for the database. The Spin's
    /// feed is told when it completes, in the order the commits began (the store's
    /// promise); a commit with Gear outbox records to announce, and every commit that must
    /// be durable before the journal goes on (`fail(spin:)`), wait instead (`commit`). In
    /// `section`.
    func beginCommit(_ journal: SpinJournal, sync: Bool, on store: any PipelinedCommits) {
        let through = journal.written
        let consumed = journal.consumedWritten
        journal.commitsInFlight.append(through)
        // Used in the section only, where the journal is confined.
        nonisolated(unsafe) let journal = journal
        store.beginCommit(spin: journal.name, sync: sync) { [self] error in
            section.schedule { [self] in
                // This turn of the Spin here (not one retired meanwhile).
                guard spins[journal.name] === journal else { return }
                HandOffs.gathering { committed(journal, through: through, consumed: consumed, error) }
            }
        }
    }

    /// A commit begun by `beginCommit` completed. One that a waiting commit or a failure
    /// overtook (no longer first in `commitsInFlight`) tells nothing.
    private func committed(_ journal: SpinJournal, through: UInt64, consumed: [String: UInt64], _ error: (any Error)?) {
        guard journal.commitsInFlight.first == through else { return }
        journal.commitsInFlight.removeFirst()
        guard journal.health == .healthy else { return }
        if let error { return fail(journal, error) }
        journal.feed.durable(through: through)
        journal.consumed = consumed
        gears?.journalDurable(spin: journal.name, through: through, outbox: [])
        archiveIfDue(journal, through: through)
        // Compaction rewrites the journal through what is written: not with a commit on its
        // way. Under load one always is: once due, a commit that waits for them all (and
        // compacts, `markDurable`).
        if journal.commitsInFlight.isEmpty {
            compactIfDue(journal)
        } else if journal.records >= retain + compactEvery {
            commit(journal, sync: true, waiting: true)
        }
    }
}
