/// One applied event: the event, the state the reducer made of it, and the number of
/// events the loop has applied so far (this one included).
public struct Transition<State: Sendable, Event: Sendable>: Sendable {
    public let event: Event
    public let state: State
    /// 1 for the first applied event of a loop started at sequence 0; monotonic.
    public let sequence: UInt64

    public init(event: Event, state: State, sequence: UInt64) {
        self.event = event
        self.state = state
        self.sequence = sequence
    }
}

extension Transition: Equatable where State: Equatable, Event: Equatable {}
