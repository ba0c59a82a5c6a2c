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
        if !step.scheduled.isEmpty { next.step = step }
        return next
    }

    /// `pending` after what `step` cancelled and scheduled: a cancelled id is taken out, a
    /// new event takes the place of one with its id, and each new one gets a key above
    /// every key still pending (written back into `step`).
    static func scheduled(_ pending: [MachineScheduledEvent], after step: inout MachineStep) -> [MachineScheduledEvent] {
        var result = pending
        if !step.cancelled.isEmpty {
            let ids = Set(step.cancelled)
            result.removeAll { $0.id.map(ids.contains) ?? false }
        }
        var key = (result.map(\.key).max() ?? 0) + 1
        for index in step.scheduled.indices {
            if let id = step.scheduled[index].id { result.removeAll { $0.id == id } }
            step.scheduled[index].key = key
            key += 1
            result.append(step.scheduled[index])
        }
        return result
    }
}
