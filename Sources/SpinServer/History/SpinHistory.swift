import Foundation
import SpinNet
import SpinStorage
import SpinJSON

/// Reads a Spin's history (`GET /v1/spins/{name}/history`, `GET /v1/spins/{name}?at=N`):
/// the newest part from the transitions its feed retains in memory, the older part, under
/// `storage.history` `{"days": D}` or `"all"`, from the segments the journal keeps
/// beside it (`Journal+History.swift`), each replayed from its stored state through the
/// Spin's pure reducer (`HostedSpin.replay`), under the version each event was applied
/// with. Never on the Spin's executor, and nothing of the Spin changes: the caller runs
/// it on `readers`, off the network threads and below their priority (a page of a
/// thousand entries from segments takes tens of milliseconds of CPU).
package struct SpinHistory: Sendable {
    /// Where reads run: two threads for the whole process, at `nice` 19, so that a client
    /// reading history in a loop slows the Spins' events by little (the event loops get
    /// the CPU when both want it; the reads get what is left).
    package static let readers = BackgroundWorkers(name: "spin-history", count: 2)

    /// Where the segments are; nil when none are kept (in memory, or `{"events": K}`).
    let store: (any SpinStore)?
    /// The events of a segment (`storage.snapshotEvery`).
    let segmentEvents: UInt64

    package init(store: (any SpinStore)?, segmentEvents: Int) {
        self.store = store
        self.segmentEvents = UInt64(max(1, segmentEvents))
    }

    /// Up to `limit` entries from `from` (nil: the oldest held), oldest first, and the
    /// `from` of the next page (nil: this page reaches the newest durable sequence).
    /// Throws 410 `history_not_retained` for a `from` older than what is held.
    package func page(of spin: any HostedSpin, feed: SpinFeed, from: UInt64?, limit: Int) throws(APIError)
        -> (entries: [HostedTransition], next: UInt64?) {
        let limit = max(1, limit)
        let newest = feed.retainedBounds.newest
        var start = newest &+ 1
        if let from {
            // Sequence 0 is no event: the history's first is 1.
            start = max(from, 1)
        } else if let first = try firstHeld(of: spin, feed: feed) {
            start = first
        }
        guard start <= newest else { return ([], nil) }
        let last = start + min(UInt64(limit) - 1, newest - start)
        // The newest part first, in one look at the feed: what it holds of the page.
        let retained = feed.retained(from: start, through: last)
        let held = retained.first?.sequence ?? last &+ 1
        var entries: [HostedTransition] = []
        if start < held {
            entries = try stored(of: spin, feed: feed, from: start, through: held - 1)
            // The segments stop short of what the feed holds while the one between is
            // being written (milliseconds): the page stops there, and the next one asks.
            if let end = entries.last?.sequence, end + 1 < held { return (entries, end + 1) }
        }
        entries += retained
        let end = entries.last?.sequence ?? last
        return (entries, end < newest ? end + 1 : nil)
    }

    /// The state right after sequence `sequence`. Throws 404 `sequence_not_found` for a
    /// sequence beyond the Spin's, 410 for one older than what is held.
    package func state(of spin: any HostedSpin, feed: SpinFeed, at sequence: UInt64) throws(APIError) -> JSONValue {
        try versionedState(of: spin, feed: feed, at: sequence).state
    }

    /// `state(of:feed:at:)` with the version of the Spin's definition that state is of.
    package func versionedState(of spin: any HostedSpin, feed: SpinFeed, at sequence: UInt64) throws(APIError)
        -> (state: JSONValue, version: Int) {
        let newest = feed.retainedBounds.newest
        guard sequence <= newest else { throw .sequenceNotFound(spin: spin.name, asked: sequence, newest: newest) }
        if let (state, version) = feed.state(at: sequence) { return (state, version.map(Int.init) ?? spin.definitionVersion) }
        // The segment that holds it, or the one that starts right after it (from its state).
        if let segment = try segments(of: spin, from: sequence, limit: 1).first, segment.first <= sequence &+ 1 {
            if let transition = try replay(segment, of: spin, keeping: sequence...sequence).first {
                return (transition.state, Int(transition.version))
            }
        }
        throw .historyNotRetained(spin: spin.name, asked: sequence, first: try firstHeld(of: spin, feed: feed))
    }

    /// The first sequence whose entry is held (nil: none).
    package func firstHeld(of spin: any HostedSpin, feed: SpinFeed) throws(APIError) -> UInt64? {
        let inMemory = feed.retainedBounds.oldest
        guard let store else { return inMemory }
        let archived: ClosedRange<UInt64>?
        do { archived = try store.archived(spin: spin.name) } catch { throw unreadable(spin, error) }
        switch (archived?.lowerBound, inMemory) {
        case (let stored?, let held?): return min(stored, held)
        case (let stored?, nil): return stored
        case (nil, let held): return held
        }
    }

    /// The entries `first...last` from the stored segments (gapless from `first`);
    /// throws 410 when they do not start at `first`.
    private func stored(of spin: any HostedSpin, feed: SpinFeed, from first: UInt64, through last: UInt64) throws(APIError)
        -> [HostedTransition] {
        var entries: [HostedTransition] = []
        var next = first
        let segments = try segments(of: spin, from: first, limit: Int((last - first) / segmentEvents) + 2)
        for segment in segments where next <= last {
            guard segment.first <= next else { break }
            let through = min(segment.last, last)
            entries += try replay(segment, of: spin, keeping: next...through)
            next = through + 1
        }
        guard next > first else {
            throw .historyNotRetained(spin: spin.name, asked: first, first: try firstHeld(of: spin, feed: feed))
        }
        return entries
    }

    private func segments(of spin: any HostedSpin, from sequence: UInt64, limit: Int) throws(APIError) -> [HistorySegment] {
        guard let store else { return [] }
        do { return try store.history(of: spin.name, from: sequence, limit: limit) } catch { throw unreadable(spin, error) }
    }

    private func replay(_ segment: HistorySegment, of spin: any HostedSpin, keeping range: ClosedRange<UInt64>) throws(APIError)
        -> [HostedTransition] {
        let decoded = JournalRecord.decode(segment.records)
        guard decoded.damage == nil else {
            throw .internal("the kept history of Spin \"\(spin.name)\" is damaged in its segment \(segment.first)-\(segment.last): \(decoded.damage!)")
        }
        do {
            return try spin.replay(snapshot: segment.base, records: decoded.records, keeping: range)
        } catch {
            throw .internal("the kept history of Spin \"\(spin.name)\" (events \(segment.first) to \(segment.last)) does not replay: \(error)")
        }
    }

    private func unreadable(_ spin: any HostedSpin, _ error: any Error) -> APIError {
        .storageUnavailable(spin: spin.name, "its kept history cannot be read: \(error)")
    }
}

