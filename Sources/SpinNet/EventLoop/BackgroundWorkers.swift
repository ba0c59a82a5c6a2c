import CLinux
import Dispatch
import Glibc
import SpinConcurrency

/// A few threads of the lowest scheduling priority (`nice` 19) for work the server does
/// for a request but that must not take the CPU from its event loops and Spins: reading a
/// Spin's history (replaying stored segments) while the same Spin takes events. When both
/// want the CPU the kernel gives such a thread about 1.5% of what an event loop's gets
/// (CFS weights 15 against 1024), so readers wait and writers do not; on a machine with
/// CPU to spare it runs at full speed. Jobs run in the order given, `count` at a time.
///
/// A job hands its outcome on without making threads: to an event loop
/// (`Connection.execute`), never to Dispatch's queues or a new `Task`. A thread made from
/// one of these (Dispatch makes its workers from the thread that enqueues, when it needs
/// one) would inherit `nice` 19 and keep it for whatever it runs later.
package final class BackgroundWorkers: Sendable {
    private let jobs = Protected(Jobs())
    private let waiting = DispatchSemaphore(value: 0)

    private struct Jobs {
        var queue: [@Sendable () -> Void] = []
        var head = 0
    }

    /// Starts `count` threads named `name-N` (at most 15 bytes show) at `nice`.
    package init(name: String, count: Int, nice: Int32 = 19) {
        for index in 0..<max(1, count) {
            let context = Unmanaged.passRetained(Start(workers: self, name: "\(name)-\(index)", nice: nice)).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, { context in
                let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
                start.name.withCString { CLinux_setThreadName($0) }
                // Failing leaves it at the process's priority: the work still gets done.
                _ = CLinux_setThreadNice(start.nice)
                start.workers.work()
            }, context)
            precondition(created == 0, "\(name): pthread_create failed (\(created))")
            pthread_detach(thread)
        }
    }

    private final class Start: @unchecked Sendable {
        let workers: BackgroundWorkers
        let name: String
        let nice: Int32
        init(workers: BackgroundWorkers, name: String, nice: Int32) {
            self.workers = workers
            self.name = name
            self.nice = nice
        }
    }

    /// Runs `job` on one of the threads, after the jobs given before it.
    package func run(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.queue.append(job) }
        waiting.signal()
    }

    /// Jobs as they come, for the life of the process.
    private func work() -> Never {
        while true {
            waiting.wait()
            let job = jobs.withLock { jobs -> (@Sendable () -> Void)? in
                guard jobs.head < jobs.queue.count else { return nil }
                let job = jobs.queue[jobs.head]
                jobs.head += 1
                if jobs.head == jobs.queue.count {
                    jobs.queue.removeAll(keepingCapacity: true)
                    jobs.head = 0
                }
                return job
            }
            job?()
        }
    }
}
