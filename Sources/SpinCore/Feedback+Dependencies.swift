/// Dependency injection by partial application (Spin.Swift's `effect:dep1:dep2:`): the
/// effect takes its dependencies first and the state last.
extension Feedback {
    public init<Dep1: Sendable>(
        effect: @escaping @Sendable (Dep1, State) -> Event?,
        dep1: Dep1,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) -> Event? in effect(dep1, state) }, filteredBy: filter, applying: strategy)
    }

    public init<Dep1: Sendable, Dep2: Sendable>(
        effect: @escaping @Sendable (Dep1, Dep2, State) -> Event?,
        dep1: Dep1, dep2: Dep2,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) -> Event? in effect(dep1, dep2, state) }, filteredBy: filter, applying: strategy)
    }

    public init<Dep1: Sendable>(
        effect: @escaping @Sendable (Dep1, State) async -> Event?,
        dep1: Dep1,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) async -> Event? in await effect(dep1, state) }, filteredBy: filter, applying: strategy)
    }

    public init<Dep1: Sendable, Dep2: Sendable>(
        effect: @escaping @Sendable (Dep1, Dep2, State) async -> Event?,
        dep1: Dep1, dep2: Dep2,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) {
        self.init(effect: { (state: State) async -> Event? in await effect(dep1, dep2, state) }, filteredBy: filter, applying: strategy)
    }

    public init<Dep1: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (Dep1, State) -> Events,
        dep1: Dep1,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: { (state: State) -> Events in effect(dep1, state) }, filteredBy: filter, applying: strategy)
    }

    public init<Dep1: Sendable, Dep2: Sendable, Events: AsyncSequence>(
        effect: @escaping @Sendable (Dep1, Dep2, State) -> Events,
        dep1: Dep1, dep2: Dep2,
        filteredBy filter: (@Sendable (State) -> Bool)? = nil,
        applying strategy: ExecutionStrategy = .cancelOnNewState
    ) where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(effect: { (state: State) -> Events in effect(dep1, dep2, state) }, filteredBy: filter, applying: strategy)
    }
}