/// The JSON of history entries (`GET /v1/spins/{name}/history`).
package enum HistoryEntries {
    /// `{"entries":[{"sequence","event","state"|"patch","sub"?,"at"}],"next":N|null}`: with
    /// `deltas`, an entry right after the one before it carries the RFC 6902 patch from
    /// that one's state instead of its own, when the patch is the smaller (as state
    /// streams do, `StatePatcher`); the first always carries its state.
    package static func page(_ entries: [HostedTransition], next: UInt64?, deltas: Bool) -> JSONValue {
        // Written as text at once (a page holds up to a thousand entries): no value tree.
        var text: [UInt8] = []
        text.reserveCapacity(64 + entries.count * 160)
        text += #"{"entries":["#.utf8
        var previous: HostedTransition?
        for (index, entry) in entries.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            text += #"{"sequence":"#.utf8
            text += String(entry.sequence).utf8
            text += #","event":"#.utf8
            entry.event.write(into: &text)
            if deltas, let previous, previous.sequence &+ 1 == entry.sequence,
               let patch = StatePatcher.patch(from: previous.state, to: entry.state) {
                text += #","patch":"#.utf8
                text += patch
            } else {
                text += #","state":"#.utf8
                entry.state.write(into: &text)
            }
            if let origin = entry.origin {
                text += #","sub":"#.utf8
                JSONValue.writeString(origin, into: &text)
            }
            text += #","at":"#.utf8
            if entry.time > 0 {
                JSONValue.writeString(LogFormatting.timestamp(milliseconds: entry.time), into: &text)
            } else {
                text += "null".utf8
            }
            text.append(UInt8(ascii: "}"))
            previous = entry
        }
        text += #"],"next":"#.utf8
        text += (next.map { String($0) } ?? "null").utf8
        text.append(UInt8(ascii: "}"))
        return .raw(text)
    }
}
