/// One applied event: the event, the state the reducer made of it, and the number of
/// events the loop has applied so far (this one included).
public struct Transition<State: Sendable, Event: Sendable>: Sendable {
    public let event: Event
    public let state: State
    /// 1 for the first applied event of a loop started at sequence 0; monotonic.
    public let sequence: UInt64
    /// False for every event of an `emit(contentsOf:)` batch but its last: a journal
    /// writes a batch all or none, so it waits for the transition that ends it.
    public let endsBatch: Bool
    /// Who sent the event, as the code that emitted it named them (`emit(batch:origin:...)`):
    /// a host passes the authenticated subject of the request, so that the journal and
    /// the state stream can say who changed the state. Nil for events of feedbacks and
    /// Gears, and for events emitted without one.
    public let origin: String?
    /// For an event a host delivered from a routed Gear (`Gear.deliver`), its receipt:
    /// which Spin propagated it and at which position of that Spin's outbox, so that the
    /// host journals with the transition what the Spin consumed. Nil for every other.
    package let gearReceipt: GearReceipt?

    public init(event: Event, state: State, sequence: UInt64, endsBatch: Bool = true, origin: String? = nil) {
        self.init(event: event, state: state, sequence: sequence, endsBatch: endsBatch, origin: origin, gearReceipt: nil)
    }

    package init(event: Event, state: State, sequence: UInt64, endsBatch: Bool, origin: String?,
                 gearReceipt: GearReceipt?) {
        self.event = event
        self.state = state
        self.sequence = sequence
        self.endsBatch = endsBatch
        self.origin = origin
        self.gearReceipt = gearReceipt
    }
}

extension Transition: Equatable where State: Equatable, Event: Equatable {
    /// Equal events, states, sequences, batch ends and origins (the receipt is the host's
    /// bookkeeping, not part of what happened).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.event == rhs.event && lhs.state == rhs.state && lhs.sequence == rhs.sequence
            && lhs.endsBatch == rhs.endsBatch && lhs.origin == rhs.origin
    }
}
