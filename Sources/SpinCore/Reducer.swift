/// The pure transition function of a Spin: `(State, Event) -> State`.
///
/// A reducer must not perform side effects: feedbacks are the only place for them.
/// The server relies on this to recover a Spin by replaying its journal through the
/// reducer without re-running any effect.
///
/// A **partial** reducer (`Reducer.partial { ... }`) may decline an event: it returns nil when
/// the event has no transition from the current state (a transition table without a
/// matching row). A loop skips a declined event entirely: no sequence, no transition, no
/// new state; its reply says "ignored" (`SpinLoop.emit(contentsOf:limit:onResult:)`).
public struct Reducer<State: Sendable, Event: Sendable>: Sendable {
    /// Computes the next state from the current state and an event. For a partial
    /// reducer, a declined event gives the current state back unchanged.
    public let reduce: @Sendable (State, Event) -> State
    /// The partial form, nil for a reducer that applies every event (so a plain reducer
    /// costs the loop no extra call).
    package let partial: (@Sendable (State, Event) -> State?)?
    /// The partial form as an in-place step, what the loop calls per event: true when
    /// the event applied (and `state` is the new state), false when it was declined
    /// (and `state` is untouched). It returns no optional state, so a loop that is not
    /// specialised for `State` looks up no `Optional<State>` type per event.
    @usableFromInline let step: (@Sendable (inout State, Event) -> Bool)?

    public init(_ reduce: @escaping @Sendable (State, Event) -> State) {
        self.reduce = reduce
        self.partial = nil
        self.step = nil
    }

    /// A reducer written as an in-place mutation, handy for struct states.
    public init(mutating reduce: @escaping @Sendable (inout State, Event) -> Void) {
        self.init({ state, event in
            var next = state
            reduce(&next, event)
            return next
        })
    }

    private init(declining partial: @escaping @Sendable (State, Event) -> State?) {
        self.reduce = { state, event in partial(state, event) ?? state }
        self.partial = partial
        self.step = { state, event in
            guard let next = partial(state, event) else { return false }
            state = next
            return true
        }
    }

    /// A partial reducer given as its in-place step (see `step`): `step` must leave the
    /// state untouched when it returns false. Made where the state's type is known (a
    /// transition table's inlinable reducer, the machine interpreter), the step and the
    /// forms derived from it are specialised there.
    @inlinable
    package init(decliningInPlace step: @escaping @Sendable (inout State, Event) -> Bool) {
        self.init(reduce: { state, event in
            var next = state
            _ = step(&next, event)
            return next
        }, partial: { state, event in
            var next = state
            return step(&next, event) ? next : nil
        }, step: step)
    }

    @usableFromInline
    init(reduce: @escaping @Sendable (State, Event) -> State, partial: @escaping @Sendable (State, Event) -> State?,
         step: @escaping @Sendable (inout State, Event) -> Bool) {
        self.reduce = reduce
        self.partial = partial
        self.step = step
    }

    /// A reducer that may decline an event: nil means "no transition from this state",
    /// and the loop ignores the event (it is neither counted nor journaled).
    ///
    /// A static function rather than an `init`: `Reducer { ... }` with a trailing closure
    /// stays the plain reducer, unambiguously.
    public static func partial(_ reduce: @escaping @Sendable (State, Event) -> State?) -> Reducer {
        Reducer(declining: reduce)
    }

    /// Whether the reducer may decline events.
    public var isPartial: Bool { partial != nil }

    /// The next state, or nil when the reducer declines the event.
    public func apply(_ event: Event, to state: State) -> State? {
        if let partial { return partial(state, event) }
        return reduce(state, event)
    }

    /// Folds a sequence of events into a state, as a recovery replays a journal. A journal
    /// only holds applied events; one the reducer declines leaves the state as it is.
    public func replay<Events: Sequence>(_ events: Events, from state: State) -> State
    where Events.Element == Event {
        events.reduce(state, reduce)
    }
}
