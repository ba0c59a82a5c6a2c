/// What became of a batch given to `SpinLoop.emit(contentsOf:limit:onResult:)`: which of
/// its events the reducer applied and which it declined, and where the loop stands after
/// it. Every event gets exactly one reply, in order (`reply(at:)`, `replies`).
///
/// Built without a per-event allocation: only the declined offsets are listed, and that
/// list is empty (no storage) whenever every event applies.
public struct BatchResult<State: Sendable, Event: Sendable>: Sendable {
    /// The number of events in the batch.
    public let count: Int
    /// The offsets (ascending) of the events the reducer declined.
    public let declined: [Int]
    /// The transition of the last event the batch applied (it carries `endsBatch`), nil
    /// when the reducer declined every event.
    public let lastApplied: Transition<State, Event>?
    /// The loop's sequence right after the batch (unchanged when nothing applied).
    public let sequence: UInt64
    /// The loop's state right after the batch.
    public let state: State
    /// Harvest-style replies with the states before and after each event, when they were
    /// asked for (`emit(contentsOf:limit:detailedReplies:onResult:)`); nil otherwise.
    public let detailed: [EventReply<State, Event>]?

    package init(count: Int, declined: [Int], lastApplied: Transition<State, Event>?, sequence: UInt64,
                 state: State, detailed: [EventReply<State, Event>]? = nil) {
        self.count = count
        self.declined = declined
        self.lastApplied = lastApplied
        self.sequence = sequence
        self.state = state
        self.detailed = detailed
    }

    /// How many events of the batch were applied.
    public var appliedCount: Int { count - declined.count }

    /// The reply to the event at `offset` in the batch.
    public func reply(at offset: Int) -> Reply {
        precondition(offset >= 0 && offset < count, "offset \(offset) is outside a batch of \(count)")
        return declined.contains(offset) ? .ignored(.noTransition) : .applied
    }

    /// One reply per event, in the batch's order.
    public var replies: [Reply] {
        var replies = [Reply](repeating: .applied, count: count)
        for offset in declined { replies[offset] = .ignored(.noTransition) }
        return replies
    }

    /// The answer to one event.
    public enum Reply: Sendable, Hashable {
        /// The reducer made a new state of it (one sequence number).
        case applied
        /// Nothing changed: the event was skipped, for the reason given.
        case ignored(IgnoredReason)
    }

    /// Why an event was ignored.
    public enum IgnoredReason: String, Sendable, Hashable {
        /// The reducer has no transition for the event from the state it met.
        case noTransition = "no_transition"
    }
}

/// One event's reply with its states, as Harvest replies: for an applied event the state
/// it left and its transition, for an ignored one the state that declined it.
public enum EventReply<State: Sendable, Event: Sendable>: Sendable {
    /// Applied: the state it left, and its transition (event, new state, sequence).
    case applied(from: State, Transition<State, Event>)
    /// Declined by the reducer in `state`, which it left as it was.
    case ignored(Event, state: State)

    /// The event this reply answers.
    public var event: Event {
        switch self {
        case .applied(_, let transition): transition.event
        case .ignored(let event, _): event
        }
    }

    /// True for an applied event.
    public var isApplied: Bool {
        if case .applied = self { return true }
        return false
    }
}

extension BatchResult: Equatable where State: Equatable, Event: Equatable {}
extension EventReply: Equatable where State: Equatable, Event: Equatable {}
