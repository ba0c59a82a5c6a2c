import Dispatch
import SpinConcurrency

/// Runs the effects of a transition table's rows in their queues (see `FlattenStrategy`)
/// and cancels them by id. A feedback of the table's Spin: `applied` looks up the row the
/// event matched (the table is pure, so it finds the same row the reducer did) and
/// starts its effect; `receive` ignores states.
///
/// Guarded by one lock: effects finish, and start the next waiting one, on any thread.
final class EffectQueueRunner<State: Sendable, Event: Sendable, Environment: Sendable>: TransitionRunner {
    private typealias Run = Effect<Event, Environment>.Run

    private struct Running {
        var queue: String
        var id: EffectID?
        var task: Task<Void, Never>?
        /// Set on cancellation: events the effect produced and the loop has not applied
        /// yet are dropped, as those of a cancelled feedback effect are.
        let cancelled: Protected<Bool>
    }

    private struct Queues {
        var nextTicket: UInt64 = 0
        var running: [UInt64: Running] = [:]
        var waiting: [String: [Run]] = [:]
        var stopped = false
    }

    private let table: TransitionTable<State, Event, Environment>
    /// The table's `hasEffects`, kept apart: reading it through the generic table costs a
    /// metadata look-up for every applied event.
    private let hasEffects: Bool
    private let environment: Environment
    private let host: FeedbackHost<Event>
    /// Where effects run when the feedback was given `.execute(on:)`.
    private let taskExecutor: DispatchQueueExecutor?
    private let queues = Protected(Queues())

    init(table: TransitionTable<State, Event, Environment>, environment: Environment, context: FeedbackContext<Event>) {
        self.table = table
        hasEffects = table.hasEffects
        self.environment = environment
        self.host = context.host
        self.taskExecutor = context.taskExecutor
    }

    func start() {}
    func receive(_ state: State) {}

    func applied(_ event: Event, from: State, to: State) {
        if hasEffects { startEffect(of: event, from: from) }
    }

    /// Apart from `applied`: the generic types it uses (the row's effect, the optional
    /// tuple) are looked up on entry, which a table without effects should not pay.
    @inline(never)
    private func startEffect(of event: Event, from: State) {
        guard let effect = table.transition(from: from, on: event)?.effect, !effect.isNone else { return }
        let cancelled = queues.withLock { queues -> [Running] in
            guard !queues.stopped else { return [] }
            var cancelled: [Running] = []
            for id in effect.cancellations {
                cancelled += Self.take(&queues) { $0.id == id }
                for name in queues.waiting.keys { queues.waiting[name]?.removeAll { $0.id == id } }
            }
            // What waited behind a cancelled effect takes its place.
            for name in Set(cancelled.map(\.queue)) { startWaiting(in: name, &queues) }
            for run in effect.runs {
                if run.queue.strategy == .latest {
                    cancelled += Self.take(&queues) { $0.queue == run.queue.name }
                    queues.waiting[run.queue.name] = nil
                }
                queues.waiting[run.queue.name, default: []].append(run)
                startWaiting(in: run.queue.name, &queues)
            }
            return cancelled
        }
        for running in cancelled { Self.cancel(running) }
    }

    /// Removes the running effects `condition` picks; the caller cancels them unlocked.
    private static func take(_ queues: inout Queues, where condition: (Running) -> Bool) -> [Running] {
        let tickets = queues.running.filter { condition($0.value) }.map(\.key)
        return tickets.compactMap { queues.running.removeValue(forKey: $0) }
    }

    private static func cancel(_ running: Running) {
        running.cancelled.withLock { $0 = true }
        running.task?.cancel()
    }

    /// Starts `run` as a task; under the lock, so the task finds its entry when it ends.
    private func start(_ run: Run, in queues: inout Queues) {
        queues.nextTicket += 1
        let ticket = queues.nextTicket
        let cancelled = Protected(false)
        let (environment, submit) = (self.environment, host.submit)
        let isCurrent: @Sendable () -> Bool = { !cancelled.withLock { $0 } }
        let task = Task(executorPreference: taskExecutor) { [weak self] in
            await run.body(environment) { event in
                if isCurrent() { submit(event, isCurrent) }
            }
            self?.finished(ticket)
        }
        queues.running[ticket] = Running(queue: run.queue.name, id: run.id, task: task, cancelled: cancelled)
    }

    /// An effect ended: the next effect waiting in its queue starts.
    private func finished(_ ticket: UInt64) {
        queues.withLock { queues in
            guard let ended = queues.running.removeValue(forKey: ticket), !queues.stopped else { return }
            startWaiting(in: ended.queue, &queues)
        }
    }

    /// Starts the effects waiting in queue `name` while it has room for them.
    private func startWaiting(in name: String, _ queues: inout Queues) {
        while var waiting = queues.waiting[name], let next = waiting.first {
            let running = queues.running.values.count { $0.queue == name }
            if let limit = next.queue.strategy.limit, running >= limit { return }
            waiting.removeFirst()
            queues.waiting[name] = waiting.isEmpty ? nil : waiting
            start(next, in: &queues)
        }
    }

    func stop() {
        let running = queues.withLock { queues -> [Running] in
            queues.stopped = true
            queues.waiting = [:]
            defer { queues.running = [:] }
            return Array(queues.running.values)
        }
        for effect in running { Self.cancel(effect) }
    }

    /// Effects started and not ended (those waiting in a queue are not counted).
    var runningEffects: Int {
        queues.withLock { $0.running.count }
    }
}

extension TransitionTable {
    /// The feedback that runs the rows' effects, each given `environment`.
    public func effects(environment: Environment) -> Feedback<State, Event> {
        Feedback(hearsTransitions: true) { context in
            EffectQueueRunner(table: self, environment: environment, context: context)
        }
    }
}

extension Spin {
    /// A Spin whose reducer is `table` (a partial one: an event no row matches is
    /// ignored) and whose effects are the rows' effects, run with `environment`; other
    /// `feedbacks` may go along. A table none of whose rows can have an effect adds no
    /// feedback for them. Inlinable, so that the table's reducer is specialised for its
    /// types where the Spin is made.
    @inlinable
    public init<Environment: Sendable>(
        initialState: State,
        table: TransitionTable<State, Event, Environment>,
        environment: Environment,
        feedbacks: [Feedback<State, Event>] = [],
        executeOn executor: DispatchQueue? = nil
    ) {
        let effects = table.hasEffects ? [table.effects(environment: environment)] : []
        self.init(initialState: initialState, feedbacks: feedbacks + effects, reducer: table.reducer, executeOn: executor)
    }
}
