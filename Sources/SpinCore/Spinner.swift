import Dispatch

/// The builder form of a Spin:
///
/// ```swift
/// let spin = Spinner
///     .initialState(Levels(left: 10, right: 20))
///     .feedback(Feedback(effect: leftEffect))
///     .feedback(Feedback(effect: rightEffect))
///     .reducer(Reducer(levelsReducer))
/// ```
public enum Spinner {
    public static func initialState<State: Sendable>(_ state: State, executeOn executor: DispatchQueue? = nil)
    -> SpinnerState<State> {
        SpinnerState(initialState: state, executor: executor)
    }
}

/// A Spin under construction that has its initial state.
public struct SpinnerState<State: Sendable>: Sendable {
    let initialState: State
    let executor: DispatchQueue?

    public func feedback<Event: Sendable>(_ feedback: Feedback<State, Event>) -> SpinnerFeedback<State, Event> {
        SpinnerFeedback(initialState: initialState, executor: executor, feedbacks: [feedback])
    }

    /// A Spin with no feedback: it only changes on emitted events.
    public func reducer<Event: Sendable>(_ reducer: Reducer<State, Event>) -> Spin<State, Event> {
        Spin(initialState: initialState, feedbacks: [], reducer: reducer, executeOn: executor)
    }
}

/// A Spin under construction that has its initial state and feedbacks.
public struct SpinnerFeedback<State: Sendable, Event: Sendable>: Sendable {
    let initialState: State
    let executor: DispatchQueue?
    let feedbacks: [Feedback<State, Event>]

    public func feedback(_ feedback: Feedback<State, Event>) -> SpinnerFeedback {
        SpinnerFeedback(initialState: initialState, executor: executor, feedbacks: feedbacks + [feedback])
    }

    public func reducer(_ reducer: Reducer<State, Event>) -> Spin<State, Event> {
        Spin(initialState: initialState, feedbacks: feedbacks, reducer: reducer, executeOn: executor)
    }
}
