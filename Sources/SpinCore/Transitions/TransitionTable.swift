/// A Harvest-style transition table: rows of `event | from => to | effect`, the first
/// row that matches an event in the current state wins. A table is a **partial**
/// reducer: an event no row matches is declined (the loop ignores it, and its reply says
/// `no_transition`). The rows' effects run in effect queues (`Effect`, `EffectQueue`)
/// with an environment the table's Spin is made with, so tests swap it.
///
/// ```swift
/// let table = TransitionTable<Session, SessionEvent, World>([
///     .login    | .loggedOut => .loggingIn | Effect(queue: .request, id: "login") { world in await world.logIn() },
///     .loginOK  | .loggingIn => .loggedIn,
///     .forceLogout | { $0 != .loggedOut } => .loggedOut | .cancel("login"),
/// ])
/// let spin = Spin(initialState: .loggedOut, table: table, environment: World.live)
/// ```
///
/// Operators: `from => to` (`=>` binds tighter than `|`) makes a `TransitionArrow`;
/// `event | arrow` makes a row; `row | effect` gives it an effect. The event and the
/// from-state are each an exact value (Equatable), a predicate closure, or a
/// `TransitionPattern` (`.any`, `.oneOf([...])`). Events with payloads that shape the
/// new state use `TransitionRow(on:from:to:effect:)` or `TransitionRow { state, event in ... }`.
///
/// Rows are an array literal, as in Harvest, not a result-builder block: a line that
/// starts with `.login` would continue the line before it (`.loggedIn.login`).
public struct TransitionTable<State: Sendable, Event: Sendable, Environment: Sendable>: Sendable {
    /// The rows, in the order they are tried.
    public let rows: [TransitionRow<State, Event, Environment>]
    /// False when no row can have an effect: the table's Spin then runs no feedback for
    /// them, and an effect runner skips its look-up.
    @usableFromInline let hasEffects: Bool

    /// A table of `rows`, tried in order.
    public init(_ rows: [TransitionRow<State, Event, Environment>]) {
        self.rows = rows
        hasEffects = rows.contains { $0.mayHaveEffect }
    }

    /// The first matching row's new state and effect, or nil when no row matches.
    public func transition(from state: State, on event: Event) -> (state: State, effect: Effect<Event, Environment>)? {
        for row in rows {
            if let match = row.match(state, event) { return match }
        }
        return nil
    }

    /// The table as a partial reducer (effects left out: they are the feedback's). It
    /// asks each row for its new state only, so no effect is built. Inlinable, as are the
    /// rows and patterns the operators make, so that the reducer is specialised for the
    /// table's types in the module that uses it.
    @inlinable
    public var reducer: Reducer<State, Event> {
        let rows = self.rows
        return Reducer(decliningInPlace: { state, event in
            for row in rows {
                if let next = row.nextState(state, event) {
                    state = next
                    return true
                }
            }
            return false
        })
    }

    /// The table followed by `other`'s rows.
    public func appending(_ other: TransitionTable) -> TransitionTable {
        TransitionTable(rows + other.rows)
    }
}

/// One row of a `TransitionTable`: from a state, on an event, to a new state, with an
/// effect to run once the transition is applied.
public struct TransitionRow<State: Sendable, Event: Sendable, Environment: Sendable>: Sendable {
    /// The new state and effect when the row matches `(state, event)`, else nil.
    public let match: @Sendable (State, Event) -> (state: State, effect: Effect<Event, Environment>)?
    /// The new state alone when the row matches, else nil: what the table's reducer asks,
    /// without building the effect.
    @usableFromInline let nextState: @Sendable (State, Event) -> State?
    /// False only when the row is known never to have an effect.
    let mayHaveEffect: Bool

    /// A row as a function, Harvest's `EffectMapping`: return nil when it does not match.
    public init(_ match: @escaping @Sendable (State, Event) -> (state: State, effect: Effect<Event, Environment>)?) {
        self.init(nextState: { match($0, $1)?.state }, match: match, mayHaveEffect: true)
    }

    /// A row whose new state is computed from the state and the event (for payloads).
    @inlinable
    public init(
        on event: TransitionPattern<Event>,
        from state: TransitionPattern<State>,
        to next: @escaping @Sendable (State, Event) -> State,
        effect: Effect<Event, Environment> = .none
    ) {
        self.init(nextState: { current, incoming in
            guard event.matches(incoming), state.matches(current) else { return nil }
            return next(current, incoming)
        }, effect: effect)
    }

    /// A row of `nextState` that runs `effect` whenever it matches.
    @usableFromInline
    init(nextState: @escaping @Sendable (State, Event) -> State?, effect: Effect<Event, Environment>) {
        self.init(nextState: nextState, match: { current, incoming in
            nextState(current, incoming).map { ($0, effect) }
        }, mayHaveEffect: !effect.isNone)
    }

    private init(
        nextState: @escaping @Sendable (State, Event) -> State?,
        match: @escaping @Sendable (State, Event) -> (state: State, effect: Effect<Event, Environment>)?,
        mayHaveEffect: Bool
    ) {
        self.nextState = nextState
        self.match = match
        self.mayHaveEffect = mayHaveEffect
    }

    /// The same row with `effect` run after it (added to any effect it had).
    public func effect(_ effect: Effect<Event, Environment>) -> TransitionRow {
        let match = self.match
        return TransitionRow(nextState: nextState, match: { state, event in
            match(state, event).map { ($0.state, $0.effect + effect) }
        }, mayHaveEffect: true)
    }
}

/// Which values (events, or states a row leaves) a row accepts.
public struct TransitionPattern<Value: Sendable>: Sendable {
    /// Whether a value is accepted.
    public let matches: @Sendable (Value) -> Bool

    /// The values for which `matches` is true.
    @inlinable
    public init(_ matches: @escaping @Sendable (Value) -> Bool) {
        self.matches = matches
    }

    /// Every value (a wildcard).
    @inlinable
    public static var any: TransitionPattern { TransitionPattern { _ in true } }

    /// The values for which `predicate` holds.
    @inlinable
    public static func matching(_ predicate: @escaping @Sendable (Value) -> Bool) -> TransitionPattern {
        TransitionPattern(predicate)
    }
}

extension TransitionPattern where Value: Equatable {
    /// Exactly `value`.
    @inlinable
    public static func exactly(_ value: Value) -> TransitionPattern {
        TransitionPattern { $0 == value }
    }

    /// Any of `values`.
    @inlinable
    public static func oneOf(_ values: [Value]) -> TransitionPattern {
        TransitionPattern { values.contains($0) }
    }
}
