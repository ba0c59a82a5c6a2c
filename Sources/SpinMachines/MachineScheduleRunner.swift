import SpinCore

/// The events of delayed `raise` actions (see `MachineDefinition.spin`): each new
/// state's `step.scheduled` event is sent to the machine after its delay, unless a state
/// after it lists its id in `step.cancelled` first. A second `raise` with an id still
/// waiting takes its place, as in XState. The loop's first state schedules nothing: it
/// is where the loop starts, not the result of a transition made now.
final class MachineScheduleRunner: FeedbackRunner {
    typealias State = MachineState

    private struct Pending {
        var byID: [String: (token: UInt64, task: Task<Void, Never>)] = [:]
        var anonymous: [UInt64: Task<Void, Never>] = [:]
        var nextToken: UInt64 = 0
        var isFirstState = true
        var stopped = false
    }

    private let clock: any Clock<Duration>
    private let context: FeedbackContext<MachineEvent>
    private let pending = Protected(Pending())

    init(clock: any Clock<Duration>, context: FeedbackContext<MachineEvent>) {
        self.clock = clock
        self.context = context
    }

    func start() {}

    func receive(_ state: MachineState) {
        let step = state.step
        let cancelled = pending.withLock { pending -> [Task<Void, Never>] in
            defer { pending.isFirstState = false }
            guard !pending.stopped, !pending.isFirstState else { return [] }
            var cancelled: [Task<Void, Never>] = []
            for id in step.cancelled {
                if let task = pending.byID.removeValue(forKey: id)?.task { cancelled.append(task) }
            }
            for scheduled in step.scheduled {
                pending.nextToken += 1
                let token = pending.nextToken
                let task = makeTask(scheduled, token: token)
                if let id = scheduled.id {
                    if let replaced = pending.byID.updateValue((token, task), forKey: id)?.task { cancelled.append(replaced) }
                } else {
                    pending.anonymous[token] = task
                }
            }
            return cancelled
        }
        for task in cancelled { task.cancel() }
    }

    private func makeTask(_ scheduled: MachineScheduledEvent, token: UInt64) -> Task<Void, Never> {
        let clock = self.clock
        let submit = context.host.submit
        let pending = self.pending
        // Still the one scheduled under its id (or still waiting, without one), and the
        // loop not stopped: taken out as it is handed over.
        let isCurrent: @Sendable () -> Bool = {
            pending.withLock { pending in
                guard !pending.stopped else { return false }
                if let id = scheduled.id { return pending.byID[id]?.token == token }
                return pending.anonymous[token] != nil
            }
        }
        return MachineTimerRunner.sleeping(on: clock, milliseconds: scheduled.delay, whileCurrent: isCurrent) {
            pending.withLock { pending in
                if let id = scheduled.id, pending.byID[id]?.token == token { pending.byID[id] = nil }
                pending.anonymous[token] = nil
            }
            submit(scheduled.event, nil)
        }
    }

    func stop() {
        let tasks = pending.withLock { pending -> [Task<Void, Never>] in
            pending.stopped = true
            defer {
                pending.byID = [:]
                pending.anonymous = [:]
            }
            return pending.byID.values.map(\.task) + pending.anonymous.values
        }
        for task in tasks { task.cancel() }
    }

    /// Delayed events not sent yet.
    var runningEffects: Int {
        pending.withLock { $0.byID.count + $0.anonymous.count }
    }
}
