import Dispatch
import Foundation
import Logging
import SpinStorage
import SpinJSON

// The history kept beside the journals under `storage.history` `{"days": D}` or `"all"`
// (see `Journal`, and `SpinHistory` for reading it).
//
// Every `storage.snapshotEvery` events, once they are durable, a Spin's journal writes
// them as a `HistorySegment`: the state before the first of them and their records,
// from the transitions it was given (`SpinJournal.unarchived`, kept until written), so
// nothing is read back from storage. Segments end at multiples of `snapshotEvery` (the
// first after a gap may start anywhere), on `historyQueue`, one Spin's in order, apart
// from the section and from the syncs that acknowledge events. A compaction never drops
// from the journal an event that no segment holds yet (`compactIfDue`): history is never
// lost to a crash between the two, and a segment a crash or a failure kept from being
// written is written again from the journal after the next start (recovery keeps every
// transition after the last segment stored).
extension Journal {
    /// How many events a history segment holds.
    var segmentEvents: UInt64 { UInt64(max(1, snapshotEvery)) }

    /// In the section, once `journal` is durable through `through`: writes the segments
    /// that are complete and not written yet, from `journal.unarchived`.
    func archiveIfDue(_ journal: SpinJournal, through: UInt64) {
        guard history.archives else { return }
        // What became durable waits to be written.
        let durable = journal.historyPending.prefix { $0.sequence <= through }.count
        if durable > 0 {
            journal.unarchived += journal.historyPending[..<durable]
            journal.historyPending.removeFirst(durable)
        }
        giveUpIfTooFarBehind(journal)
        guard !journal.archiving else { return }
        let every = segmentEvents
        let end = min(through, journal.unarchived.last?.sequence ?? 0) / every * every
        guard end > journal.archivedThrough else { return }
        if journal.archiveRetry > 0, DispatchTime.now().uptimeNanoseconds < journal.archiveRetry { return }
        let count = journal.unarchived.prefix { $0.sequence <= end }.count
        guard count > 0, journal.unarchived[0].sequence == journal.archivedThrough + 1,
              journal.unarchived[count - 1].sequence == end else { return }
        let chunk = Array(journal.unarchived[..<count])
        let start = journal.archivedThrough
        let base = start == 0 ? nil : journal.archiveBase
        journal.archiving = true
        let name = journal.name
        let version = journal.version
        let handle = UncheckedJournal(journal: journal)
        let days: Int? = if case .days(let days) = history { days } else { nil }
        historyQueue.async { [self] in
            let segments = Self.segments(of: chunk, after: start, base: base, version: version, every: every)
            let failure: (any Error)?
            do {
                try store.archive(segments, spin: name)
                failure = nil
            } catch {
                failure = error
            }
            if let days { trimIfDue(days: days) }
            runOnQueue { [self] in
                let journal = handle.journal
                journal.archiving = false
                if let failure {
                    journal.archiveRetry = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
                    logger.warning("history of \(name): events \(start + 1) to \(end) could not be kept (tried again in a second; the journal keeps them meanwhile): \(failure)")
                    return
                }
                journal.archiveRetry = 0
                // `unarchived` only grew at its end meanwhile (or was given up, see below).
                guard journal.archivedThrough == start, journal.unarchived.count >= count,
                      journal.unarchived[count - 1].sequence == end else { return }
                journal.archivedThrough = end
                journal.archiveBase = journal.unarchived[count - 1]
                journal.unarchived.removeFirst(count)
                // A compaction that waited for this segment may run now.
                if spins[name] === journal, journal.health == .healthy {
                    compactIfDue(journal)
                    archiveIfDue(journal, through: journal.unarchived.last?.sequence ?? end)
                }
            }
        }
    }

    /// Bounds the memory of a Spin whose segments cannot be written (a failing disk or
    /// database): beyond ten segments' worth (and `retain`) waiting, the oldest whole
    /// segments are given up, said in the log, and the journal may be compacted past them.
    private func giveUpIfTooFarBehind(_ journal: SpinJournal) {
        let every = Int(segmentEvents)
        guard journal.unarchived.count > 10 * every + retain, !journal.archiving else { return }
        let last = journal.unarchived[journal.unarchived.count - 1 - retain].sequence / segmentEvents * segmentEvents
        let drop = journal.unarchived.prefix { $0.sequence <= last }.count
        guard drop > 0 else { return }
        logger.error("history of \(journal.name): events \(journal.archivedThrough + 1) to \(last) are NOT kept: their segments could not be written; the history goes on from \(last + 1)")
        journal.archivedThrough = last
        journal.archiveBase = journal.unarchived[drop - 1]
        journal.unarchived.removeFirst(drop)
    }

