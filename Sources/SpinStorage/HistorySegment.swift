/// A stretch of one Spin's history kept beside its journal when `storage.history` keeps
/// more than the journal does (`{"days": D}`, `"all"`): the state before its first event
/// and the journal records of its events, enough to replay any state in it without
/// anything else. A store keeps a Spin's segments by the sequence they end at.
///
/// The journal writes one segment per `storage.snapshotEvery` events, once they are
/// durable, so that any state of the history is one stored state plus at most that many
/// replayed events.
package struct HistorySegment: Sendable, Equatable {
    /// The sequence of its first event.
    package var first: UInt64
    /// The sequence of its last event.
    package var last: UInt64
    /// When its last event was applied, in milliseconds since 1970 (0: not known): what
    /// `{"days": D}` removes segments by.
    package var lastTime: Int64
    /// The host's snapshot document of the state at `first - 1` (as a journal's snapshot);
    /// nil when the history starts at sequence 0, in the Spin's initial state.
    package var base: [UInt8]?
    /// The records of events `first...last`, in `JournalRecord` framing.
    package var records: [UInt8]

    package init(first: UInt64, last: UInt64, lastTime: Int64, base: [UInt8]?, records: [UInt8]) {
        self.first = first
        self.last = last
        self.lastTime = lastTime
        self.base = base
        self.records = records
    }
}
