import Foundation

/// Where hosted Spins keep their journals and snapshots: the one protocol a storage
/// backend implements (`FileSpinStore`, files in a directory, first). It speaks of
/// Spins, records and documents, not of how a backend keeps them: no paths, no file
/// descriptors.
///
/// Per Spin a store keeps
/// - a **journal**: records (`JournalRecord.Record`: sequence, event JSON, batch end),
///   appended a batch at a time and kept whole batches or nothing; among them the Spin's
///   **outbox**, the Gear events its transitions propagated (`OutboxRecord`, a record of
///   sequence 0 beside the record of the event that caused it, in the same batch), which
///   the file backend keeps in the journal and PostgreSQL in `spin_gear_outbox`, written
///   in the same transaction;
/// - a **snapshot**: the host's document of a state and its sequence, which the journal
///   continues (opaque here);
/// - an **epoch**: the name of the Spin's current history (opaque here);
/// - a **suspension**: the host's document saying the Spin was suspended, while it is;
/// - under `storage.history` `{"days": D}` or `"all"`, its older **history** in segments
///   (`HistorySegment`), apart from the journal.
///
/// What a backend writes is not durable until `commit`; after a failure, `discardUncommitted`
/// takes the journal back to its last commit, `probe` tells when storage works again and
/// `reopen` resumes a Spin's journal there.
///
/// The host's `Journal` calls everything but the suspension methods from one thread at a
/// time, in order (its serial section), or before any Spin runs; the suspension methods
/// may be called from any thread.
package protocol SpinStore: AnyObject, Sendable {
    /// Where the store is, for messages ("storage directory /var/lib/spin").
    var location: String { get }

    /// Whether `append` and `commit(sync: false)` are local writes (into the page cache)
    /// quick enough for a network thread to make at the end of its turn. A store across
    /// the network (PostgreSQL) answers false: its writes run on the journal's queue, so
    /// a round trip never holds a network thread's other connections.
    var writesLocally: Bool { get }

    /// Where `spin`'s journal is, for messages and for an operator who has to look at it
    /// (a file's path; a table and the rows of that Spin).
    func journalName(of spin: String) -> String

    // MARK: Opening and recovery

    /// Takes the store for this server alone (a second server fails here, saying why).
    /// Returns whether the previous server stopped cleanly (`markClean`).
    func open() throws -> Bool

    /// What is stored of `spin`, changing nothing: its snapshot, the records of whole
    /// batches after it, its epoch, and where the journal is damaged. Corruption (a bad
    /// record with data after it) throws `JournalCorruption` unless `repair` allows
    /// cutting it.
    func read(spin: String, repair: Bool) throws -> StoredSpin

    /// Readies `spin`'s journal for appending after what `read` found: cuts it (durably)
    /// at `damage`, the torn tail or the repaired corruption `read` reported.
    func startJournal(spin: String, cuttingAt damage: JournalRecord.Damage?) throws

    /// Stores `spin`'s epoch (durably).
    func writeEpoch(_ epoch: String, spin: String) throws

    /// The store is in use from now on: a crash before `markClean` is an unclean stop.
    func markInUse() throws

    // MARK: Writing

    /// Appends whole batches of records to `spin`'s journal (outbox records among them:
    /// `OutboxRecord.journalRecord`); not durable yet.
    func append(_ batch: [JournalRecord.Record], spin: String) throws

    /// Everything appended to `spin`'s journal counts as durable from now on (what a
    /// failure later goes back to). `sync`: first wait until it is on stable storage;
    /// without, it counts once handed to the operating system (`fsync: none`).
    func commit(spin: String, sync: Bool) throws

    /// Replaces `spin`'s snapshot with `snapshot` and its journal with `records` (the
    /// ones after the snapshot, and the outbox records still to be kept), so that a crash
    /// at any point leaves a snapshot and a journal that fit. On failure the journal keeps
    /// what was durable. (A store that keeps the outbox apart keeps it as it is.)
    func compact(spin: String, snapshot: [UInt8], records: [JournalRecord.Record]) throws

    // MARK: Failures

    /// After a failed append or commit: drops what `spin`'s journal holds beyond its last
    /// commit, as far as the storage still lets it.
    func discardUncommitted(spin: String)

    /// Does the storage take writes now? Throws what keeps it from doing so.
    func probe() throws

    /// Readies `spin`'s journal for appending again after a failure, at its last commit.
    /// Returns the last Gear outbox position the storage holds of `spin` when a commit
    /// whose outcome was not known may have put some there (a shared database: its rows
    /// were seen; those positions are not given again); nil when nothing uncommitted was
    /// ever seen (files).
    @discardableResult
    func reopen(spin: String) throws -> UInt64?

    // MARK: Closing

    /// The server stops cleanly: every journal was committed.
    func markClean() throws

    /// Releases the store (for another server) and what it holds open. Idempotent.
    func close()

    /// The host no longer journals `spin` here (it sleeps, or another node serves it):
    /// whatever the store holds open for it is closed. `read` and `startJournal` open it
    /// again.
    func release(spin: String)

    // MARK: Spins made at run time

    /// The Spins made at run time that exist (`make`, not `delete`d) and do not rest
    /// (`MadeSpin.resting`), with every one of `kinds` resting or not, by name: what a
    /// start hosts. Called once, after `open`: it finishes a deletion a crash interrupted
    /// (removes what is left of a deleted Spin). Throws when the catalog is corrupt (unless
    /// `repair`). The others are found by name when something asks for them
    /// (`madeSpin(named:)`).
    func madeSpins(repair: Bool, including kinds: Set<String>) throws -> [String: MadeSpin]

    /// The Spin made at run time of that name, resting or not; nil when none exists.
    /// From any thread.
    func madeSpin(named name: String) throws -> MadeSpin?

    /// How many Spins made at run time exist, by kind. From any thread.
    func madeSpinCounts() throws -> [String: Int]

    /// Up to `limit` Spins made at run time in name order (UTF-8 byte order), whose names
    /// start with `prefix`, after `after` when given: each one's name, kind and the
    /// sequence it rests at. From any thread.
    func madeSpins(prefix: String, after: String?, limit: Int) throws -> [(name: String, kind: String, sequence: UInt64)]

    /// Records that each Spin exists, of its `spin.kind`, with `epoch` and no history yet:
    /// all durable on return, or none (a crash after it keeps them, at sequence 0). One
    /// call for many makes them share one sync.
    func make(_ spins: [(name: String, spin: MadeSpin, epoch: String)]) throws

    /// Spin `spin` sleeps with nothing of its own left to deliver: the next start hosts it
    /// asleep at `sequence`, its receiver waiting after `consumed`, without reading its
    /// journal (`MadeSpin.resting`) — until `startJournal` readies its journal again.
    /// Durable on return. A store that reads every Spin at start-up ignores it.
    func rest(_ spin: String, sequence: UInt64, consumed: [String: UInt64]) throws

    /// Removes Spin `name` and everything stored of it (journal, snapshot, epoch,
    /// suspension): durable on return. A crash in the middle leaves it either whole or
    /// gone (what is left of it is removed by the next `madeSpins`). Its journal must not
    /// be written after this.
    func delete(_ name: String) throws

    // MARK: Definitions

    /// Every version stored of the definition `name` (a machine file's bytes, as a kind or
    /// a configured Spin ran it), by version: what lets a Spin recorded under an older
    /// version replay its events through the definition they were applied with. From any
    /// thread, after `open`.
    func definitions(named name: String) throws -> [Int: [UInt8]]

    /// Stores `source` as version `version` of the definition `name`, replacing what that
    /// version held: durable on return.
    func storeDefinition(_ source: [UInt8], named name: String, version: Int) throws

    // MARK: History

    /// Keeps `segments` of `spin`'s history (`HistorySegment`), each replacing a stored one
    /// that ends at the same sequence: durable on return. From any thread.
    func archive(_ segments: [HistorySegment], spin: String) throws

    /// Up to `limit` of `spin`'s stored segments that end at or after `sequence`, in order.
    /// From any thread.
    func history(of spin: String, from sequence: UInt64, limit: Int) throws -> [HistorySegment]

    /// The sequences from the first event of `spin`'s oldest stored segment to the last
    /// event of its newest; nil when none is stored. From any thread.
    func archived(spin: String) throws -> ClosedRange<UInt64>?

    /// Removes the segments of every Spin whose last event was applied before `time`
    /// (milliseconds since 1970), and returns how many (`{"days": D}`). From any thread.
    func trimHistory(before time: Int64) throws -> Int

    // MARK: Suspensions

    /// The suspension document stored for `spin`, or nil when it is not suspended.
    func suspension(of spin: String) throws -> [UInt8]?
    /// Stores `document` as `spin`'s suspension (durably).
    func storeSuspension(_ document: [UInt8], of spin: String) throws
    /// Removes `spin`'s suspension, if any.
    func removeSuspension(of spin: String)
}

