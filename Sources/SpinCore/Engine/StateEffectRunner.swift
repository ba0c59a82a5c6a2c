import Dispatch
import Synchronization

/// Runs one effect per state: the synchronous, async-step and stream forms of `Feedback`
/// (lensing and filtering are already composed into `filter` and `body`).
///
/// Cancellation (SpinCore.docc, Feedbacks: switch-to-latest): every state
/// the feedback acts on (or filters out) bumps `generation`; an effect hands over an event only while the
/// generation is still the one of its state. So an event handed over before a newer state
/// reached the feedback is applied, even if the loop applies it after that state; nothing
/// the effect produces afterwards is. A synchronous effect is never cancelled: it runs
/// for every state (on `.execute(on:)`'s queue too, where it may run late) and its event
/// is applied, as Spin.Swift maps every state through it. `latestStateOnly` adds a check
/// when the loop applies an event, for every form: its state must still be the
/// feedback's latest.
///
/// `@unchecked Sendable`: `currentTask` is only touched on the loop's executor (see
/// `FeedbackRunner`); `generation` and `stopped` are atomic; the rest is immutable or a
/// `TaskBag`.
final class StateEffectRunner<State: Sendable, Event: Sendable>: FeedbackRunner, @unchecked Sendable {
    enum Body: Sendable {
        /// At most one event per state, computed synchronously.
        case sync(@Sendable (State) -> Event?)
        /// An async unit of work per state that may emit any number of events.
        case async(@Sendable (State, _ emit: @Sendable (Event) -> Void) async -> Void)
    }

    private let body: Body
    private let filter: (@Sendable (State) -> Bool)?
    private let strategy: ExecutionStrategy
    private let context: FeedbackContext<Event>
    private let taskExecutor: DispatchQueueExecutor?
    private let tasks = TaskBag()

    private let generation = Generation()
    /// Set by `stop`: a synchronous effect still queued on `.execute(on:)` does not run.
    private let stopped = StopFlag()
    private var currentTask: UInt64?

    init(body: Body, filter: (@Sendable (State) -> Bool)?, strategy: ExecutionStrategy, context: FeedbackContext<Event>) {
        self.body = body
        self.filter = filter
        self.strategy = strategy
        self.context = context
        self.taskExecutor = context.taskExecutor
    }

    func start() {}

    func receive(_ state: State) {
        let cancels = strategy != .continueOnNewState
        // A state the filter rejects is not acted on; under `cancelOnNewState` it still
        // is a newer state, so it cancels the running effect (Spin.Swift turns it into
        // an empty effect, RxFeedback's `react` into a nil request): a fetch that ends
        // after the state left `loading` is not applied.
        if let filter, !filter(state) {
            if cancels { cancelRunning() }
            return
        }
        let mine = generation.advance()
        let generation = self.generation
        let submit = context.host.submit
        // `latestStateOnly`: the loop asks again right before applying the event.
        let stillLatest: (@Sendable () -> Bool)? =
            strategy == .latestStateOnly ? { @Sendable in generation.current == mine } : nil
        switch body {
        case .sync(let effect):
            if let queue = context.queue {
                // Moved to the feedback's queue, skipping nothing (semantics 1).
                let stopped = self.stopped
                queue.async {
                    guard !stopped.isSet, let event = effect(state) else { return }
                    submit(event, stillLatest)
                }
            } else if let event = effect(state) {
                submit(event, stillLatest)
            }
        case .async(let effect):
            if cancels, let previous = currentTask {
                tasks.cancel(previous)
            }
            currentTask = tasks.run(on: taskExecutor) {
                await effect(state) { event in
                    // The hand-over check of semantics 3: a newer state (or `stop`) that
                    // reached the feedback before this point cancelled the effect.
                    guard !Task.isCancelled, !cancels || generation.current == mine else { return }
                    submit(event, stillLatest)
                }
            }
        }
    }

    /// What a rejected state does under `cancelOnNewState`: nothing running or queued
    /// hands over an event any more. Nothing at all to do when no effect is in flight
    /// (the common case: a filter that keeps states out costs no more than the check).
    private func cancelRunning() {
        if let previous = currentTask {
            tasks.cancel(previous)
            currentTask = nil
        }
        _ = generation.advance()
    }

    func stop() {
        // Effects already queued or running see a newer generation: nothing of theirs
        // is handed over or applied.
        stopped.set()
        _ = generation.advance()
        tasks.cancelAll(close: true)
    }

    var runningEffects: Int { tasks.count }
}

/// The raw form: the effect gets the whole stream of states (or of the parts `select`
/// keeps: lensing and filtering are composed into it) and returns a stream of events. It
/// starts with the loop and ends with it. `AsyncStream`'s continuation is thread-safe
/// (yielding after `finish()` does nothing), so `receive` on the executor and `stop` from
/// anywhere need no lock.
final class StateStreamRunner<State: Sendable, Element: Sendable, Event: Sendable>: FeedbackRunner {
    private let effect: @Sendable (AsyncStream<Element>, _ emit: @Sendable (Event) -> Void) async -> Void
    private let select: @Sendable (State) -> Element?
    private let context: FeedbackContext<Event>
    private let tasks = TaskBag()
    private let states: AsyncStream<Element>
    private let continuation: AsyncStream<Element>.Continuation

    init(effect: @escaping @Sendable (AsyncStream<Element>, _ emit: @Sendable (Event) -> Void) async -> Void,
         select: @escaping @Sendable (State) -> Element?,
         context: FeedbackContext<Event>) {
        self.effect = effect
        self.select = select
        self.context = context
        (states, continuation) = AsyncStream.makeStream(of: Element.self)
    }

    func start() {
        let effect = self.effect
        let states = self.states
        let submit = context.host.submit
        tasks.run(on: context.taskExecutor) {
            await effect(states) { event in
                guard !Task.isCancelled else { return }
                submit(event, nil)
            }
        }
    }

    func receive(_ state: State) {
        if let element = select(state) { continuation.yield(element) }
    }

    func stop() {
        continuation.finish()
        tasks.cancelAll(close: true)
    }

    /// Always 0: the raw form lives as long as its loop by design, so it is never an
    /// effect "still running" at the end of a test.
    var runningEffects: Int { 0 }
}

/// The number of states a feedback has acted on, shared with its effects so that they
/// can tell whether a newer state has cancelled them.
final class Generation: Sendable {
    private let value = Atomic<UInt64>(0)

    /// Moves to the next state and returns its number.
    func advance() -> UInt64 {
        value.add(1, ordering: .sequentiallyConsistent).newValue
    }

    var current: UInt64 {
        value.load(ordering: .sequentiallyConsistent)
    }
}
