/// Dependency injection by partial application (Spin.Swift's `effect:dep1:dep2:`): the
/// effect takes its dependencies first and the state last.
extension Feedback {
    /// A synchronous effect with one dependency.
    public init<Dep1: Sendable>(
        effect: @escaping @Sendable (Dep1, State) -> Event?,
        dep1: Dep1,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) -> Event? in effect(dep1, state) }, filteredBy: filter, applying: strategy)
    }

    /// A synchronous effect with two dependencies.
    public init<Dep1: Sendable, Dep2: Sendable>(
        effect: @escaping @Sendable (Dep1, Dep2, State) -> Event?,
        dep1: Dep1, dep2: Dep2,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) -> Event? in effect(dep1, dep2, state) }, filteredBy: filter, applying: strategy)
    }

    /// One async step per state with one dependency.
    public init<Dep1: Sendable>(
        effect: @escaping @Sendable (Dep1, State) async -> Event?,
        dep1: Dep1,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) async -> Event? in await effect(dep1, state) }, filteredBy: filter, applying: strategy)
    }

    /// One async step per state with two dependencies.
    public init<Dep1: Sendable, Dep2: Sendable>(
        effect: @escaping @Sendable (Dep1, Dep2, State) async -> Event?,
        dep1: Dep1, dep2: Dep2,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) async -> Event? in await effect(dep1, dep2, state) }, filteredBy: filter, applying: strategy)
    }

    /// A stream of events per state with one dependency.
    public init<Dep1: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (Dep1, State) -> Events,
        dep1: Dep1,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: { (state: State) -> Events in effect(dep1, state) }, filteredBy: filter, applying: strategy)
    }

    /// A stream of events per state with two dependencies.
    public init<Dep1: Sendable, Dep2: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (Dep1, Dep2, State) -> Events,
        dep1: Dep1, dep2: Dep2,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: { (state: State) -> Events in effect(dep1, dep2, state) }, filteredBy: filter, applying: strategy)
    }
}

/// The dependency forms on a part of the state: `lensingOn:` picks it (a closure, or a
/// key path literal such as `\.left`), and the effect gets its dependencies, then that
/// part. `filteredBy:` sees the part too.
extension Feedback {
    /// A synchronous effect with one dependency, on a part of the state.
    public init<Dep1: Sendable, SubState: Sendable>(
        effect: @escaping @Sendable (Dep1, SubState) -> Event?,
        dep1: Dep1,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (part: SubState) -> Event? in effect(dep1, part) },
                  lensingOn: lens, filteredBy: filter, applying: strategy)
    }

    /// A synchronous effect with two dependencies, on a part of the state.
    public init<Dep1: Sendable, Dep2: Sendable, SubState: Sendable>(
        effect: @escaping @Sendable (Dep1, Dep2, SubState) -> Event?,
        dep1: Dep1, dep2: Dep2,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (part: SubState) -> Event? in effect(dep1, dep2, part) },
                  lensingOn: lens, filteredBy: filter, applying: strategy)
    }

    /// One async step with one dependency, on a part of the state.
    public init<Dep1: Sendable, SubState: Sendable>(
        effect: @escaping @Sendable (Dep1, SubState) async -> Event?,
        dep1: Dep1,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (part: SubState) async -> Event? in await effect(dep1, part) },
                  lensingOn: lens, filteredBy: filter, applying: strategy)
    }

    /// One async step with two dependencies, on a part of the state.
    public init<Dep1: Sendable, Dep2: Sendable, SubState: Sendable>(
        effect: @escaping @Sendable (Dep1, Dep2, SubState) async -> Event?,
        dep1: Dep1, dep2: Dep2,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (part: SubState) async -> Event? in await effect(dep1, dep2, part) },
                  lensingOn: lens, filteredBy: filter, applying: strategy)
    }

    /// A stream of events with one dependency, on a part of the state.
    public init<Dep1: Sendable, SubState: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (Dep1, SubState) -> Events,
        dep1: Dep1,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: { (part: SubState) -> Events in effect(dep1, part) },
                  lensingOn: lens, filteredBy: filter, applying: strategy)
    }

    /// A stream of events with two dependencies, on a part of the state.
    public init<Dep1: Sendable, Dep2: Sendable, SubState: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (Dep1, Dep2, SubState) -> Events,
        dep1: Dep1, dep2: Dep2,
        lensingOn lens: @escaping @Sendable (State) -> SubState,
        filteredBy filter: (@Sendable (SubState) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: { (part: SubState) -> Events in effect(dep1, dep2, part) },
                  lensingOn: lens, filteredBy: filter, applying: strategy)
    }
}
