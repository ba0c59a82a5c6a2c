#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Work a thread hands to event loops (`TurnScheduler.enqueue`) while it gathers it
/// (`gathering`): kept per loop and handed over when the gathering ends, one batch per
/// loop — one lock and at most one wake-up, however many pieces there were.
///
/// An event loop gathers what the end of its turn hands to other loops (a Spin's events
/// for its home, acknowledgements for another loop's connections). A journal's thread
/// gathers what one sync makes durable: the acknowledgements of every request it
/// covered reach each loop together, instead of one lock and one wake-up each, while
/// the loop is busy serving other connections.
///
/// What runs inside `gathering` must not wait for work it handed over: that work is
/// delivered only when the gathering ends.
package final class HandOffs {
    /// Open gatherings on this thread (they nest: the outermost one hands over).
    private var depth = 0
    private var batches: [(scheduler: any TurnScheduler, work: [@Sendable () -> Void])] = []

    private init() {}

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let made = pthread_key_create(&key) { pointer in
            #if canImport(Glibc)
            guard let pointer else { return }
            #endif
            Unmanaged<HandOffs>.fromOpaque(pointer).release()
        }
        precondition(made == 0, "pthread_key_create failed")
        return key
    }()

    /// The calling thread's instance (made on first use, released with the thread).
    private static var forThread: HandOffs {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<HandOffs>.fromOpaque(pointer).takeUnretainedValue()
        }
        let handOffs = HandOffs()
        precondition(pthread_setspecific(key, Unmanaged.passRetained(handOffs).toOpaque()) == 0,
                     "pthread_setspecific failed")
        return handOffs
    }

    /// Runs `body`; what it hands to schedulers that gather (`current`) is handed over,
    /// one batch per scheduler in the order each was first given work, when it returns.
    package static func gathering<Result>(_ body: () throws -> Result) rethrows -> Result {
        let handOffs = forThread
        handOffs.depth += 1
        defer {
            handOffs.depth -= 1
            if handOffs.depth == 0 { handOffs.send() }
        }
        return try body()
    }

    /// The calling thread's open gathering; nil outside `gathering` (work then goes at once).
    package static var current: HandOffs? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        let handOffs = Unmanaged<HandOffs>.fromOpaque(pointer).takeUnretainedValue()
        return handOffs.depth > 0 ? handOffs : nil
    }

    /// Keeps `body` for `scheduler` until the gathering ends.
    package func add(_ body: @escaping @Sendable () -> Void, for scheduler: any TurnScheduler) {
        if let index = batches.firstIndex(where: { $0.scheduler === scheduler }) {
            batches[index].work.append(body)
        } else {
            batches.append((scheduler, [body]))
        }
    }

    /// Hands each scheduler its batch. The schedulers stay listed (most threads hand to
    /// the same few loops every time), their work emptied.
    private func send() {
        for index in batches.indices where !batches[index].work.isEmpty {
            let work = batches[index].work
            batches[index].work.removeAll(keepingCapacity: true)
            batches[index].scheduler.enqueue(contentsOf: work)
        }
    }
}
