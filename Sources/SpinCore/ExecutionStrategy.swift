/// What a feedback does with an effect still running for an older state when a newer
/// state arrives.
public enum ExecutionStrategy: Sendable, Hashable {
    /// The effect for the older state is cancelled, and none of its events is applied
    /// once the newer state reached the feedback (the default, as `flatMapLatest`).
    case cancelOnNewState
    /// Effects for older states run to their end and everything they produce is applied
    /// (as `flatMap`/merge). Only safe when the reducer tolerates out-of-date events.
    case continueOnNewState
}
