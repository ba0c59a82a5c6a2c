import Dispatch

extension DispatchTimeInterval {
    /// `duration` as Dispatch counts time (nanoseconds; a negative duration is zero), for
    /// timers and `asyncAfter` on a Dispatch queue.
    package init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(Int(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)))
    }
}

extension Duration {
    /// The duration in seconds, fractions included (for logs and metrics).
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
