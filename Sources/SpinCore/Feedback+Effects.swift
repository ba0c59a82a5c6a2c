/// The effect forms of a feedback (SpinCore.docc, Feedbacks). Each state-driven form takes
/// `filteredBy:` (states it rejects are skipped; under `.cancelOnNewState` they cancel the
/// running effect, as any newer state does), `lensingOn:` (the effect sees a part of the
/// state, picked by a key path or a closure) and `applying:` an `ExecutionStrategy`.
extension Feedback {
    // MARK: (State) -> Event?

    /// A synchronous effect: at most one event per state. It is never cancelled: every
    /// event it returns is applied.
    public init(
        effect: @escaping @Sendable (State) -> Event?,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(body: .sync(effect), filter: filter, strategy: strategy)
    }

    /// A synchronous effect on the part of the state `lens` picks.
    public init<SubState: Sendable>(
        effect: @escaping @Sendable (SubState) -> Event?,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) -> Event? in effect(lens(state)) },
                  filteredBy: Self.lensed(filter, lens), applying: strategy)
    }

    /// A synchronous effect on a part of the state.
    public init<SubState: Sendable>(
        effect: @escaping @Sendable (SubState) -> Event?,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: effect, lensingOn: { $0[keyPath: keyPath] }, filteredBy: filter, applying: strategy)
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

    /// One async step per state, on the part of the state `lens` picks.
    public init<SubState: Sendable>(
        effect: @escaping @Sendable (SubState) async -> Event?,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) async -> Event? in await effect(lens(state)) },
                  filteredBy: Self.lensed(filter, lens), applying: strategy)
    }

    /// One async step per state, on a part of the state.
    public init<SubState: Sendable>(
        effect: @escaping @Sendable (SubState) async -> Event?,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: effect, lensingOn: { $0[keyPath: keyPath] }, filteredBy: filter, applying: strategy)
    }

    // MARK: (State) -> some AsyncSequence<Event>

    /// A stream of events per state. The sequence is made and iterated inside the
    /// effect's task; an error thrown by it ends that stream (it is not an event). With
    /// `cancelOnNewState` a newer state reaching the feedback cancels the stream: the
    /// elements it handed over before are applied, none after. Use `continueOnNewState`
    /// when every element must be applied.
    public init<Events: AsyncSequence>(
        effect: @escaping @Sendable (State) -> Events,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(body: .async { state, emit in
            await forward(effect(state), to: emit)
        }, filter: filter, strategy: strategy)
    }

    /// A stream of events per state, on the part of the state `lens` picks.
    public init<SubState: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (SubState) -> Events,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: { (state: State) -> Events in effect(lens(state)) },
                  filteredBy: Self.lensed(filter, lens), applying: strategy)
    }

    /// A stream of events per state, on a part of the state.
    public init<SubState: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (SubState) -> Events,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: effect, lensingOn: { $0[keyPath: keyPath] }, filteredBy: filter, applying: strategy)
    }

    // MARK: (AsyncStream<State>) -> some AsyncSequence<Event>

    /// The raw form: the effect receives the stream of every state (the initial one
    /// first; only those `filter` accepts, when given) and returns the stream of its
    /// events. It lives as long as the loop, so there is no strategy: what to cancel is
    /// the effect's own business.
    public init<Events: AsyncSequence>(
        effect: @escaping @Sendable (AsyncStream<State>) -> Events,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(rawEffect: effect, select: { state in (filter?(state) ?? true) ? state : nil })
    }

    /// The raw form on the part of the state `lens` picks: the stream gets that part of
    /// every state (of those whose part `filter` accepts, when given).
    public init<SubState: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (AsyncStream<SubState>) -> Events,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(rawEffect: effect, select: { state in
            let part = lens(state)
            return (filter?(part) ?? true) ? part : nil
        })
    }

    /// The raw form on a part of the state.
    public init<SubState: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (AsyncStream<SubState>) -> Events,
        lensingOn keyPath: KeyPath<State, SubState> & Sendable,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: effect, lensingOn: { $0[keyPath: keyPath] }, filteredBy: filter)
    }

    // MARK: -

    init(body: StateEffectRunner<State, Event>.Body,
         filter: (@Sendable (State) -> Bool)?,
         strategy: ExecutionStrategy) {
        self.init { context in
            StateEffectRunner(body: body, filter: filter, strategy: strategy, context: context)
        }
    }

    /// The raw form on whatever `select` makes of each state (nil: the state is skipped).
    private init<Element: Sendable, Events: AsyncSequence>(
        rawEffect effect: @escaping @Sendable (AsyncStream<Element>) -> Events,
        select: @escaping @Sendable (State) -> Element?
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init { context in
            StateStreamRunner(effect: { states, emit in await forward(effect(states), to: emit) },
                              select: select, context: context)
        }
    }

    /// `filter` on the part of the state `lens` picks, as a filter on the whole state.
    static func lensed<SubState>(
        _ filter: (@Sendable (SubState) -> Bool)?, _ lens: @escaping @Sendable (State) -> SubState
    ) -> (@Sendable (State) -> Bool)? {
        filter.map { filter in { @Sendable (state: State) -> Bool in filter(lens(state)) } }
    }
}

/// Hands every element of `events` to `emit` until the sequence ends or the task is
/// cancelled. A sequence that throws ends there: its error is not an event.
@usableFromInline
func forward<Events: AsyncSequence>(_ events: Events, to emit: (Events.Element) -> Void) async {
    do {
        for try await event in events {
            if Task.isCancelled { break }
            emit(event)
        }
    } catch {
        // The effect's stream failed: it produces nothing more.
    }
}
