import SpinCore

/// A sending Spin's side of Gear delivery: collects the Gear events its feedbacks
/// propagate while they are given a transition's state, so that the transition is
/// journaled with them (its outbox), in the same write.
///
/// `begin(sequence)` runs when the Spin applied the event at `sequence` (before its
/// feedbacks get the new state), `end()` after they got it, both on the Spin's executor.
/// A Gear event whose cause is that state, propagated in between, is kept for the
/// transition (`add`); any other is not (the router records it on its own).
package final class GearCapture: Sendable {
    package let spin: String
    private let state: Protected<State>

    private struct State {
        /// The Spin has no history yet: what its feedbacks propagate for its initial
        /// state is sent, once (until its first transition).
        var initial: Bool
        /// The sequence whose state the feedbacks are being given, between `begin` and `end`.
        var delivering: UInt64?
        var outputs: [GearOutput] = []
        /// Why a Gear event of the transition being delivered did not encode.
        var failure: String?
    }

    /// - Parameter initial: the Spin has no history (sequence 0, nothing in its outbox):
    ///   the Gear events of its initial state are sent (`takesInitial`).
    package init(spin: String, initial: Bool = false) {
        self.spin = spin
        state = Protected(State(initial: initial))
    }

    /// Whether a Gear event of the state given again at `cause` is the initial state's of a
    /// Spin without history: sent (once) rather than dropped.
    func takesInitial(_ cause: GearCause) -> Bool {
        state.withLock { state in
            guard state.initial, cause.sequence == 0, state.delivering == nil else { return false }
            return true
        }
    }

    /// The Spin suspended: a state it is given again from now on is not its first.
    func endInitial() {
        state.withLock { $0.initial = false }
    }

    func begin(_ sequence: UInt64) {
        state.withLock { state in
            state.initial = false
            state.delivering = sequence
            state.outputs.removeAll(keepingCapacity: true)
            state.failure = nil
        }
    }

    /// The Gear events the transition's state propagated, and whether one failed to
    /// encode (then the transition must not be journaled: the Spin goes back).
    func end() -> (outputs: [GearOutput], failure: String?) {
        state.withLock { state in
            defer {
                state.delivering = nil
                state.outputs = []
                state.failure = nil
            }
            return (state.outputs, state.failure)
        }
    }

    /// Keeps `output` for the transition at `cause.sequence` if its state is being given
    /// now; false otherwise.
    func add(_ output: GearOutput, cause: GearCause) -> Bool {
        state.withLock { state in
            guard cause.fresh, state.delivering == cause.sequence else { return false }
            state.outputs.append(output)
            return true
        }
    }

    /// A Gear event of the state being given now did not encode: true when it belongs to
    /// the transition being delivered (which then fails), false otherwise.
    func fail(_ reason: String, cause: GearCause?) -> Bool {
        state.withLock { state in
            guard let cause, cause.fresh, state.delivering == cause.sequence else { return false }
            state.failure = state.failure ?? reason
            return true
        }
    }
}

/// A catching Spin's side of Gear delivery: what it consumed of other Spins' outboxes
/// that no journaled event of it says yet (events its reducer declined, positions the
/// router skipped), handed to its next journaled event (`HostedTransition.consumed`).
package final class GearConsumption: Sendable {
    private let unrecorded = Protected<[String: UInt64]>([:])

    package init() {}

    /// Notes that the Spin consumed `sender`'s outbox up to `position`.
    func note(_ sender: String, _ position: UInt64) {
        unrecorded.withLock { $0[sender] = max($0[sender] ?? 0, position) }
    }

    /// What to journal with the next event, and forgets it.
    func take() -> [String: UInt64] {
        unrecorded.withLock { unrecorded in
            guard !unrecorded.isEmpty else { return [:] }
            defer { unrecorded = [:] }
            return unrecorded
        }
    }

    /// The Spin went back to its durable state: what was noted since belongs to states
    /// it left (the router delivers those events again).
    func forget() {
        unrecorded.withLock { $0 = [:] }
    }
}
