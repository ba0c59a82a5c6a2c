import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinJSON
import SpinConcurrency
import Synchronization

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
/// **History.** Each record carries when it was applied (`JournalPayload`); under
/// `storage.history` `{"days": D}` or `"all"` the journal also writes every Spin's events
/// in segments beside it, once durable (`Journal+History.swift`; `SpinHistory` reads them).
///
/// **Epochs.** A Spin's epoch stays the same while its durable history only grows. It
/// changes when recovery cannot promise that: a repair cut acknowledged events, or the
/// previous server did not stop cleanly under `fsync: none` (what it streamed may not
/// have reached the disk).
package final class Journal: @unchecked Sendable {
    // Everything mutable is confined to `section`, except during `open`/`recover`, which
    // run before any Spin starts. So is `store`, but for its suspension methods.
    package let store: any SpinStore
    let policy: SpinServerConfiguration.Storage.Fsync
    let retain: Int
    /// `storage.history`, and the events of a segment of it (`Journal+History.swift`).
    let history: SpinServerConfiguration.Storage.History
    let snapshotEvery: Int
    /// Where history segments are encoded and written, apart from the section.
    let historyQueue = DispatchQueue(label: "spin.journal.history")
    /// When `{"days": D}` last removed old segments (milliseconds since 1970).
    let lastTrim = Atomic<Int64>(0)
    let repair: Bool
    /// `storage.onCorruption` is `isolate`: a Spin that cannot be recovered does not stop
    /// the others (single server; a cluster node never adopts such a Spin).
    let isolate: Bool
    let logger: Logger
    let queue = DispatchQueue(label: "spin.journal")
    /// Where a file journal's compaction encodes, writes and syncs its new files, apart
    /// from `queue` (whose syncs acknowledge events) and from the section.
    let compactions = DispatchQueue(label: "spin.journal.compaction")
    /// Where the journal's work runs, one piece at a time (see above).
    let section: SerialSection
    /// Whether a network thread writes what it recorded: not when each write syncs
    /// (`always`) or goes over the network (PostgreSQL): a network thread never waits
    /// for a disk or a database while its other connections wait for it.
    let inlineWrites: Bool
    /// The previous server stopped cleanly (`.clean` was there).
    var wasClean = true
    var spins: [String: SpinJournal] = [:]
    /// Where the Gear outbox positions of a Spin made at run time start (`MadeSpin.outboxBase`:
    /// above any an earlier Spin of its name gave), while it is being recovered; then its
    /// journal's position carries it.
    var outboxFloors: [String: UInt64] = [:]
    var syncScheduled = false
    /// The journals written since the last group commit (`unsynced`), in order: what
    /// `syncBatch` commits, without looking at every Spin's journal.
    var awaitingSync: [SpinJournal] = []
    /// Transitions recorded and not yet taken by the section (see `record`).
    let incoming = Protected(Incoming())
    struct Incoming {
        var items: [(spin: String, item: Item)] = []
        var scheduled = false
    }

    /// What a Spin hands its journal: an applied transition (with the Gear events its
    /// state propagated), or Gear events propagated apart from one (a feedback's effect,
    /// a feedback on its own queue).
    enum Item {
        case transition(HostedTransition)
        case outbox([GearOutput])
    }
    var probeScheduled = false
    /// What the host does when a Spin's storage fails and when it works again; set
    /// before the Spins start.
    var onFailure: @Sendable (String) -> Void = { _ in }
    var onRecovery: @Sendable (String) -> Void = { _ in }

    /// How often a failing storage is tried again.
    package static let probeInterval: DispatchTimeInterval = .seconds(1)

    final class SpinJournal {
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
        /// The `written` of each commit begun and not yet told (`beginCommit`), oldest first.
        var commitsInFlight: [UInt64] = []
        /// A compaction is under way on `compactions` (see `compactIfDue`).
        var compacting = false
        /// Records in the store's journal (what compaction looks at).
        var records: Int
        /// The version of the Spin's definition when it was recovered (its state's then).
        var version: Int32 = 1
        /// The last sequence the kept history holds (`archiveIfDue`), a segment being
        /// written, and when a write that failed is tried again (uptime nanoseconds; 0: now).
        var archivedThrough: UInt64 = 0
        var archiving = false
        var archiveRetry: UInt64 = 0
        /// The transition at `archivedThrough` (the state the next segment starts from;
        /// nil at 0: the initial state), the durable transitions after it not written yet,
        /// and those recorded and not durable yet (kept only with `history.archives`).
        var archiveBase: HostedTransition?
        var unarchived: [HostedTransition] = []
        var historyPending: [HostedTransition] = []
        /// The time of the last record given to the store or to `batch` (0: not known, so
        /// the next one carries its time): see `JournalPayload`.
        var lastTime: Int64 = 0
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
            commitsInFlight.removeAll()
            outboxBatch.removeAll()
            outboxComplete = 0
            outboxWritten.removeAll()
            outboxGiven = outboxDurable
            consumedBatch = [:]
            consumedComplete = [:]
            consumedWritten = consumed
            lastTime = 0
            historyPending.removeAll()
        }
    }

    /// Told when a Spin's journal is durable (the Gear router: which outbox records may
    /// be sent, and how far a catching Spin's consumption is durable), and asked which
    /// outbox records a compaction keeps. Set before the Spins start.
    weak var gears: (any JournalGearListener)?

    package init(store: any SpinStore, storage: SpinServerConfiguration.Storage, logger: Logger) {
        self.store = store
        self.policy = storage.fsync
        self.retain = storage.retainedTransitions
        self.history = storage.history
        self.snapshotEvery = storage.snapshotEvery
        self.repair = storage.onCorruption == .truncate
        self.isolate = storage.onCorruption == .isolate
        self.logger = logger
        self.section = SerialSection(queue: queue)
        self.inlineWrites = storage.fsync != .always && store.writesLocally
    }

    // MARK: Closing

    /// Start-up failed before anything was written: releases the store (its directory's
    /// lock) and leaves everything stored as it was.
    package func abandon() {
        awaitCompactions()
        section.sync { [self] in
            spins = [:]
            store.close()
        }
    }

    /// Syncs every journal, marks the store cleanly stopped and releases it (its lock).
    /// Throws when what was written could not be made durable (the exit status says so).
    /// A compaction under way finishes first; none starts (the next start compacts).
    package func close() throws {
        awaitCompactions()
        let problem: (any Error)? = section.sync { [self] () -> (any Error)? in
            var problem: (any Error)?
            for journal in spins.values where journal.health == .healthy {
                do {
                    try store.commit(spin: journal.name, sync: true)
                    journal.unsynced = false
                    markDurable(journal, compacting: false)
                } catch {
                    problem = problem ?? error
                }
            }
            // A Spin held for a transition that did not encode (`fail(spin:)`) has its
            // journal committed up to the fault and cut back after it: its storage did
            // not fail, even when the stop comes before the rollback let it go on.
            let failing = spins.values.filter { $0.health != .healthy && !$0.goesOnAtOnce }.map(\.name).sorted()
            // The history segments on their way are written before the store closes (one
            // not begun is written again from the journal at the next start).
            historyQueue.sync {}
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
