import Foundation
import SpinCore
import SpinConcurrency

/// A thread of its own for one stream's blocking socket calls (connect, handshake,
/// reads), so that any number of open streams never tie up the cooperative pool or
/// Dispatch's shared threads. Jobs run one at a time, in order. The thread ends once
/// the worker is released and its current job returns.
final class BlockingWorker: Sendable {
    private let jobs = JobQueue()

    init(name: String) {
        let jobs = self.jobs
        let thread = Thread { jobs.run() }
        thread.name = name
        thread.start()
    }

    deinit { jobs.stop() }

    /// Runs `job` on the worker's thread, after the jobs before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        jobs.add(job)
    }

    /// The jobs and the thread's loop; the worker's thread holds this, not the worker.
    private final class JobQueue: Sendable {
        private let state = Protected<(jobs: [@Sendable () -> Void], stopped: Bool)>(([], false))
        private let signal = DispatchSemaphore(value: 0)

        func add(_ job: @escaping @Sendable () -> Void) {
            state.withLock { $0.jobs.append(job) }
            signal.signal()
        }

        func stop() {
            state.withLock { $0.stopped = true }
            signal.signal()
        }

        /// Runs jobs until stopped; jobs still queued then are dropped.
        func run() {
            while true {
                signal.wait()
                let next: (@Sendable () -> Void)?? = state.withLock { state in
                    if state.stopped { return .none }
                    return state.jobs.isEmpty ? .some(nil) : state.jobs.removeFirst()
                }
                guard let job = next else { return }
                job?()
            }
        }
    }
}
