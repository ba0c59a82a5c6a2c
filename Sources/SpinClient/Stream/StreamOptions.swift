import Foundation

/// How a state stream connects, notices a dead connection and reconnects.
public struct StreamOptions: Sendable, Hashable {
    /// The wait between reconnection attempts.
    public var reconnect: ReconnectPolicy
    /// Seconds a connection attempt may take before it counts as failed.
    public var connectTimeoutSeconds: Int
    /// Seconds without any frame after which the connection counts as lost. The server
    /// pings idle streams every 30 s by default, so 75 s spans two missed pings.
    public var idleTimeoutSeconds: Int
    /// Whether the stream asks for state deltas (`?delta=json-patch`): after the first
    /// whole state, the server sends each state as a JSON Patch from the one before, which
    /// the stream applies; it hands on whole states either way. On by default: a large
    /// state with small changes costs a fraction of the bytes. Off: every message carries
    /// the whole state. (A server that predates deltas ignores the parameter and sends
    /// whole states, which the stream takes as well.)
    public var deltas: Bool

    /// Options with every default: the default back-off, 10 s to connect, 75 s of silence,
    /// deltas.
    public init(reconnect: ReconnectPolicy = ReconnectPolicy(), connectTimeoutSeconds: Int = 10,
                idleTimeoutSeconds: Int = 75, deltas: Bool = true) {
        self.reconnect = reconnect
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.deltas = deltas
    }
}

/// Exponential back-off with jitter: the first retry waits `initialDelay`, each further
/// one `multiplier` times longer, never more than `maximumDelay`; each wait is then
/// spread by up to ±`jitter` of itself, so that many clients cut off at once by a
/// restart do not all come back in the same instant.
public struct ReconnectPolicy: Sendable, Hashable {
    /// The wait before the first retry (100 ms: a restart on the same host is that quick).
    public var initialDelay: Duration
    /// The longest wait (5 s: a client notices a recovered server within seconds).
    public var maximumDelay: Duration
    /// How much longer each wait is than the one before.
    public var multiplier: Double
    /// The fraction (0...1) by which a wait is randomly shortened or lengthened.
    public var jitter: Double

    /// A policy; `jitter` is clamped to 0...1.
    public init(initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(5),
                multiplier: Double = 2, jitter: Double = 0.2) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The wait before retry number `attempt` (0 for the first), with `random` in -1...1
    /// choosing where in the jitter band it falls.
    public func delay(attempt: Int, random: Double) -> Duration {
        let initial = Self.seconds(initialDelay)
        let ceiling = Self.seconds(maximumDelay)
        let grown = initial * pow(multiplier, Double(max(attempt, 0)))
        let base = min(grown.isFinite ? grown : ceiling, ceiling)
        let spread = base * (1 + jitter * min(max(random, -1), 1))
        return .nanoseconds(Int64((max(spread, 0) * 1e9).rounded()))
    }

    /// The wait before retry number `attempt`, at a random place in the jitter band.
    func delay(attempt: Int) -> Duration {
        delay(attempt: attempt, random: Double.random(in: -1...1))
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
