#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread that runs an event loop (the server's network threads) and offers the work
/// it triggers a place at the end of its current turn: after every ready socket was
/// read and handled, before the thread waits again.
package protocol TurnScheduler: AnyObject, Sendable {
    /// Runs `body` on this thread at the end of the current turn.
    func atEndOfTurn(_ body: @escaping () -> Void)

    /// Runs `body` on this scheduler's thread in a coming turn, after the work handed to
    /// it before; callable from any thread. What a thread hands over while it gathers
    /// (`HandOffs`: another scheduler's thread at the end of its turn, a journal's thread
    /// telling a sync's acknowledgements) travels with the rest of its hand-offs, in one
    /// batch (one lock, at most one wake-up), not one wake-up per piece.
    func enqueue(_ body: @escaping @Sendable () -> Void)

    /// Runs `work` on this scheduler's thread in a coming turn, in order, after the work
    /// handed to it before: a batch gathered by `HandOffs`, handed over with one lock.
    func enqueue(contentsOf work: [@Sendable () -> Void])

    /// True while the scheduler's thread waits for something to do: work handed to it
    /// then costs a wake-up (and, on a busy core, a wait for the thread to be scheduled).
    var isIdle: Bool { get }
}

/// The calling thread's `TurnScheduler`, if it runs an event loop: what lets a Spin run
/// to completion on the thread that read its event. A loop that is given events by many
/// requests in one turn applies them all in one pass at its end, and a journal writes
/// them all in one `write` after that, instead of once per request — and no other
/// thread is woken for either. On any other thread (a caller embedding SpinCore, a
/// feedback's effect) there is none, and work goes to the Spin's queue as it always did.
package enum EndOfTurn {
    /// The holder of a thread's scheduler (what `pthread_setspecific` stores).
    private final class Holder {
        let scheduler: any TurnScheduler
        init(_ scheduler: any TurnScheduler) { self.scheduler = scheduler }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// Makes `scheduler` the calling thread's for the rest of its life (an event loop
    /// calls it once, first thing on its thread).
    package static func install(_ scheduler: any TurnScheduler) {
        let holder = Unmanaged.passRetained(Holder(scheduler)).toOpaque()
        precondition(pthread_setspecific(key, holder) == 0, "pthread_setspecific failed")
    }

    /// The schedulers that run the process's event loops, in the order they started: the
    /// homes `nextHome()` gives out.
    private static let homes = Protected(Homes())
    private struct Homes {
        var schedulers: [any TurnScheduler] = []
        var next = 0
    }

    /// Makes `scheduler` one of the homes `nextHome()` gives out (an event loop, as it
    /// starts).
    package static func addHome(_ scheduler: any TurnScheduler) {
        homes.withLock { $0.schedulers.append(scheduler) }
    }

    /// The next of the process's event loops, in turn (nil while none runs): the home of
    /// a Spin's loop made now. While the home is busy, events that another loop's
    /// connections bring the Spin are handed to it once per turn, and applied and
    /// journaled there, so that busy threads do not contend for a Spin and its state
    /// stays in one core's cache (`SpinLoop`, "The executor").
    package static func nextHome() -> (any TurnScheduler)? {
        homes.withLock { homes in
            guard !homes.schedulers.isEmpty else { return nil }
            defer { homes.next = (homes.next + 1) % homes.schedulers.count }
            return homes.schedulers[homes.next % homes.schedulers.count]
        }
    }

    /// The calling thread's scheduler; nil on a thread that runs no event loop.
    package static var current: (any TurnScheduler)? {
        guard let holder = pthread_getspecific(key) else { return nil }
        return Unmanaged<Holder>.fromOpaque(holder).takeUnretainedValue().scheduler
    }
}
