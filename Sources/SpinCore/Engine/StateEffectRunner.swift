import Dispatch
import Synchronization

/// Runs one effect per state: the synchronous, async-step and stream forms of `Feedback`
/// (lensing and filtering are already composed into `filter` and `body`).
///
/// Cancellation (DESIGN.md §2, semantics 3): every state the feedback acts on bumps
/// `generation`; an effect may hand over an event only while the generation is still the
/// one of its state, so nothing an effect produces after a newer state arrived is
/// applied. Events produced before (a synchronous effect's, always) are applied, as
/// `flatMapLatest` would.
///
/// `@unchecked Sendable`: `currentTask` is only touched on the loop's executor (see
/// `FeedbackRunner`); `generation` is atomic; the rest is immutable or a `TaskBag`.
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
    private var currentTask: UInt64?

    init(body: Body, filter: (@Sendable (State) -> Bool)?, strategy: ExecutionStrategy, context: FeedbackContext<Event>) {
        self.body = body
        self.filter = filter
        self.strategy = strategy
        self.context = context
        if let queue = context.executor, !context.host.runsInline {
            taskExecutor = DispatchQueueExecutor(queue)
        } else {
            taskExecutor = nil
        }
    }

    func start() {}

    func receive(_ state: State) {
        let cancels = strategy == .cancelOnNewState
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
        let isCurrent: (@Sendable () -> Bool)? = cancels ? { @Sendable in generation.current == mine } : nil
        /// Hands over an event of a deferred effect unless a newer state (or `stop`) has
        /// cancelled it; the loop checks `isCurrent` again right before applying it.
        let emit: @Sendable (Event) -> Void = { event in
            if let isCurrent, !isCurrent() { return }
            submit(event, isCurrent)
        }

        switch body {
        case .sync(let effect):
            if let queue = context.executor, !context.host.runsInline {
                queue.async {
                    if let isCurrent, !isCurrent() { return }
                    if let event = effect(state) { emit(event) }
                }
            } else if let event = effect(state) {
                // Produced right now, before any newer state: always applied.
                submit(event, nil)
            }
        case .async(let effect):
            if cancels, let previous = currentTask {
                tasks.cancel(previous)
            }
            currentTask = tasks.run(on: taskExecutor) {
                await effect(state) { event in
                    guard !Task.isCancelled else { return }
                    emit(event)
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
        _ = generation.advance()
        tasks.cancelAll(close: true)
    }

    var runningEffects: Int { tasks.count }
}

/// The raw form: the effect gets the whole stream of states and returns a stream of
/// events. It starts with the loop and ends with it. `AsyncStream`'s continuation is
/// thread-safe (yielding after `finish()` does nothing), so `receive` on the executor
/// and `stop` from anywhere need no lock.
final class StateStreamRunner<State: Sendable, Event: Sendable>: FeedbackRunner {
    private let effect: @Sendable (AsyncStream<State>, _ emit: @Sendable (Event) -> Void) async -> Void
    private let context: FeedbackContext<Event>
    private let tasks = TaskBag()
    private let states: AsyncStream<State>
    private let continuation: AsyncStream<State>.Continuation

    init(effect: @escaping @Sendable (AsyncStream<State>, _ emit: @Sendable (Event) -> Void) async -> Void,
         context: FeedbackContext<Event>) {
        self.effect = effect
        self.context = context
        (states, continuation) = AsyncStream.makeStream(of: State.self)
    }

    func start() {
        let effect = self.effect
        let states = self.states
        let submit = context.host.submit
        let executor = context.executor.flatMap { context.host.runsInline ? nil : DispatchQueueExecutor($0) }
        tasks.run(on: executor) {
            await effect(states) { event in
                guard !Task.isCancelled else { return }
                submit(event, nil)
            }
        }
    }

    func receive(_ state: State) {
        continuation.yield(state)
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
