import OpenCombine
import SpinCore

/// The Combine effect forms of a feedback, as Spin.Swift's Combine users write them:
/// `Feedback(effect: leftEffect)` with `leftEffect: (Levels) -> AnyPublisher<Event, Never>`
/// (any publisher that never fails will do). They take the options of SpinCore's async
/// forms and behave as them, because they are them: each publisher becomes the stream
/// of events of a stream-form effect (`filteredBy:`, `lensingOn:`, `applying:` an
/// `ExecutionStrategy`, `.execute(on:)`).
///
/// - The publisher is made and subscribed when its state reaches the feedback (on the
///   queue given with `.execute(on:)`, if any); its values are the feedback's events.
/// - `.cancelOnNewState` (the default, Spin.Swift's switch-to-latest): a newer state
///   cancels the subscription; what the publisher sent before is applied, nothing after.
/// - `.continueOnNewState`: every publisher runs to its completion (merge).
/// - `stop()` cancels every subscription.
extension Feedback {
    // MARK: (State) -> some Publisher<Event, Never>

    /// A publisher of events per state.
    public init<Events: Publisher>(
        effect: @escaping @Sendable (State) -> Events,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Output == Event, Events.Failure == Never {
        self.init(effect: { (state: State) -> AsyncStream<Event> in effect(state).spinEvents() },
                  filteredBy: filter, applying: strategy)
    }

    /// A publisher of events per state, on the part of the state `lens` picks.
    public init<SubState: Sendable, Events: Publisher>(
        effect: @escaping @Sendable (SubState) -> Events,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Output == Event, Events.Failure == Never {
        self.init(effect: { (part: SubState) -> AsyncStream<Event> in effect(part).spinEvents() },
                  lensingOn: lens, filteredBy: filter, applying: strategy)
    }

    /// A publisher of events per state, on a part of the state.
    public init<SubState: Sendable, Events: Publisher>(
        effect: @escaping @Sendable (SubState) -> Events,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Output == Event, Events.Failure == Never {
        self.init(effect: effect, lensingOn: { $0[keyPath: keyPath] }, filteredBy: filter, applying: strategy)
    }

    // MARK: Dependencies

    /// A publisher of events per state with one dependency (Spin.Swift's `effect:dep1:`).
    public init<Dep1: Sendable, Events: Publisher>(
        effect: @escaping @Sendable (Dep1, State) -> Events,
        dep1: Dep1,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Output == Event, Events.Failure == Never {
        self.init(effect: { (state: State) -> Events in effect(dep1, state) }, filteredBy: filter, applying: strategy)
    }

    /// A publisher of events per state with two dependencies.
    public init<Dep1: Sendable, Dep2: Sendable, Events: Publisher>(
        effect: @escaping @Sendable (Dep1, Dep2, State) -> Events,
        dep1: Dep1, dep2: Dep2,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Output == Event, Events.Failure == Never {
        self.init(effect: { (state: State) -> Events in effect(dep1, dep2, state) }, filteredBy: filter,
                  applying: strategy)
    }

    // MARK: (AnyPublisher<State, Never>) -> some Publisher<Event, Never>

    /// The raw form: the effect gets the publisher of every state (the initial one first;
    /// only those `filter` accepts, when given) and returns the publisher of its events.
    /// It is subscribed when the loop starts and lives as long as the loop (`stop()`
    /// cancels the subscription), so there is no strategy: what to cancel is the effect's
    /// own business (`switchToLatest`, `flatMap`...).
    public init<Events: Publisher>(
        effect: @escaping @Sendable (AnyPublisher<State, Never>) -> Events,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil
    ) where Events.Output == Event, Events.Failure == Never {
        self.init(effect: { (states: AsyncStream<State>) -> AsyncStream<Event> in
            publisherDriven(by: effect, states: states)
        }, filteredBy: filter)
    }

    /// The raw form on the part of the state `lens` picks.
    public init<SubState: Sendable, Events: Publisher>(
        effect: @escaping @Sendable (AnyPublisher<SubState, Never>) -> Events,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil
    ) where Events.Output == Event, Events.Failure == Never {
        self.init(effect: { (parts: AsyncStream<SubState>) -> AsyncStream<Event> in
            publisherDriven(by: effect, states: parts)
        }, lensingOn: lens, filteredBy: filter)
    }

    /// The raw form on a part of the state.
    public init<SubState: Sendable, Events: Publisher>(
        effect: @escaping @Sendable (AnyPublisher<SubState, Never>) -> Events,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil
    ) where Events.Output == Event, Events.Failure == Never {
        self.init(effect: effect, lensingOn: { $0[keyPath: keyPath] }, filteredBy: filter)
    }
}
