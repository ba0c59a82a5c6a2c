import Dispatch

/// Runs RxFeedback's `react`: one effect per request the state asks for, keyed by the
/// request (`Feedback+React.swift`).
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
