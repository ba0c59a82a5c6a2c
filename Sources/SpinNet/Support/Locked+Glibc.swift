#if canImport(Glibc)
import Glibc

/// A value behind a pthread mutex, for the little state SpinNet shares across threads
/// (a connection's output account, the server's registry and counters).
///
/// Why not `Synchronization.Mutex`: on Linux its contended path hands the lock over
/// inside the kernel (PI futex), which ThreadSanitizer cannot see, so every contended
/// `withLock` shows up as a false data race; pthread mutexes are intercepted by TSan,
/// keeping `swift test --sanitize=thread` meaningful for this module.
package final class Locked<Value> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock. Keep it short: no syscalls, no
    /// callbacks.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// Sendable when its value is: the value is only reached under the lock.
extension Locked: @unchecked Sendable where Value: Sendable {}
#endif
