import SpinCore
import SpinWire
import SpinJSON

/// A Spin hosted without a loop (`UnrecoverableSpin`, `SleepingSpin`): it applies nothing,
/// observes nothing, holds nothing and runs nothing. What such a Spin does not do, once.
protocol LooplessSpin: HostedSpin {}

extension LooplessSpin {
    var pendingEvents: Int { 0 }
    var awaitsTime: Bool { false }
    /// Listed and reported by this server (it is not another node's).
    var isPrepared: Bool { true }
    var isFaulted: Bool { false }
    var isStopped: Bool { true }

    /// Unreachable but for a race: every batch is decoded by the Spin it goes to.
    func submit(_ batch: EventBatch, inboxLimit: Int, withState: Bool,
                onApplied: @escaping @Sendable (AppliedEvent?) -> Void) -> SubmitResult { .stopped }
    func observe(_ handler: @escaping @Sendable (HostedTransition) -> Void,
                 unencodable: @escaping @Sendable (String) -> Void) -> SpinSubscription { SpinSubscription {} }
    func observe(_ handler: @escaping @Sendable (HostedTransition) -> Void, afterFeedbacks: @escaping @Sendable () -> Void,
                 unencodable: @escaping @Sendable (String) -> Void) -> SpinSubscription { SpinSubscription {} }
    func refuse(unencodable reason: String) {}
    func holdBack() {}
    func onSuspensionChange(_ handler: @escaping @Sendable (Suspension?) -> Void) -> SpinSubscription { SpinSubscription {} }
    func hold(rollback: @escaping @Sendable () -> (sequence: UInt64, state: JSONValue, dropped: Int),
              then: @escaping @Sendable () -> Void) { then() }
    func release() {}
    func prepare(feedbackBudget: Int) {}
    func start() {}
    func stop() {}
    func stopAndWait() {}
    func suspend(reason: String) -> Bool { false }
    func resume(applying batch: EventBatch?, onApplied: @escaping @Sendable (AppliedEvent?) -> Void) -> Bool { false }
}
