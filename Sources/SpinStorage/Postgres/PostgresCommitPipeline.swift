import Foundation

/// A store that can keep several commits in flight (`PostgresSpinStore`): `beginCommit`
/// is `commit` without waiting for it.
package protocol PipelinedCommits: SpinStore {
    /// Commits what was appended to `spin` since its last commit began, after that one;
    /// `done` is told once it is as durable as `sync` says (as `commit`), or why not, on
    /// any thread and maybe under the store's locks: it must not block or call the store.
    /// A Spin's commits are told in the order they began, and once one fails,
    /// every later one then on its way fails too: a journal is durable through a commit
    /// only when every commit of it before is.
    func beginCommit(spin: String, sync: Bool, done: @escaping @Sendable ((any Error)?) -> Void)
}

/// The commits of a `PostgresSpinStore`, several in flight at once over a small pool of
/// connections of their own (`PostgresSpinStore.commitConnections`), each with a thread
/// that waits for its database: while one commit waits for its WAL flush, the next one
/// is already on its way, and PostgreSQL flushes the WAL once for every commit waiting
/// at that moment.
///
/// - **One commit waiting per Spin, filled until a connection takes it.** `enqueue` adds
///   a Spin's records to its waiting commit when it has one: under load a commit carries
///   everything the Spin appended while the commits before it ran.
/// - **In order, per Spin.** A Spin's commits may run on different connections at once,
///   but they complete in the order they were enqueued: a commit's `done` is called only
///   once every earlier commit of its Spin completed, and once one fails, every later one
///   of that Spin then in flight fails too (its rows, if it stored any, lie after a
///   failed commit: `reopen` deletes them, and `read` cuts a journal at a gap in its
///   sequences). So a Spin's journal counts as durable through a point only when
///   everything before it is stored.
/// - **A commit with Gear outbox records runs alone** among its Spin's commits (none
///   before it in flight, none after it started until it is done): the outbox's rows are
///   numbered in commit order (`commitWithOutbox`).
///
/// No commit of a Spin is on its way while the store reads, cuts or compacts its journal on
/// its main connection (`settled`, `drain`: they wait until its commits completed).
///
/// Connections are made by the store (`refresh`), after its own connection took
/// ownership of the database; a connection lost fails the commits that meet it and stays
/// closed until the store's next `probe` refreshes it, so that no commit is written on a
/// connection made while this server no longer held the database.
final class PostgresCommitPipeline: @unchecked Sendable {
    typealias Done = @Sendable ((any Error)?) -> Void
    /// Stores `records` of `spin` on `connection` (in one transaction), as `sync` says.
    typealias Store = (_ records: [JournalRecord.Record], _ spin: String, _ sync: Bool,
                       _ connection: PostgresConnection, _ session: inout Bool?) throws -> Void

    /// What a Spin's journal has on its way, guarded by `state`.
    final class Chain {
        /// The commit not yet taken by a connection, filling.
        var waiting: Commit?
        /// The commits taken, in order, until they complete.
        var running: [Commit] = []
        /// A commit failed: every commit after it then on its way fails too.
        var failed = false
        /// The last sequence of the last commit that completed.
        var committedLast: UInt64?

        init(committedLast: UInt64?) { self.committedLast = committedLast }

        var isIdle: Bool { waiting == nil && running.isEmpty }
    }

    final class Commit {
        let spin: String
        let chain: Chain
        var records: [JournalRecord.Record]
        var sync: Bool
        var done: [Done]
        var finished = false
        var error: (any Error)?
        /// Gear outbox records are among `records`.
        var hasOutbox = false

        init(spin: String, chain: Chain, records: [JournalRecord.Record], sync: Bool, done: @escaping Done) {
            self.spin = spin
            self.chain = chain
            self.records = records
            self.sync = sync
            self.done = [done]
            add([])
        }

        func add(_ more: [JournalRecord.Record]) {
            records += more
            hasOutbox = hasOutbox || (more.isEmpty ? records : more).contains { $0.sequence == OutboxRecord.journalSequence }
        }
    }

    /// `@unchecked Sendable`: guarded by `state` but for its thread's use of the connection while `busy`.
    final class Worker: @unchecked Sendable {
        var connection: PostgresConnection?
        /// The `synchronous_commit` of the connection's session (nil: unknown).
        var session: Bool?
        var busy = false
    }

    /// A commit of a Spin told after one of its commits before failed (it may have been
    /// stored all the same: `reopen` deletes it).
    struct NotCommitted: Error, CustomStringConvertible {
        let spin: String
        var description: String {
            "an earlier commit of \(spin)'s journal failed; this one, after it, counts as not committed"
        }
    }

    private let state = NSCondition()
    private var queue: [Commit] = []
    private let workers: [Worker]
    private var closed = false
    private let store: Store

    init(connections: Int, store: @escaping Store) {
        self.workers = (0..<max(1, connections)).map { _ in Worker() }
        self.store = store
        for worker in workers {
            let thread = Thread { [self] in work(worker) }
            thread.name = "spin.postgres.commit"
            thread.start()
        }
    }

