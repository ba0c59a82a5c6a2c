import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinJSON

// The journal's compaction (see `Journal`).
extension Journal {
    /// Records between two compactions: with at least `retain` kept, a journal holds
    /// between `retain` and `retain + compactEvery` records, so rewriting it costs at
    /// most one extra write per event, and recovery replays at most that many.
    var compactEvery: Int { max(1000, retain) }

    /// Once the journal holds `retain + compactEvery` records: the state `retain` events
    /// back becomes the snapshot, and the journal is rewritten with the events after it.
    /// The store replaces both so that a crash at any point leaves a snapshot and a
    /// journal that fit (recovery skips records the snapshot covers). In `section`.
    ///
    /// A configured Spin's journal file is compacted in two steps
    /// (`FileSpinStore.prepareCompaction`): encoding the records and writing and syncing
    /// the new files (four syncs) run on `compactions`, apart from the section, while
    /// the Spin's events go on being written and acknowledged; only appending what came
    /// meanwhile and the rename run in the section, later. (In one step, under `fsync
    /// none`, a network thread did all of it at the end of its turn: 44 ms every 10,000
    /// events on a disk whose sync takes 10 ms, every request of that turn and of the
    /// turns queued behind it waiting.) A made Spin's journal (in the database) and a
    /// PostgreSQL store compact in one step, in the section. When the files share their
    /// syncs (`FileSpinStore.sharesSyncs`), the second step also checkpoints the shared
    /// log first (a sync of each journal file written since the last), in the section.
    func compactIfDue(_ journal: SpinJournal) {
        // Records of a batch still arriving (`journal.batch`) are only in memory: they are
        // appended to the rewritten journal once their batch is complete.
        guard !journal.compacting, journal.records >= retain + compactEvery,
              let base = journal.feed.oldestRetained,
              let kept = journal.feed.retained(after: base.sequence), kept.last?.sequence == journal.written,
              // Nothing leaves the journal that the kept history does not hold yet.
              !history.archives || base.sequence <= journal.archivedThrough else { return }
        let name = journal.name
        var members: [(String, JSONValue)] = [("sequence", .number(String(base.sequence))),
                                              ("epoch", .string(journal.feed.epoch)), ("state", base.state)]
        // What it consumed is the newest durable (no record after the snapshot takes
        // more back); the outbox position, its newest durable one.
        if !journal.consumed.isEmpty {
            members.append(("consumed", .numbers(journal.consumed)))
        }
        if journal.outboxDurable > 0 { members.append(("outbox", .number(String(journal.outboxDurable)))) }
        // The version of the definition the state is of (a Spin recorded under an older
        // one replays the events after it through that one, `HostedSpin.recover`).
        if base.version != 1 { members.append(("version", .number(String(base.version)))) }
        // The outbox records some catching Spin has not consumed yet stay, as a batch.
        let keep = gears?.outboxToKeep(of: name) ?? []
        let snapshot = JSONValue.object(members)
        let records = { @Sendable in
            keep.enumerated().map { $0.element.journalRecord(endsBatch: $0.offset == keep.count - 1) }
                + JournalPayload.records(kept)
        }
        if let files = store as? FileSpinStore, let cut = files.compactionCut(spin: name) {
            guard let cut else { return }
            journal.compacting = true
            compactApart(journal, in: files, cut: cut, snapshot: snapshot, records: records, after: base.sequence)
            return
        }
        do {
            let records = records()
            try store.compact(spin: name, snapshot: snapshot.bytes, records: records)
            journal.records = records.count
            logger.debug("journal of \(name): compacted to \(kept.count) records after sequence \(base.sequence)")
        } catch {
            // The old journal is intact unless the rename happened; either way what was
            // durable stays durable. The next write tells whether storage fails.
            logger.warning("journal of \(name): compaction failed: \(error)")
        }
    }

    /// The two steps of a file journal's compaction (see `compactIfDue`).
    private func compactApart(_ journal: SpinJournal, in files: FileSpinStore, cut: (generation: Int, length: Int),
                              snapshot: JSONValue, records: @escaping @Sendable () -> [JournalRecord.Record],
                              after sequence: UInt64) {
        let name = journal.name
        let recordsAtCut = journal.records
        let syncsCommits = policy != .none
        let handle = UncheckedJournal(journal: journal)
        compactions.async { [self] in
            let prepared: FileSpinStore.PreparedCompaction
            let count: Int
            do {
                let records = records()
                count = records.count
                prepared = try files.prepareCompaction(spin: name, cut: cut, snapshot: snapshot.bytes, records: records)
            } catch {
                logger.warning("journal of \(name): compaction failed: \(error)")
                return runOnQueue { handle.journal.compacting = false }
            }
            runOnQueue { [self] in
                let journal = handle.journal
                journal.compacting = false
                do {
                    guard try files.finishCompaction(prepared, syncsCommits: syncsCommits) else { return }
                    journal.records = count + (journal.records - recordsAtCut)
                    logger.debug("journal of \(name): compacted to \(count) records after sequence \(sequence)")
                } catch {
                    logger.warning("journal of \(name): compaction failed: \(error)")
                    return
                }
                // The rename reaches the disk now rather than at the next sync (there is
                // none under `fsync none`); a sync that comes first syncs it too.
                compactions.async {
                    do { try files.syncDirectory() } catch { self.logger.warning("journal of \(name): \(error)") }
                }
            }
        }
    }

    /// Waits until no compaction is being prepared, and the last one prepared finished
    /// (or gave up): before the store closes, so that what it leaves is the same every time.
    func awaitCompactions() {
        compactions.sync {}
        queue.sync {}
    }
}

/// A journal handed from the section to work elsewhere (a compaction's next step, a
/// history segment's write) and back to the section, the only place it is touched.
struct UncheckedJournal: @unchecked Sendable {
    let journal: Journal.SpinJournal
}
