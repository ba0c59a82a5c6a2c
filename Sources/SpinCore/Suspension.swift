/// Why and where a `SpinLoop` stopped applying events without stopping: it keeps its
/// state, its `states` sequences and its observers, and runs again on `resume()`.
public struct Suspension: Sendable, Equatable {
    public enum Reason: Sendable, Equatable {
        /// Feedbacks and Gears produced more events in a row than the loop's feedback
        /// budget (the associated value) without an external event: a loop that does not
        /// settle, such as two levels set a whole `Int` range apart.
        case feedbackBudget(Int)
        /// `suspend(reason:)` was called, with what its caller said (a host holding a
        /// Spin while its storage fails, an operator).
        case requested(String)
    }

    public let reason: Reason
    /// The sequence of the state the loop holds while suspended.
    public let sequence: UInt64

    public init(reason: Reason, sequence: UInt64) {
        self.reason = reason
        self.sequence = sequence
    }
}

/// What `SpinLoop.emit` did with external events.
public enum EmitResult: Sendable, Equatable {
    /// Enqueued: applied in order unless the loop stops or suspends before.
    case accepted
    /// Refused whole: the external events waiting plus these would exceed the limit.
    case inboxFull
    /// Refused: the loop is suspended until `resume()`.
    case suspended
    /// Refused: the loop is stopped.
    case stopped
    /// Nothing was given.
    case empty
}
