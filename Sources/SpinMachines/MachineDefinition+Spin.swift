import SpinCore

extension MachineDefinition {
    /// The machine as a Spin: `transition(_:_:)` as its reducer, and feedbacks for what
    /// the pure reducer cannot do itself.
    ///
    /// - `after` timers: while a state with `after` entries is active, a timer per delay
    ///   sleeps on `clock`, started when the state is entered and cancelled when it is
    ///   left (a transition that stays in it, such as a targetless one or a change of a
    ///   child state, keeps the timer running). When it fires it emits
    ///   `MachineEvent.after(state:delay:)`, which the reducer applies only while the state
    ///   is still active, so the journal replays it like any other event. A loop that
    ///   starts (or restarts) from a state starts the timers of every active state anew.
    /// - delayed `raise`: the events a state holds in `scheduled` are sent to the machine
    ///   after their delay, as `MachineEvent.scheduled(_:)` (journaled then, like any
    ///   event), unless a `cancel` with the same id takes them out first. They are part of
    ///   the state, so a loop that starts (or restarts) from a state sends what it holds,
    ///   each after its whole delay, as `after` timers start anew.
    /// - `gear.propagate`: each new state's `step.propagations` are pushed into the named
    ///   Gears, once. The state a loop starts from propagates nothing, so a restart never
    ///   repeats what the last transition before it sent.
    /// - `catch`: every declared Gear's events of a caught type become machine events of
    ///   the mapped type, with the Gear event's other members as payload.
    ///
    /// - Parameters:
    ///   - gears: the Gears by name. A Gear the machine declares and this lacks is
    ///     neither propagated to nor caught from (validate with `hostGears:` to rule it out).
    ///   - clock: what `after` timers sleep on (tests pass a manual clock).
    ///   - initialState: where the loop starts; the machine's initial state when nil.
    public func spin(gears: [String: Gear<MachineEvent>] = [:],
                     clock: any Clock<Duration> = ContinuousClock(),
                     initialState: MachineState? = nil) -> Spin<MachineState, MachineEvent> {
        let definition = self
        let timed = nodes.values.contains { !$0.after.isEmpty }
        // The Gears given are usually exactly those declared: then no copy of the table.
        let used = gears.keys.allSatisfy { self.gears[$0] != nil } ? gears : gears.filter { self.gears[$0.key] != nil }
        // Each used Gear the machine catches events of, with what it catches.
        let catching = used.sorted(by: { $0.key < $1.key }).compactMap { name, gear -> (Gear<MachineEvent>, [String: String])? in
            guard let catches = self.gears[name], !catches.isEmpty else { return nil }
            return (gear, catches)
        }
        var feedbacks: [Feedback<MachineState, MachineEvent>] = []
        // Exactly as many as follow: an array grown one by one would keep up to twice
        // that in every Spin.
        feedbacks.reserveCapacity((timed ? 1 : 0) + (schedulesEvents ? 1 : 0) + (used.isEmpty ? 0 : 1) + catching.count)
        if timed {
            feedbacks.append(Feedback { context in MachineTimerRunner(definition: definition, clock: clock, context: context) })
        }
        if schedulesEvents {
            feedbacks.append(Feedback { context in MachineScheduleRunner(clock: clock, context: context) })
        }
        if !used.isEmpty {
            feedbacks.append(Feedback { context in MachinePropagationRunner(gears: used, label: context.host.label,
                                                                            delivery: context.host.delivery) })
        }
        for (gear, catches) in catching {
            feedbacks.append(Feedback(attachedTo: gear, propagating: { (caught: MachineEvent) -> MachineEvent? in
                catches[caught.type].map { MachineEvent(type: $0, payload: caught.payload) }
            }))
        }
        // A partial reducer: an event without a transition is ignored (not journaled, no
        // sequence), and its reply says `no_transition` (DESIGN §3).
        return Spin(initialState: initialState ?? self.initialState, feedbacks: feedbacks,
                    reducer: Reducer(decliningInPlace: { state, event in
                        // In place: the loop then looks up no optional state per event.
                        guard let next = definition.transition(state, event) else { return false }
                        state = next
                        return true
                    }))
    }
}
