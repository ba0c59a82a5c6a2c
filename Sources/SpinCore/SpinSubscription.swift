import Synchronization

/// Detaches something attached to a Gear or a loop (an observer, a Gear handler).
/// Cancelling twice is harmless: the first call runs the detaching, later ones nothing.
///
/// One object per subscription (a flag and the closure; no lock): a hosted Spin holds
/// several for as long as it is awake.
public final class SpinSubscription: Sendable {
    private let cancelled = Atomic<Bool>(false)
    private let onCancel: @Sendable () -> Void

    package init(_ onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        onCancel()
    }
}
