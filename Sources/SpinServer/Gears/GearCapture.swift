import SpinCore
import SpinConcurrency

/// A sending Spin's side of Gear delivery: collects the Gear events its feedbacks
/// propagate while they are given a transition's state, so that the transition is
/// journaled with them (its outbox), in the same write.
///
/// `begin(sequence)` runs when the Spin applied the event at `sequence` (before its
/// feedbacks get the new state), `end()` after they got it, both on the Spin's executor.
/// A Gear event whose cause is that state, propagated in between, is kept for the
/// transition (`add`); one whose cause was recorded before is not (the router records it
/// on its own, after its cause); one whose cause was never recorded (a state the server
/// refused: too large, or not encodable), or propagated while the Spin is faulted (going
/// back to its durable state), is dropped: no Spin may catch an event whose cause is
/// taken back. A handle: copies share the state (one object, the lock's, per sending Spin).
package struct GearCapture: Sendable {
    package let spin: String
    private let state: Protected<State>
    /// Whether the Spin refused a state and is going back to its durable one.
    private let faulted: @Sendable () -> Bool
    private let refusing: (@Sendable (String) -> Void)?

    /// What becomes of a propagated Gear event.
    enum Disposition: Equatable {
        /// Kept for the transition being delivered (journaled with it).
        case kept
        /// Its cause was recorded before: recorded on its own.
        case alone
        /// Its cause will never be recorded: dropped.
        case dropped
    }

    private struct State {
        /// The Spin has no history yet: what its feedbacks propagate for its initial
        /// state is sent, once (until its first transition).
        var initial: Bool
        /// The sequence whose state the feedbacks are being given, between `begin` and `end`.
        var delivering: UInt64?
        var outputs: [GearOutput] = []
        /// Why a Gear event of the transition being delivered did not encode.
        var failure: String?
        /// The last sequence whose transition was handed on (to the journal), or that the
        /// Spin went back to.
        var recorded: UInt64
    }

    /// - Parameters:
    ///   - initial: the Spin has no history (sequence 0, nothing in its outbox): the Gear
    ///     events of its initial state are sent (`takesInitial`).
    ///   - recorded: the sequence the Spin starts from.
    ///   - faulted: whether the Spin refused a state and is going back (`HostedSpin.isFaulted`).
    /// - Parameter refuse: suspends the Spin for a Gear event of its that does not encode
    ///   outside a transition (`refuse(unencodable:)`).
    package init(spin: String, initial: Bool = false, recorded: UInt64 = 0,
                 faulted: @escaping @Sendable () -> Bool = { false },
                 refuse: (@Sendable (String) -> Void)? = nil) {
        self.spin = spin
        self.faulted = faulted
        self.refusing = refuse
        state = Protected(State(initial: initial, recorded: recorded))
    }

    /// The Spin propagated a Gear event that does not encode, apart from a transition: it
    /// is suspended with `reason` (with the capture, so that a Spin asleep or gone leaves
    /// nothing of this behind).
    func refuse(unencodable reason: String) { refusing?(reason) }

    /// Whether the Spin refused a state and is going back to its durable one: what it
    /// propagates meanwhile is dropped.
    var isFaulted: Bool { faulted() }

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

    /// Ends the delivery of the transition begun: `handOn` gets the Gear events its state
    /// propagated, or why one did not encode (then the transition must not be journaled:
    /// the Spin goes back). `handOn` runs under the capture's lock, so that an event
    /// propagated meanwhile for this state is recorded after the transition, never before.
    func end(_ handOn: ([GearOutput], _ failure: String?) -> Void) {
        state.withLock { state in
            defer {
                state.delivering = nil
                state.outputs = []
                state.failure = nil
            }
            if state.failure == nil, let delivering = state.delivering { state.recorded = delivering }
            handOn(state.outputs, state.failure)
        }
    }

    /// The Spin went back to its durable state at `sequence`: the transitions after it
    /// were not recorded.
    func rolledBack(to sequence: UInt64) {
        state.withLock { state in
            state.recorded = min(state.recorded, sequence)
            if let delivering = state.delivering, delivering > sequence {
                state.delivering = nil
                state.outputs = []
                state.failure = nil
            }
        }
    }

    /// What becomes of `output`, propagated for the state at `cause.sequence`: kept for
    /// the transition whose state is being given now, dropped when its cause will never be
    /// recorded (or the Spin is faulted), else recorded on its own.
    func add(_ output: GearOutput, cause: GearCause) -> Disposition {
        if faulted() { return .dropped }
        return state.withLock { state in
            guard cause.fresh else { return .alone }
            if state.delivering == cause.sequence {
                state.outputs.append(output)
                return .kept
            }
            return cause.sequence > state.recorded ? .dropped : .alone
        }
    }

    /// A Gear event propagated for the state at `cause` did not encode: `.kept` when it
    /// belongs to the transition being delivered (which then fails), `.dropped` when its
    /// cause will never be recorded, `.alone` otherwise (the Spin is suspended for it).
    func fail(_ reason: String, cause: GearCause?) -> Disposition {
        if faulted() { return .dropped }
        return state.withLock { state in
            guard let cause, cause.fresh else { return .alone }
            if state.delivering == cause.sequence {
                state.failure = state.failure ?? reason
                return .kept
            }
            return cause.sequence > state.recorded ? .dropped : .alone
        }
    }
}

/// A catching Spin's side of Gear delivery: what it consumed of other Spins' outboxes
/// that no journaled event of it says yet (events its reducer declined, positions the
/// router skipped), handed to its next journaled event (`HostedTransition.consumed`).
/// A handle: copies share what was noted (one object, the lock's, per catching Spin).
package struct GearConsumption: Sendable {
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