/// A Spin made at run time, as a store keeps it: its kind, and where it joined each
/// sender's Gear outbox (the positions it never takes events at or before, so that a
/// Spin made today is not handed what its Gears carried before it existed).
package struct MadeSpin: Sendable, Equatable {
    package var kind: String
    package var joined: [String: UInt64]
    /// Where its Gear outbox positions start: above every position an earlier Spin of the
    /// same name gave, so that the Spins that consumed those drop none of this one's as a
    /// duplicate. The microseconds since 1970 when it was made: a Spin never sends more
    /// than one Gear event per microsecond of its life.
    package var outboxBase: UInt64
    /// Set while the Spin rests: it went to sleep with nothing of its own left to deliver
    /// (or was made asleep), so a start hosts it asleep without reading its journal.
    package var resting: Resting?

    /// A resting Spin: the sequence it sleeps at, and what it consumed of each sender's
    /// Gear outbox (its receiver waits from there).
    package struct Resting: Sendable, Equatable {
        package var sequence: UInt64
        package var consumed: [String: UInt64]

        package init(sequence: UInt64, consumed: [String: UInt64]) {
            self.sequence = sequence
            self.consumed = consumed
        }
    }

    package init(kind: String, joined: [String: UInt64] = [:], outboxBase: UInt64 = 0, resting: Resting? = nil) {
        self.kind = kind
        self.joined = joined
        self.outboxBase = outboxBase
        self.resting = resting
    }

    /// The `outboxBase` of a Spin made now.
    package static func outboxBaseNow() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
    }
}

