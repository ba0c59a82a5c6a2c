/// The pure transition function of a Spin: `(State, Event) -> State`.
///
/// A reducer must not perform side effects: feedbacks are the only place for them.
/// The server relies on this to recover a Spin by replaying its journal through the
/// reducer without re-running any effect.
public struct Reducer<State: Sendable, Event: Sendable>: Sendable {
    /// Computes the next state from the current state and an event.
    public let reduce: @Sendable (State, Event) -> State

    public init(_ reduce: @escaping @Sendable (State, Event) -> State) {
        self.reduce = reduce
    }

    /// A reducer written as an in-place mutation, handy for struct states.
    public init(mutating reduce: @escaping @Sendable (inout State, Event) -> Void) {
        self.reduce = { state, event in
            var next = state
            reduce(&next, event)
            return next
        }
    }

    /// Folds a sequence of events into a state, as a recovery replays a journal.
    public func replay<Events: Sequence>(_ events: Events, from state: State) -> State
    where Events.Element == Event {
        events.reduce(state, reduce)
    }
}
