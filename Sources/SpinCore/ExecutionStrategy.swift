/// What a feedback does with an effect still running for an older state when a newer
/// state arrives.
public enum ExecutionStrategy: Sendable, Hashable {
    /// The effect for the older state is cancelled when the newer state reaches the
    /// feedback (the default, as `flatMapLatest`): the events it handed over before are
    /// applied, none it produces afterwards. A synchronous effect is never cancelled.
    case cancelOnNewState
    /// As `cancelOnNewState`, and stricter: an event is applied only if no newer state
    /// has reached the feedback by the time the loop applies it, not only by the time the
    /// effect hands it over. An event still waiting behind events that make newer states
    /// is dropped, even a synchronous effect's. For a regulation that must never act on
    /// a stale state: after a batch of decrements, a counter that asks to increase below
    /// 10 leaves one request in flight, not one per state of the batch.
    case latestStateOnly
    /// Effects for older states run to their end and everything they produce is applied
    /// (as `flatMap`/merge). Only safe when the reducer tolerates out-of-date events.
    case continueOnNewState
}
