#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system's monotonic clock (`CLOCK_MONOTONIC`) in whole nanoseconds: one vDSO call,
/// and readings that subtract as integers. What the request path times its stages with
/// (`ContinuousClock.Instant` is 16 bytes and its arithmetic goes through `Duration`).
package enum Monotonic {
    /// Now, in nanoseconds since an unspecified start (the same for the whole process).
    @inlinable
    package static var nanoseconds: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// `later - earlier`, or 0 when `later` is the earlier one (readings made on
    /// different threads).
    @inlinable
    package static func elapsed(from earlier: UInt64, to later: UInt64) -> UInt64 {
        later > earlier ? later - earlier : 0
    }
}
