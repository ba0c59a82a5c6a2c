import Dispatch

/// Runs the jobs of tasks that prefer it on a serial `DispatchQueue`, so that an async
/// effect given `.execute(on:)` really runs there (SE-0417 task executor preference).
package final class DispatchQueueExecutor: TaskExecutor, @unchecked Sendable {
    // Immutable after init; DispatchQueue is thread-safe.
    package let queue: DispatchQueue

    package init(_ queue: DispatchQueue) {
        self.queue = queue
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { [self] in
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
