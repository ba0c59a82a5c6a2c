import Dispatch
import SpinConcurrency

/// Work that must run one piece at a time, in the order it was submitted, run by
/// whichever thread finds the section free (run to completion): no thread hop when
/// nobody else is in it, and when somebody is, the work is queued for that thread to
/// run before it leaves (combining) and the submitter goes on at once.
///
/// A loop's reducer, observers and feedback delivery run in its section, and so do a
/// journal's writes: at the end of an event loop's turn (`EndOfTurn`), the network
/// thread that read the requests applies their events, writes them and answers, with
/// no other thread woken, when the Spin and the journal are free.
///
/// Submitted work runs in one of three ways:
/// - `run(_:)`: now on the caller's thread when the section is free (and it may run
///   inline), else after the work already in it, by the thread in it;
/// - `schedule(_:)`: never on the caller's thread: when the section is free, its queue
///   is asked to run it (for callers that hold a lock, or that must return first);
/// - `sync(_:)`: waits until the work has run (never call it from inside the section).
///
/// A thread that entered the section inline runs at most `inlineLimit` pieces of work
/// before it hands the rest to the queue, so that a stream of submissions from other
/// threads cannot keep it from its own work (its connections) for long.
///
/// With `inline` false every piece runs on `queue` (a loop given an executor of its own:
/// what it runs must run there).
package final class SerialSection: Sendable {
    /// Where work runs when it does not run on the submitter's thread.
    package let queue: DispatchQueue
    /// Whether a submitter may run work on its own thread.
    package let inline: Bool
    private let state = Protected(State())
    /// Pieces of work one inline entry runs at most before it hands over to `queue`.
    private let inlineLimit: Int

    private struct State {
        var busy = false
        var work: [@Sendable () -> Void] = []
    }

    package init(queue: DispatchQueue, inline: Bool = true, inlineLimit: Int = 64) {
        self.queue = queue
        self.inline = inline
        self.inlineLimit = max(1, inlineLimit)
    }

    /// Runs `body` in the section: at once on this thread when the section is free, else
    /// after everything submitted before it. Returns once `body` ran or was queued. The
    /// caller must hold no lock that work in the section may take.
    package func run(_ body: @escaping @Sendable () -> Void) {
        guard inline else { return schedule(body) }
        let enters = state.withLock { state -> Bool in
            if state.busy {
                state.work.append(body)
                return false
            }
            state.busy = true
            return true
        }
        guard enters else { return }
        body()
        drain(limit: inlineLimit)
    }

    /// Runs `body` in the section, after everything submitted before it, never on this
    /// thread: safe under a lock and from inside the section.
    package func schedule(_ body: @escaping @Sendable () -> Void) {
        let wakes = state.withLock { state -> Bool in
            state.work.append(body)
            guard !state.busy else { return false }
            state.busy = true
            return true
        }
        if wakes { queue.async { [self] in drain(limit: .max) } }
    }

    /// Runs `body` in the section and waits until it has run. Never from inside it.
    package func sync<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try Self.wait(for: body, submittedBy: schedule)
    }

    /// Hands `body` to `submit` (which runs it once, on another thread) and waits until it
    /// has run: `sync`, for submitters of a section's owner (a journal that keeps some of
    /// its work off network threads).
    package static func wait<T: Sendable>(for body: @escaping @Sendable () throws -> T,
                                          submittedBy submit: (@escaping @Sendable () -> Void) -> Void) throws -> T {
        let result = Protected<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit {
            result.withLock { $0 = Result { try body() } }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// `sync` for work that does not throw.
    package func sync<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        // The throwing form never throws for a body that cannot.
        try! sync { () throws -> T in body() }
    }

    /// Runs queued work until there is none (the section is then free), or until `limit`
    /// pieces ran: then the queue goes on with the rest and this thread leaves.
    private func drain(limit: Int) {
        var ran = 0
        var batch: [@Sendable () -> Void] = []
        while true {
            let more = state.withLock { state -> Bool in
                guard !state.work.isEmpty else {
                    state.busy = false
                    return false
                }
                swap(&batch, &state.work)
                return true
            }
            guard more else { return }
            for (index, body) in batch.enumerated() {
                body()
                ran += 1
                if ran >= limit, index < batch.count - 1 {
                    // Hand the rest (still in order, before anything queued since) over.
                    let rest = Array(batch[(index + 1)...])
                    state.withLock { $0.work.insert(contentsOf: rest, at: 0) }
                    queue.async { [self] in drain(limit: .max) }
                    return
                }
            }
            batch.removeAll(keepingCapacity: true)
            if ran >= limit {
                let handsOver = state.withLock { state -> Bool in
                    guard !state.work.isEmpty else {
                        state.busy = false
                        return false
                    }
                    return true
                }
                if handsOver { queue.async { [self] in drain(limit: .max) } }
                return
            }
        }
    }
}
