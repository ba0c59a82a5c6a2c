/// The parts a `SpinBuilder` block collects.
public struct SpinParts<State: Sendable, Event: Sendable>: Sendable {
    public var feedbacks: [Feedback<State, Event>]
    /// Set once the block has its reducer; `Spin.init` only accepts parts with one.
    public var reducer: Reducer<State, Event>?
}

/// The result builder of `Spin(initialState:) { ... }`: feedbacks and one reducer in any
/// order. The reducer count is checked by the types: `Feedbacks` (no reducer yet) and
/// `Complete` (one reducer), and only a `Complete` block builds.
@resultBuilder
public enum SpinBuilder<State: Sendable, Event: Sendable> {
    public struct Feedbacks: Sendable {
        var feedbacks: [Feedback<State, Event>]
    }

    public struct Complete: Sendable {
        var feedbacks: [Feedback<State, Event>]
        var reducer: Reducer<State, Event>
    }

    public static func buildExpression(_ feedback: Feedback<State, Event>) -> Feedbacks {
        Feedbacks(feedbacks: [feedback])
    }

    public static func buildExpression(_ reducer: Reducer<State, Event>) -> Complete {
        Complete(feedbacks: [], reducer: reducer)
    }

    public static func buildPartialBlock(first: Feedbacks) -> Feedbacks { first }
    public static func buildPartialBlock(first: Complete) -> Complete { first }

    public static func buildPartialBlock(accumulated: Feedbacks, next: Feedbacks) -> Feedbacks {
        Feedbacks(feedbacks: accumulated.feedbacks + next.feedbacks)
    }

    public static func buildPartialBlock(accumulated: Feedbacks, next: Complete) -> Complete {
        Complete(feedbacks: accumulated.feedbacks + next.feedbacks, reducer: next.reducer)
    }

    public static func buildPartialBlock(accumulated: Complete, next: Feedbacks) -> Complete {
        Complete(feedbacks: accumulated.feedbacks + next.feedbacks, reducer: accumulated.reducer)
    }

    /// `if` without `else` around feedbacks.
    public static func buildOptional(_ component: Feedbacks?) -> Feedbacks {
        component ?? Feedbacks(feedbacks: [])
    }

    /// `for` loops making feedbacks.
    public static func buildArray(_ components: [Feedbacks]) -> Feedbacks {
        Feedbacks(feedbacks: components.flatMap(\.feedbacks))
    }

    public static func buildEither(first component: Feedbacks) -> Feedbacks { component }
    public static func buildEither(second component: Feedbacks) -> Feedbacks { component }

    public static func buildFinalResult(_ component: Complete) -> SpinParts<State, Event> {
        SpinParts(feedbacks: component.feedbacks, reducer: component.reducer)
    }
}
