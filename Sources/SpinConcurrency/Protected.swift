#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import CLinux
#endif

/// A value guarded by a lock: the package's one lock type (`package`, so SpinNet,
/// SpinServer, SpinTesting and the tests share it). A handle: copies share the value and
/// the lock, which live in one object (the lock word in its tail, so a lock costs one
/// allocation, not two: idle connections and awake Spins hold several).
///
/// On Linux the lock is one 32-bit futex word (`CLinux_lock`: 4 bytes, where a
/// `pthread_mutex_t` takes 40, and about ten of them per awake Spin); elsewhere a
/// `pthread_mutex_t`.
///
/// Why not `Synchronization.Mutex`: on Linux it is a futex lock inside the (uninstrumented)
/// standard library, whose contended path hands the lock over inside the kernel (PI
/// futex), so the thread sanitizer cannot see it and reports every access it guards as a
/// race. The futex word here is taken and released with C11 acquire/release atomics in an
/// instrumented C module (and a pthread mutex is intercepted), so the CI run of the tests
/// under `--sanitize=thread` only reports real races.
///
/// Keep the body of `withLock` short: no blocking syscalls, and callbacks only where the
/// caller documents why (SpinFeed hands transitions to its subscribers under its lock).
///
/// `withLock` is `@inlinable`: its callers are in other modules (SpinNet's connections,
/// SpinServer's feeds), where an unspecialised generic call would cost more than the lock.
package struct Protected<Value>: @unchecked Sendable {
    #if os(Linux)
    @usableFromInline typealias Lock = UInt32
    #else
    @usableFromInline typealias Lock = pthread_mutex_t
    #endif

    /// The value (the header) and the lock (the one element), touched only between lock
    /// and unlock.
    @usableFromInline final class Storage: ManagedBuffer<Value, Lock> {
        deinit {
            _ = withUnsafeMutablePointerToElements { lock in
                #if !os(Linux)
                pthread_mutex_destroy(lock)
                #endif
                lock.deinitialize(count: 1)
            }
        }
    }

    @usableFromInline let storage: Storage

    package init(_ value: Value) {
        let buffer = Storage.create(minimumCapacity: 1) { _ in value }
        storage = unsafeDowncast(buffer, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { lock in
            #if os(Linux)
            lock.initialize(to: 0)
            #else
            lock.initialize(to: pthread_mutex_t())
            pthread_mutex_init(lock, nil)
            #endif
        }
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        // The elements are the object's tail: their address is fixed for its life.
        let lock = storage.withUnsafeMutablePointerToElements { $0 }
        #if os(Linux)
        CLinux_lock(lock)
        defer { CLinux_unlock(lock) }
        #else
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        #endif
        return try body(&storage.header)
    }
}
