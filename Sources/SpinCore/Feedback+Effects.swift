/// The effect forms of a feedback (DESIGN.md §2). Each state-driven form takes
/// `filteredBy:` (states it rejects are skipped; under `.cancelOnNewState` they cancel the
/// running effect, as any newer state does), `lensingOn:` (the
/// effect sees a part of the state) and `applying:` an `ExecutionStrategy`.
extension Feedback {
    // MARK: (State) -> Event?

    /// A synchronous effect: at most one event per state.
    public init(
        effect: @escaping @Sendable (State) -> Event?,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(body: .sync(effect), filter: filter, strategy: strategy)
    }

    /// A synchronous effect on a part of the state.
    public init<SubState: Sendable>(
        effect: @escaping @Sendable (SubState) -> Event?,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(body: .sync { @Sendable (state: State) -> Event? in effect(state[keyPath: keyPath]) },
                  filter: filter.map { filter in { @Sendable (state: State) -> Bool in filter(state[keyPath: keyPath]) } },
                  strategy: strategy)
    }

    // MARK: (State) async -> Event?

    /// One async step per state; with `cancelOnNewState` a newer state cancels the
    /// running step and its result is dropped.
    public init(
        effect: @escaping @Sendable (State) async -> Event?,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(body: .async { state, emit in
            if let event = await effect(state) { emit(event) }
        }, filter: filter, strategy: strategy)
    }

    /// One async step per state, on a part of the state.
    public init<SubState: Sendable>(
        effect: @escaping @Sendable (SubState) async -> Event?,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) async -> Event? in await effect(state[keyPath: keyPath]) },
                  filteredBy: filter.map { filter in { @Sendable (state: State) -> Bool in filter(state[keyPath: keyPath]) } },
                  applying: strategy)
    }

    // MARK: (State) -> some AsyncSequence<Event>

    /// A stream of events per state. The sequence is made and iterated inside the
    /// effect's task; an error thrown by it ends that stream (it is not an event). With
    /// `cancelOnNewState` the state made by the first applied event cancels the rest of
    /// the stream; use `continueOnNewState` when every element must be applied.
    public init<Events: AsyncSequence>(
        effect: @escaping @Sendable (State) -> Events,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(body: .async { state, emit in
            do {
                for try await event in effect(state) {
                    if Task.isCancelled { break }
                    emit(event)
                }
            } catch {
                // The effect's stream failed: it produces nothing more for this state.
            }
        }, filter: filter, strategy: strategy)
    }

    /// A stream of events per state, on a part of the state.
    public init<SubState: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (SubState) -> Events,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: { (state: State) -> Events in effect(state[keyPath: keyPath]) },
                  filteredBy: filter.map { filter in { @Sendable (state: State) -> Bool in filter(state[keyPath: keyPath]) } },
                  applying: strategy)
    }

    // MARK: (AsyncStream<State>) -> some AsyncSequence<Event>

    /// The raw form: the effect receives the stream of every state (the initial one
    /// first) and returns the stream of its events. It lives as long as the loop.
    public init<Events: AsyncSequence>(
        effect: @escaping @Sendable (AsyncStream<State>) -> Events
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init { context in
            StateStreamRunner(effect: { states, emit in
                do {
                    for try await event in effect(states) { emit(event) }
                } catch {
                    // The effect's stream failed: the feedback produces nothing more.
                }
            }, context: context)
        }
    }

    // MARK: -

    init(body: StateEffectRunner<State, Event>.Body,
         filter: (@Sendable (State) -> Bool)?,
         strategy: ExecutionStrategy) {
        self.init { context in
            StateEffectRunner(body: body, filter: filter, strategy: strategy, context: context)
        }
    }
}