/// What a store holds of one Spin (`SpinStore.read`).
package struct StoredSpin: Sendable {
    /// The snapshot document, or nil before the first compaction.
    package var snapshot: [UInt8]?
    /// The journal's records of events, of whole batches, in order (no outbox record).
    package var records: [JournalRecord.Record]
    /// The outbox records the journal keeps, of whole batches, in the order written: the
    /// file backend's; a store that keeps the outbox apart (PostgreSQL) gives none.
    package var outbox: [OutboxRecord] = []
    /// The highest outbox position the store holds for the Spin (0: none), where its
    /// next Gear event's position follows (the snapshot may hold a higher one).
    package var lastOutboxPosition: UInt64 = 0
    /// The stored epoch, or nil when none was stored yet.
    package var epoch: String?
    /// Where the journal stops being readable (a torn tail, or corruption `repair` lets
    /// cut), or nil.
    package var damage: JournalRecord.Damage?

    package init(snapshot: [UInt8]?, records: [JournalRecord.Record], epoch: String?, damage: JournalRecord.Damage?,
                 outbox: [OutboxRecord] = [], lastOutboxPosition: UInt64? = nil) {
        self.snapshot = snapshot
        self.records = records
        self.epoch = epoch
        self.damage = damage
        self.outbox = outbox
        self.lastOutboxPosition = lastOutboxPosition ?? outbox.map(\.position).max() ?? 0
    }

    /// What a journal's decoded records hold: the event records and the outbox records
    /// apart (`OutboxRecord.journalSequence`). Throws `UnreadableOutboxRecord` for an
    /// outbox record this server cannot read.
    package static func separating(_ decoded: [JournalRecord.Record], journal: String)
        throws -> (records: [JournalRecord.Record], outbox: [OutboxRecord]) {
        guard decoded.contains(where: { $0.sequence == OutboxRecord.journalSequence }) else { return (decoded, []) }
        var records: [JournalRecord.Record] = []
        var outbox: [OutboxRecord] = []
        records.reserveCapacity(decoded.count)
        for record in decoded {
            guard record.sequence == OutboxRecord.journalSequence else {
                records.append(record)
                continue
            }
            guard let entry = OutboxRecord(journalPayload: record.payload) else { throw UnreadableOutboxRecord(journal: journal) }
            outbox.append(entry)
        }
        return (records, outbox)
    }
}

/// A Spin's journal is damaged in the middle, not at its end: acknowledged events may
/// follow the damage, so it is not cut without being asked (`--repair`).
package struct JournalCorruption: Error, CustomStringConvertible {
    package let spin: String
    /// The journal, as its store names it (a file's path).
    package let journal: String
    package let damage: JournalRecord.Damage
    /// The sequence of the last whole batch's last record before the damage; nil when
    /// none precedes it.
    package let intactThrough: UInt64?

    package init(spin: String, journal: String, damage: JournalRecord.Damage, intactThrough: UInt64? = nil) {
        self.spin = spin
        self.journal = journal
        self.damage = damage
        self.intactThrough = intactThrough
    }

    package var description: String {
        """
        \(journal) is corrupt: \(damage). Nothing was changed on disk. Restore the file \
        from a backup, or start with --repair (storage.onCorruption: "truncate") to cut the journal at \
        byte \(damage.offset), losing every event recorded after it
        """
    }
}
