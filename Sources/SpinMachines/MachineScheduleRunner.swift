import SpinCore
import SpinConcurrency

/// Sends the events of delayed `raise` actions (see `MachineDefinition.spin`): every event
/// a state holds in `scheduled` is sent as `MachineEvent.scheduled(_:)` once its delay has
/// passed since it was armed, which is when a transition scheduled it or, for what the
/// loop's first state holds (the initial state's, or what a restart recovered), when the
/// loop started. An event the state no longer holds (cancelled, replaced, sent) is
/// disarmed; one the latest step scheduled again under the same key is armed anew; one
/// sent that a suspension of the loop dropped is sent again when the loop resumes.
final class MachineScheduleRunner: FeedbackRunner {
    typealias State = MachineState

    private struct Armed {
        let token: UInt64
        let task: Task<Void, Never>
        let scheduled: MachineScheduledEvent
        /// Sent and not applied yet: not armed again while a state still holds it.
        var sent = false
    }

    private struct Timers {
        var armed: [Int: Armed] = [:]
        /// The shape of the last state received: the same one again is the state given
        /// again when the loop resumes, not a transition that scheduled anything anew.
        var lastShape: MachineState.Shape?
        var nextToken: UInt64 = 0
        var stopped = false
    }

    private let clock: any Clock<Duration>
    private let context: FeedbackContext<MachineEvent>
    private let timers = Protected(Timers())

    init(clock: any Clock<Duration>, context: FeedbackContext<MachineEvent>) {
        self.clock = clock
        self.context = context
    }

    func start() {}

    func receive(_ state: MachineState) {
        let held = state.scheduled
        let scheduledNow = state.step.scheduled
        guard !held.isEmpty || !scheduledNow.isEmpty || timers.withLock({ !$0.armed.isEmpty }) else { return }
        let keys = Set(held.map(\.key))
        let cancelled = timers.withLock { timers -> [Task<Void, Never>] in
            guard !timers.stopped else { return [] }
            let remade = timers.lastShape === state.shape ? [] : Set(scheduledNow.map(\.key))
            timers.lastShape = state.shape
            var cancelled: [Task<Void, Never>] = []
            for (key, armed) in timers.armed where !keys.contains(key) || remade.contains(key) {
                cancelled.append(armed.task)
                timers.armed[key] = nil
            }
            for scheduled in held where timers.armed[scheduled.key] == nil {
                timers.nextToken += 1
                let token = timers.nextToken
                timers.armed[scheduled.key] = Armed(token: token, task: makeTask(scheduled, token: token), scheduled: scheduled)
            }
            return cancelled
        }
        for task in cancelled { task.cancel() }
    }

    /// What was sent and not applied was dropped by the suspension (applying it takes it
    /// out of the state, and the last state still held it): sent again, at once.
    func resumed() {
        let replaced = timers.withLock { timers -> [Task<Void, Never>] in
            guard !timers.stopped else { return [] }
            var replaced: [Task<Void, Never>] = []
            for (key, armed) in timers.armed where armed.sent {
                replaced.append(armed.task)
                timers.nextToken += 1
                let token = timers.nextToken
                timers.armed[key] = Armed(token: token, task: makeTask(armed.scheduled, token: token, delay: 0),
                                          scheduled: armed.scheduled)
            }
            return replaced
        }
        for task in replaced { task.cancel() }
    }

    private func makeTask(_ scheduled: MachineScheduledEvent, token: UInt64, delay: Int? = nil) -> Task<Void, Never> {
        let submit = context.host.submit
        let timers = self.timers
        let key = scheduled.key
        // Still the one armed under its key, and the loop not stopped (checked again just
        // before the loop applies it, so that a late one of a replaced event is dropped).
        let isCurrent: @Sendable () -> Bool = {
            timers.withLock { !$0.stopped && $0.armed[key]?.token == token }
        }
        return MachineTimerRunner.sleeping(on: clock, milliseconds: delay ?? scheduled.delay, whileCurrent: isCurrent) {
            timers.withLock { timers in
                if timers.armed[key]?.token == token { timers.armed[key]?.sent = true }
            }
            submit(MachineEvent.scheduled(scheduled), isCurrent)
        }
    }

    func stop() {
        let tasks = timers.withLock { timers -> [Task<Void, Never>] in
            timers.stopped = true
            defer { timers.armed = [:] }
            return timers.armed.values.map(\.task)
        }
        for task in tasks { task.cancel() }
    }

    /// Delayed events not sent yet.
    var runningEffects: Int {
        timers.withLock { $0.armed.values.filter { !$0.sent }.count }
    }
}
