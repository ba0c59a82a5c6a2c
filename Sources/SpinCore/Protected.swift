#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`: the package's one lock type (`package`, so
/// SpinNet, SpinServer, SpinTesting and the tests share it).
///
/// Why not `Synchronization.Mutex`: on Linux it is a futex lock inside the (uninstrumented)
/// standard library, whose contended path hands the lock over inside the kernel (PI
/// futex), so the thread sanitizer cannot see it and reports every access it guards as a
/// race. A pthread mutex is intercepted by the sanitizer, so the CI run of the tests
/// under `--sanitize=thread` only reports real races.
///
/// Keep the body of `withLock` short: no blocking syscalls, and callbacks only where the
/// caller documents why (SpinFeed hands transitions to its subscribers under its lock).
///
/// `withLock` is `@inlinable`: its callers are in other modules (SpinNet's connections,
/// SpinServer's feeds), where an unspecialised generic call would cost more than the lock.
package final class Protected<Value>: @unchecked Sendable {
    // `value` is only touched between lock and unlock of `mutex`.
    @usableFromInline var value: Value
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
