import Dispatch
import SpinConcurrency

/// A feedback loop: an initial state, feedbacks (the only place for side effects) and a
/// pure reducer. A `Spin` is a description; `start()` makes it run.
///
/// ```swift
/// let spin = Spin(initialState: Levels(left: 10, right: 20)) {
///     Feedback(effect: leftEffect)
///     Feedback(effect: rightEffect)
///     Reducer(levelsReducer)
/// }
/// let loop = spin.start()
/// ```
public struct Spin<State: Sendable, Event: Sendable>: Sendable {
    public let initialState: State
    public let feedbacks: [Feedback<State, Event>]
    public let reducer: Reducer<State, Event>
    /// The loop's executor, where everything it runs runs; nil gives each loop its own
    /// serial queue, and lets a server's network threads apply the events they bring
    /// (one at a time all the same: `SpinLoop`, "The executor").
    public let executor: DispatchQueue?

    public init(initialState: State, feedbacks: [Feedback<State, Event>], reducer: Reducer<State, Event>,
                executeOn executor: DispatchQueue? = nil) {
        self.initialState = initialState
        self.feedbacks = feedbacks
        self.reducer = reducer
        self.executor = executor
    }

    /// The DSL form: any number of feedbacks and exactly one reducer, in any order (a
    /// block without a reducer, or with two, does not compile).
    public init(initialState: State, executeOn executor: DispatchQueue? = nil,
                @SpinBuilder<State, Event> _ content: () -> SpinParts<State, Event>) {
        let parts = content()
        self.init(initialState: initialState, feedbacks: parts.feedbacks, reducer: parts.reducer!, executeOn: executor)
    }

    /// The same Spin starting from another state (a host recovering a Spin from its
    /// journal starts it from the replayed state).
    public func startingFrom(_ state: State) -> Spin {
        Spin(initialState: state, feedbacks: feedbacks, reducer: reducer, executeOn: executor)
    }

    /// Makes the loop and runs it.
    /// - Parameters:
    ///   - label: the loop's name, as for `makeLoop`.
    ///   - feedbackBudget: see `makeLoop`.
    public func start(label: String? = nil,
                      feedbackBudget: Int = SpinLoop<State, Event>.defaultFeedbackBudget) -> SpinLoop<State, Event> {
        let loop = makeLoop(label: label, feedbackBudget: feedbackBudget)
        loop.start()
        return loop
    }

    /// Makes the loop without running it: its Gear subscriptions are attached, but no
    /// feedback has seen a state and no event is applied until `start()`. A host makes
    /// every loop first and then starts them, so that no Gear event is lost at start-up.
    /// - Parameters:
    ///   - label: the loop's name (given to Gears as the source of what it propagates).
    ///   - sequence: the sequence of the initial state (a recovered Spin's count).
    ///   - feedbackBudget: the most events feedbacks and Gears may have applied in a row
    ///     without an external event (and the most of theirs that may wait); past it the
    ///     loop suspends (`SpinLoop`, runaway guard). Positive.
    public func makeLoop(label: String? = nil, sequence: UInt64 = 0,
                         feedbackBudget: Int = SpinLoop<State, Event>.defaultFeedbackBudget) -> SpinLoop<State, Event> {
        SpinLoop(spin: self, label: label, sequence: sequence, feedbackBudget: feedbackBudget)
    }

    /// `makeLoop`, with the event loop that applies what network threads emit (nil: none,
    /// each network thread applies what it emits, as without event loops).
    package func makeLoop(home: (any TurnScheduler)?) -> SpinLoop<State, Event> {
        SpinLoop(spin: self, label: nil, sequence: 0, feedbackBudget: SpinLoop<State, Event>.defaultFeedbackBudget,
                 home: .some(home))
    }

    /// `makeLoop`, with a state the loop must stop at: when the reducer makes a state for
    /// which `suspendsAt` gives a reason, the loop suspends with it before its observers
    /// and feedbacks see that state, as the runaway guard does (a server's machine whose
    /// event set off more microsteps than it allows).
    package func makeLoop(label: String?, sequence: UInt64, feedbackBudget: Int,
                          suspendingAt suspendsAt: (@Sendable (State) -> String?)?) -> SpinLoop<State, Event> {
        SpinLoop(spin: self, label: label, sequence: sequence, feedbackBudget: feedbackBudget, suspendsAt: suspendsAt)
    }
}
