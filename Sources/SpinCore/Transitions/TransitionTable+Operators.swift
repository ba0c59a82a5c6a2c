/// `from => to`: binds tighter than `|`, so `event | from => to | effect` reads as
/// `(event | (from => to)) | effect`. Not associative: `a => b => c` does not compile.
precedencegroup TransitionArrowPrecedence {
    associativity: none
    higherThan: AdditionPrecedence
}

infix operator => : TransitionArrowPrecedence

/// The `from => to` part of a row: which states it leaves and the state it goes to.
public struct TransitionArrow<State: Sendable>: Sendable {
    public let from: TransitionPattern<State>
    public let to: State

    /// From the states `from` matches to `to`.
    @inlinable
    public init(from: TransitionPattern<State>, to: State) {
        self.from = from
        self.to = to
    }

    /// `event | from => to`: a row for exactly `event`, without an effect.
    @inlinable
    public static func | <Event: Equatable & Sendable, Environment: Sendable>(
        event: Event, arrow: TransitionArrow
    ) -> TransitionRow<State, Event, Environment> {
        arrow.row(on: .exactly(event))
    }

    /// `predicate | from => to`: a row for the events the predicate accepts.
    @inlinable
    public static func | <Event: Sendable, Environment: Sendable>(
        event: @escaping @Sendable (Event) -> Bool, arrow: TransitionArrow
    ) -> TransitionRow<State, Event, Environment> {
        arrow.row(on: TransitionPattern(event))
    }

    /// `pattern | from => to`: a row for the events the pattern matches.
    @inlinable
    public static func | <Event: Sendable, Environment: Sendable>(
        event: TransitionPattern<Event>, arrow: TransitionArrow
    ) -> TransitionRow<State, Event, Environment> {
        arrow.row(on: event)
    }

    @usableFromInline
    func row<Event: Sendable, Environment: Sendable>(
        on event: TransitionPattern<Event>
    ) -> TransitionRow<State, Event, Environment> {
        let to = self.to
        return TransitionRow(on: event, from: from, to: { _, _ in to })
    }
}

extension TransitionPattern {
    /// `pattern => to`: from any state the pattern matches (`.any`, `.oneOf([...])`).
    @inlinable
    public static func => (from: TransitionPattern, to: Value) -> TransitionArrow<Value> {
        TransitionArrow(from: from, to: to)
    }
}

/// `from => to` from exactly the state `from`.
@inlinable
public func => <State: Equatable & Sendable>(from: State, to: State) -> TransitionArrow<State> {
    TransitionArrow(from: .exactly(from), to: to)
}

/// `predicate => to` from every state the predicate accepts.
@inlinable
public func => <State: Sendable>(from: @escaping @Sendable (State) -> Bool, to: State) -> TransitionArrow<State> {
    TransitionArrow(from: TransitionPattern(from), to: to)
}

extension TransitionRow {
    /// `row | effect`: the row runs `effect` once its transition is applied.
    public static func | (row: TransitionRow, effect: Effect<Event, Environment>) -> TransitionRow {
        row.effect(effect)
    }
}
