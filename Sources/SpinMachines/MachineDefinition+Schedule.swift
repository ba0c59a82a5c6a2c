/// Delayed `raise` actions as part of the state: what a transition scheduled or cancelled
/// is kept in `MachineState.scheduled`, and an `xstate.raise` event sends one of them.
/// So the events a machine is waiting for are in its journal and snapshots, and a Spin
/// that restarts sends them again (`MachineScheduleRunner` arms what a state holds).
extension MachineDefinition {
    /// `transition(_:_:)` of a machine with delayed `raise` or `cancel` actions.
    func scheduling(_ state: MachineState, _ event: MachineEvent) -> MachineState? {
        guard event.type == MachineEvent.scheduledType else {
            guard let next = plainTransition(state, event) else { return nil }
            return carrying(state.scheduled, into: next)
        }
        // The event a delayed raise sends: applied only while the state still holds what
        // it names (one cancelled or replaced since changes nothing).
        guard case .number(let key)? = event.payload["key"],
              let index = state.scheduled.firstIndex(where: { Double($0.key) == key }),
              event.payload["event"] == state.scheduled[index].event.value, !isDone(state) else { return nil }
        var left = state.scheduled
        let sent = left.remove(at: index).event
        guard let next = plainTransition(state, sent) else {
            // No transition takes it (XState drops it): it is no longer scheduled all the same.
            var unchanged = state
            unchanged.scheduled = left
            unchanged.step = MachineStep()
            return unchanged
        }
        return carrying(left, into: next)
    }

    /// `next` with the events still scheduled: `pending` less what its step cancelled,
    /// then what it scheduled, each given a key; none once the machine is done (the
    /// machine has stopped, as XState's actor does). The step names the new keys.
    private func carrying(_ pending: [MachineScheduledEvent], into next: MachineState) -> MachineState {
        var step = next.step
        guard !isDone(next) else {
            var next = next
            next.scheduled = []
            return next
        }
        guard !pending.isEmpty || !step.scheduled.isEmpty else { return next }
        var next = next
        next.scheduled = Self.scheduled(pending, after: &step)
        if !step.scheduled.isEmpty || step.overScheduled { next.step = step }
        return next
    }

    /// `pending` after what `step` cancelled and scheduled: a cancelled id is taken out, a
    /// new event takes the place of one with its id, and each new one gets a key no
    /// event still pending has (written back into `step`). Keys stay small: one above the
    /// largest pending, so a key may come back once its event is gone (the runner arms
    /// what the step names anew).
    static func scheduled(_ pending: [MachineScheduledEvent], after step: inout MachineStep) -> [MachineScheduledEvent] {
        var result = pending
        if !step.cancelled.isEmpty {
            let ids = Set(step.cancelled)
            result.removeAll { $0.id.map(ids.contains) ?? false }
        }
        for index in step.scheduled.indices {
            if let id = step.scheduled[index].id { result.removeAll { $0.id == id } }
            step.scheduled[index].key = nextKey(after: result)
            result.append(step.scheduled[index])
        }
        if result.count > scheduledLimit { step.overScheduled = true }
        return result
    }

    /// One above the largest key of `pending`; past `MachineScheduledEvent.largestKey`
    /// (a state from elsewhere), the smallest key not in use.
    private static func nextKey(after pending: [MachineScheduledEvent]) -> Int {
        let largest = pending.map(\.key).max() ?? 0
        guard largest >= MachineScheduledEvent.largestKey else { return largest + 1 }
        let used = Set(pending.map(\.key))
        return (1...).first { !used.contains($0) }!
    }

    /// The most delayed events a state may hold. Past it the transition is applied and
    /// its step says `overScheduled` (a host suspends the Spin, as for a runaway loop):
    /// each one is a sleeping timer and rides in every copy of the state.
    public static var scheduledLimit: Int { 1000 }
}