    /// What the history of a Spin recovered to `recovered` starts from: where its stored
    /// segments end (`through`, read before the replay: `Journal.recover` keeps every
    /// transition after it), with the transitions after it waiting to be written. When
    /// the journal does not reach back there (the history was not kept before, or
    /// `fsync: none` lost events a segment held), from the recovered state.
    func beginHistory(of journal: SpinJournal, through: UInt64, recovered: Recovered) {
        guard history.archives else { return }
        var origin = HostedTransition(sequence: recovered.sequence, event: .null, state: recovered.state)
        origin.version = journal.version
        let transitions = recovered.history
        let after = Array(transitions.drop { $0.sequence <= through })
        let contiguous = after.isEmpty ? through == recovered.sequence : after[0].sequence == through + 1
        let base = through == recovered.sequence ? origin : transitions.first { $0.sequence == through }
        if through <= recovered.sequence, contiguous, through == 0 || base != nil {
            journal.archivedThrough = through
            journal.archiveBase = through == 0 ? nil : base
            journal.unarchived = after
            return
        }
        // From the oldest state the journal gave back.
        let first = transitions.first ?? origin
        logger.info("history of \(journal.name): kept from sequence \(first.sequence + 1) on (the events from \(through + 1) to \(first.sequence) are not in its journal any more)")
        journal.archivedThrough = first.sequence
        journal.archiveBase = first
        journal.unarchived = Array(transitions.dropFirst())
    }

    /// The segments of `transitions` (gapless, after `start`), cut at multiples of `every`.
    static func segments(of transitions: [HostedTransition], after start: UInt64, base: HostedTransition?,
                         version: Int32, every: UInt64) -> [HistorySegment] {
        var segments: [HistorySegment] = []
        var base = base
        var index = 0
        var first = start + 1
        while index < transitions.count {
            let last = min((first - 1) / every * every + every, transitions[transitions.count - 1].sequence)
            let count = Int(last - first + 1)
            let chunk = transitions[index..<(index + count)]
            var records: [UInt8] = []
            var framed = JournalPayload.records(chunk)
            // A segment is read whole: the client batch its last event belongs to may go
            // on in the next one, and its records must decode all the same.
            framed[framed.count - 1].endsBatch = true
            JournalRecord.append(framed, to: &records)
            segments.append(HistorySegment(first: first, last: last, lastTime: chunk.last?.time ?? 0,
                                           base: base.map { document(of: $0, version: version) }, records: records))
            base = chunk.last
            index += count
            first = last + 1
        }
        return segments
    }

    /// A segment's base as a snapshot document (`{"sequence":N,"state":..,"version"?:v}`),
    /// which `HostedSpin.replay` reads as it reads a journal's snapshot.
    private static func document(of transition: HostedTransition, version: Int32) -> [UInt8] {
        var members: [(String, JSONValue)] = [("sequence", .number(String(transition.sequence))), ("state", transition.state)]
        let recorded = transition.version > 0 ? transition.version : version
        if recorded != 1 { members.append(("version", .number(String(recorded)))) }
        return JSONValue.object(members).bytes
    }

    /// Under `{"days": D}`: removes the segments older than D days, at most once an hour
    /// (after recovery, and as segments are written). On `historyQueue`.
    func trimIfDue(days: Int) {
        let now = HostedTransition.now()
        guard now - lastTrim.load(ordering: .relaxed) >= 3_600_000 else { return }
        lastTrim.store(now, ordering: .relaxed)
        do {
            let removed = try store.trimHistory(before: now - Int64(days) * 86_400_000)
            if removed > 0 { logger.info("history: removed \(removed) segment(s) older than \(days) day(s)") }
        } catch {
            logger.warning("history: could not remove the segments older than \(days) day(s): \(error)")
        }
    }

    /// Where `spin`'s stored segments end (0: none stored); nil when no history is kept
    /// in segments. A failure to read it is logged and taken as 0: the segments are then
    /// written again from what the journal holds.
    func archivedThrough(of spin: String) -> UInt64? {
        guard history.archives else { return nil }
        do {
            return try store.archived(spin: spin)?.upperBound ?? 0
        } catch {
            logger.warning("history of \(spin): could not read where its kept history ends (written again from the journal): \(error)")
            return 0
        }
    }
}
