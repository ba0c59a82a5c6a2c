import SpinConcurrency

/// The effect tasks of one feedback, so that they can be cancelled on a new state or on
/// stop, and counted by the tester. Guarded by a mutex: tasks remove themselves from
/// whatever thread they finish on.
package final class TaskBag: Sendable {
    private struct Contents {
        var nextID: UInt64 = 0
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var closed = false
    }

    private let contents = Protected(Contents())

    package init() {}

    /// Starts `body` as a task tracked by the bag. The task is inserted under the lock
    /// before it can remove itself, so a task that finishes at once leaves no entry.
    /// Returns nil (and starts nothing) once the bag is closed.
    @discardableResult
    package func run(
        on executor: (any TaskExecutor)?,
        _ body: @escaping @Sendable () async -> Void
    ) -> UInt64? {
        contents.withLock { contents -> UInt64? in
            guard !contents.closed else { return nil }
            contents.nextID += 1
            let id = contents.nextID
            contents.tasks[id] = Task(executorPreference: executor) { [self] in
                await body()
                self.remove(id)
            }
            return id
        }
    }

    private func remove(_ id: UInt64) {
        contents.withLock { _ = $0.tasks.removeValue(forKey: id) }
    }

    /// Cancels one task (a no-op if it already finished).
    package func cancel(_ id: UInt64) {
        let task = contents.withLock { $0.tasks[id] }
        task?.cancel()
    }

    /// Cancels every task; with `close`, no task can be started afterwards.
    package func cancelAll(close: Bool) {
        let tasks = contents.withLock { contents -> [Task<Void, Never>] in
            if close { contents.closed = true }
            return Array(contents.tasks.values)
        }
        for task in tasks { task.cancel() }
    }

    package var count: Int {
        contents.withLock { $0.tasks.count }
    }
}
