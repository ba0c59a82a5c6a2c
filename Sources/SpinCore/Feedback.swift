import Dispatch

/// A feedback: the only place of a Spin where side effects happen. It reads the states
/// of its loop and produces events for it.
///
/// Build one from an effect in any of the forms of `Feedback+Effects.swift`, attach it
/// to a Gear (`Feedback+Gear.swift`), inject dependencies
/// (`Feedback+Dependencies.swift`), or key its effects by a request the state asks for
/// (`Feedback.react`, `Feedback+React.swift`). `.execute(on:)` picks the queue its effect runs on.
public struct Feedback<State: Sendable, Event: Sendable>: Sendable {
    /// Makes the running instance of this feedback when a loop starts.
    package let makeRunner: @Sendable (FeedbackContext<Event>) -> any FeedbackRunner<State>
    /// The queue given with `.execute(on:)`; nil runs the effect where the loop runs it
    /// (synchronous effects on the loop's executor, async ones on the global executor).
    package let executor: DispatchQueue?
    /// Whether its runner is a `TransitionRunner` (a transition table's effects, which
    /// start from the event that made a state): a lifted feedback then hears transitions
    /// too, and hands its child theirs (`Feedback+Scope.swift`).
    package let hearsTransitions: Bool

    @usableFromInline
    package init(executor: DispatchQueue? = nil, hearsTransitions: Bool = false,
                 makeRunner: @escaping @Sendable (FeedbackContext<Event>) -> any FeedbackRunner<State>) {
        self.executor = executor
        self.hearsTransitions = hearsTransitions
        self.makeRunner = makeRunner
    }

    /// The same feedback with its effect executed on `queue` (a serial queue keeps the
    /// effect's events in order).
    public func execute(on queue: DispatchQueue) -> Feedback {
        Feedback(executor: queue, hearsTransitions: hearsTransitions, makeRunner: makeRunner)
    }
}
