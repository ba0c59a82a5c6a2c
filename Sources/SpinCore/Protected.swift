#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`: the package's one lock type (`package`, so
/// SpinNet, SpinServer, SpinTesting and the tests share it). A handle: copies share the
/// value and the lock, which live in one object (the mutex in its tail, so a lock costs
/// one allocation, not two: idle connections hold several).
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
package struct Protected<Value>: @unchecked Sendable {
    /// The value (the header) and the mutex (the one element), touched only between
    /// lock and unlock.
    @usableFromInline final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }

    @usableFromInline let storage: Storage

    package init(_ value: Value) {
        let buffer = Storage.create(minimumCapacity: 1) { _ in value }
        storage = unsafeDowncast(buffer, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        // The elements are the object's tail: their address is fixed for its life.
        let mutex = storage.withUnsafeMutablePointerToElements { $0 }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.header)
    }
}