    /// Commits `records` of `chain` after everything enqueued for it before (with the
    /// commit still waiting for a connection, when there is one); `done` is called on a
    /// connection's thread once it completed (see above). No records: `done` once the
    /// commits before it completed.
    /// `done` must not block or call into the pipeline: it is called under its lock.
    func enqueue(_ records: [JournalRecord.Record], spin: String, chain: Chain, sync: Bool, done: @escaping Done) {
        state.lock()
        if let waiting = chain.waiting {
            waiting.add(records)
            waiting.sync = waiting.sync || sync
            waiting.done.append(done)
            state.unlock()
            return
        }
        if records.isEmpty, chain.running.isEmpty {
            done(nil)
            state.unlock()
            return
        }
        let commit = Commit(spin: spin, chain: chain, records: records, sync: sync, done: done)
        chain.waiting = commit
        queue.append(commit)
        // Not `signal`: a thread waiting in `drain` or `settled` might take it.
        state.broadcast()
        state.unlock()
    }

    /// Waits until `chain` has nothing on its way (before the store cuts its journal back,
    /// or reads it again).
    func drain(_ chain: Chain) {
        state.lock()
        while !chain.isIdle { state.wait() }
        state.unlock()
    }

    /// `chain`'s last committed sequence, once it has nothing on its way.
    func settled(_ chain: Chain) -> UInt64? {
        state.lock()
        defer { state.unlock() }
        while !chain.isIdle { state.wait() }
        return chain.committedLast
    }

    /// `chain`'s journal was rewritten through `committedLast` (a compaction, with
    /// nothing on its way).
    func settle(_ chain: Chain, committedLast: UInt64?) {
        state.lock()
        chain.committedLast = committedLast
        state.unlock()
    }

    /// Gives every idle connection that is closed or lost a new one from `connect`; one
    /// busy now is refreshed by a later call. `checking`: first asks each open one whether
    /// it still works (a round trip: after a failure, when libpq may not know yet).
    /// Throws what `connect` threw.
    func refresh(checking: Bool, _ connect: () throws -> PostgresConnection) throws {
        state.lock()
        defer { state.unlock() }
        for worker in workers where !worker.busy {
            if checking, let connection = worker.connection, connection.isConnected,
               (try? connection.execute("SELECT 1")) == nil {
                connection.close()
            }
            guard worker.connection?.isConnected != true else { continue }
            worker.connection?.close()
            worker.connection = nil
            worker.session = nil
            worker.connection = try connect()
        }
    }

    /// Stops the connections' threads and closes the connections; commits still waiting
    /// fail.
    func close() {
        state.lock()
        closed = true
        let abandoned = queue
        queue.removeAll()
        for commit in abandoned { commit.chain.waiting = nil }
        state.broadcast()
        state.unlock()
        for commit in abandoned {
            for done in commit.done { done(PostgresError(sqlState: PostgresError.connectionFailure, message: "the store was closed")) }
        }
    }

    // MARK: The connections' threads

    private func work(_ worker: Worker) {
        state.lock()
        while true {
            guard !closed else { break }
            guard let index = queue.firstIndex(where: eligible) else {
                state.wait()
                continue
            }
            let commit = queue.remove(at: index)
            let chain = commit.chain
            chain.waiting = nil
            chain.running.append(commit)
            worker.busy = true
            let connection = worker.connection
            var session = worker.session
            let skip = chain.failed
            state.unlock()
            var failure: (any Error)?
            if skip {
                failure = NotCommitted(spin: commit.spin)
            } else if let connection, connection.isConnected {
                do {
                    try store(commit.records, commit.spin, commit.sync, connection, &session)
                } catch {
                    failure = error
                }
            } else {
                failure = PostgresError(sqlState: PostgresError.connectionFailure, message: "the connection to the database is lost")
            }
            state.lock()
            worker.busy = false
            worker.session = session
            commit.finished = true
            commit.error = failure
            // Told under the lock: a commit completed on another connection meanwhile is
            // told after these, never before.
            for (done, error) in complete(chain) { done(error) }
            state.broadcast()
        }
        let connection = worker.connection
        worker.connection = nil
        state.unlock()
        connection?.close()
    }

    /// A commit may start when no commit of its Spin with outbox records runs, and, when
    /// it has some itself, when none of its Spin runs at all.
    private func eligible(_ commit: Commit) -> Bool {
        let running = commit.chain.running
        return running.isEmpty || (!commit.hasOutbox && !running.contains { $0.hasOutbox })
    }

    /// The `done`s of `chain`'s finished commits that may be told now, in order. Under `state`.
    private func complete(_ chain: Chain) -> [(Done, (any Error)?)] {
        var completed: [(Done, (any Error)?)] = []
        while let first = chain.running.first, first.finished {
            chain.running.removeFirst()
            var error = first.error
            if chain.failed {
                error = error ?? NotCommitted(spin: first.spin)
            } else if error != nil {
                chain.failed = true
            } else if let last = first.records.last(where: { $0.sequence != OutboxRecord.journalSequence }) {
                chain.committedLast = last.sequence
            }
            completed += first.done.map { ($0, error) }
        }
        // Every commit that was on its way when one failed has failed too: the next one
        // comes after the failure (the journal cut back, or refused since).
        if chain.isIdle { chain.failed = false }
        return completed
    }
}
