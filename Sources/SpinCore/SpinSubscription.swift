
/// Detaches something attached to a Gear or a loop (an observer, a Gear handler).
/// Cancelling twice is harmless.
public final class SpinSubscription: Sendable {
    private let onCancel: Protected<(@Sendable () -> Void)?>

    package init(_ onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Protected(onCancel)
    }

    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }
}
