import Dispatch

/// Runs the Set forms of RxFeedback's `react`: one effect per request the state asks
/// for, keyed by the request (`Feedback+React.swift`; the single-request forms use
/// `SingleReactRunner` below).
///
/// On each state the wanted requests are compared with the running ones: a running
/// request still wanted keeps its effect (even one that has finished: it is not started
/// again until the request goes away and comes back), one no longer wanted is cancelled,
/// a new one starts. The requests are compared with `==`, so a state costs the product
/// of the wanted and running counts: `react` is meant for a handful of requests at a time.
///
/// Cancellation is checked at the hand-over, as for every feedback: each effect has its own flag, set on
/// the executor when the state that drops its request reaches the feedback; the effect
/// hands over an event only while the flag is clear, so what it handed over before is
/// applied and nothing after.
///
/// `@unchecked Sendable`: `running` is only touched on the loop's executor (see
/// `FeedbackRunner`); the flags are atomic; the rest is immutable or a `TaskBag`.
final class ReactRunner<State: Sendable, Request: Equatable & Sendable, Event: Sendable>: FeedbackRunner,
    @unchecked Sendable {
    typealias Effect = @Sendable (Request, _ emit: @Sendable (Event) -> Void) async -> Void

    private struct Running {
        let request: Request
        let task: UInt64?
        let cancelled: StopFlag
    }

    private let requests: @Sendable (State) -> [Request]
    private let effect: Effect
    private let context: FeedbackContext<Event>
    private let taskExecutor: DispatchQueueExecutor?
    private let tasks = TaskBag()
    private let stopped = StopFlag()
    private var running: [Running] = []

    /// - Parameter requests: the requests a state asks for, without repeats.
    init(requests: @escaping @Sendable (State) -> [Request], effect: @escaping Effect, context: FeedbackContext<Event>) {
        self.requests = requests
        self.effect = effect
        self.context = context
        self.taskExecutor = context.taskExecutor
    }

    func start() {}

    func receive(_ state: State) {
        let wanted = requests(state)
        // The usual state asks for what already runs (or for nothing while nothing
        // runs): then there is nothing to cancel or start, and no array work to do.
        if wanted.count == running.count, wanted.indices.allSatisfy({ wanted[$0] == running[$0].request }) { return }
        running.removeAll { entry in
            guard !wanted.contains(entry.request) else { return false }
            entry.cancelled.set()
            if let task = entry.task { tasks.cancel(task) }
            return true
        }
        for request in wanted where !running.contains(where: { $0.request == request }) {
            running.append(launch(request))
        }
    }

    private func launch(_ request: Request) -> Running {
        let cancelled = StopFlag()
        let stopped = self.stopped
        let submit = context.host.submit
        let effect = self.effect
        let task = tasks.run(on: taskExecutor) {
            await effect(request) { event in
                guard !Task.isCancelled, !cancelled.isSet, !stopped.isSet else { return }
                submit(event, nil)
            }
        }
        return Running(request: request, task: task, cancelled: cancelled)
    }

    func stop() {
        stopped.set()
        tasks.cancelAll(close: true)
    }

    var runningEffects: Int { tasks.count }
}

/// What a state means for a single-request `react`, decided where the request's type is
/// known (`Feedback.react(request:bind:)`): the runner needs no `Request` of its own.
@usableFromInline
enum ReactChange<Event: Sendable> {
    /// An effect bound to its request: it hands its events to `emit`.
    @usableFromInline typealias Effect = @Sendable (_ emit: @Sendable (Event) -> Void) async -> Void
    /// The state asks for what it asked for last: the running effect (if any) goes on.
    case keep
    /// The state asks for nothing any more: the running effect is cancelled.
    case cancel
    /// The state asks for another request: the running effect is cancelled, this one starts.
    case start(Effect)
}

/// The request a single-request `react` last saw, one per started loop. `@unchecked
/// Sendable`: it is only touched by the runner's `receive`, on the loop's executor.
@usableFromInline
final class ReactLastRequest<Request: Sendable>: @unchecked Sendable {
    @usableFromInline var request: Request?
    @usableFromInline init() {}
}

/// Runs the single-request forms of `react`: at most one effect, replaced or cancelled
/// as `decide` says. Not generic over the request, so a state that changes nothing costs
/// one call of the specialised `decide` and no generic look-ups.
///
/// `@unchecked Sendable`: `running` is only touched on the loop's executor; the flags are
/// atomic; the rest is immutable or a `TaskBag`.
@usableFromInline
final class SingleReactRunner<State: Sendable, Event: Sendable>: FeedbackRunner, @unchecked Sendable {
    private let decide: @Sendable (State) -> ReactChange<Event>
    private let context: FeedbackContext<Event>
    private let taskExecutor: DispatchQueueExecutor?
    private let tasks = TaskBag()
    private let stopped = StopFlag()
    /// The running effect's task (nil once it could not start) and its cancel flag.
    private var running: (task: UInt64?, cancelled: StopFlag)?

    @usableFromInline
    init(context: FeedbackContext<Event>, decide: @escaping @Sendable (State) -> ReactChange<Event>) {
        self.decide = decide
        self.context = context
        self.taskExecutor = context.taskExecutor
    }

    @usableFromInline func start() {}

    @usableFromInline func receive(_ state: State) {
        switch decide(state) {
        case .keep: return
        case .cancel: cancelRunning()
        case .start(let effect):
            cancelRunning()
            launch(effect)
        }
    }

    private func cancelRunning() {
        guard let entry = running else { return }
        running = nil
        entry.cancelled.set()
        if let task = entry.task { tasks.cancel(task) }
    }

    private func launch(_ effect: @escaping ReactChange<Event>.Effect) {
        let cancelled = StopFlag()
        let stopped = self.stopped
        let submit = context.host.submit
        let task = tasks.run(on: taskExecutor) {
            await effect { event in
                guard !Task.isCancelled, !cancelled.isSet, !stopped.isSet else { return }
                submit(event, nil)
            }
        }
        running = (task, cancelled)
    }

    @usableFromInline func stop() {
        stopped.set()
        tasks.cancelAll(close: true)
    }

    @usableFromInline var runningEffects: Int { tasks.count }
}
