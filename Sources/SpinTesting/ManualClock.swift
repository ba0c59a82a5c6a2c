import SpinCore
import SpinConcurrency

/// A clock that only moves when a test says so. Effects that sleep on it (inject it as a
/// dependency, `any Clock<Duration>`) wake when `advance(by:)` passes their deadline, so a
/// test drives time without waiting for it.
public final class ManualClock: Clock, Sendable {
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock was made.
        public let offset: Duration

        public init(offset: Duration) { self.offset = offset }

        /// When the clock was made: where a test's timeline starts.
        public static let zero = Instant(offset: .zero)

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct Timeline {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
    }

    private let timeline = Protected(Timeline())

    public init() {}

    public var now: Instant { timeline.withLock { $0.now } }
    public var minimumResolution: Duration { .zero }

    /// The number of tasks sleeping on this clock now.
    public var sleepers: Int { timeline.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = timeline.withLock { timeline -> UInt64 in
            timeline.nextID += 1
            return timeline.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = timeline.withLock { timeline -> Bool in
                    if deadline <= timeline.now || Task.isCancelled { return true }
                    timeline.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return false
                }
                if resumeNow {
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        continuation.resume()
                    }
                }
            }
        } onCancel: {
            let sleeper = timeline.withLock { timeline -> Sleeper? in
                guard let index = timeline.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return timeline.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward, waking every sleeper whose deadline is passed, earliest first,
    /// then gives the woken tasks a chance to run.
    public func advance(by duration: Duration) async {
        let woken = timeline.withLock { timeline -> [Sleeper] in
            timeline.now = timeline.now.advanced(by: duration)
            let now = timeline.now
            let due = timeline.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            timeline.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in woken { sleeper.continuation.resume() }
        for _ in 0..<50 { await Task.yield() }
    }
}
