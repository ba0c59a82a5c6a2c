import Logging
import SpinCore
import SpinConcurrency

/// Counts and logs the times the listener paused because `limits.maxConnections`
/// connections were open (new ones wait in the kernel's backlog until one closes).
/// Every pause is counted in `spin_connections_limited_total`; the log gets at most
/// one warning per `interval`, saying how many pauses it stands for, so a server held
/// at its limit does not flood its own log.
final class ConnectionLimitReporter: Sendable {
    private struct Window {
        var lastLogged: ContinuousClock.Instant?
        var unlogged = 0
    }

    private let metrics: Metrics
    private let logger: Logger
    private let maxConnections: Int
    private let interval: Duration
    private let window = Protected(Window())

    /// `interval`: 10 s, often enough to see an episode begin, rare enough to stay
    /// readable under a sustained flood.
    init(metrics: Metrics, logger: Logger, maxConnections: Int, interval: Duration = .seconds(10)) {
        self.metrics = metrics
        self.logger = logger
        self.maxConnections = maxConnections
        self.interval = interval
    }

    /// The listener paused with `open` connections open.
    func limitReached(open: Int, now: ContinuousClock.Instant = .now) {
        metrics.connectionLimited()
        guard let pauses = takeLogTurn(now: now) else { return }
        logger.warning("""
            connection limit reached: \(open) open (limits.maxConnections \(maxConnections)); \
            new connections wait in the backlog until one closes \
            (\(pauses) time\(pauses == 1 ? "" : "s") since the last message)
            """)
    }

    /// The pauses a log line now stands for, or nil while the last line is too recent.
    func takeLogTurn(now: ContinuousClock.Instant) -> Int? {
        window.withLock { window in
            window.unlogged += 1
            if let last = window.lastLogged, now < last.advanced(by: interval) { return nil }
            defer { window = Window(lastLogged: now, unlogged: 0) }
            return window.unlogged
        }
    }
}
