/// What a feedback does with an effect still running for an older state when a newer
/// state arrives.
public enum ExecutionStrategy: Sendable, Hashable {
    /// The effect for the older state is cancelled when the newer state reaches the
    /// feedback (the default, as `flatMapLatest`): the events it handed over before are
    /// applied, none it produces afterwards. A synchronous effect is never cancelled.
    case cancelOnNewState
    /// Effects for older states run to their end and everything they produce is applied
    /// (as `flatMap`/merge). Only safe when the reducer tolerates out-of-date events.
    case continueOnNewState
}
