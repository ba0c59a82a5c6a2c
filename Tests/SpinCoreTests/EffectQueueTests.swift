import SpinCore
import Testing
@testable import SpinConcurrency

/// The environment of the queue tests: jobs that run until the test lets them finish
/// (or they are cancelled), and a record of how many ran at once.
final class JobProbe: Sendable {
    private struct Record {
        var started: [Int] = []
        var cancelled: [Int] = []
        var released: Set<Int> = []
        var running = 0
        var mostRunning = 0
    }

    private let record = Protected(Record())

    /// Job `k`: runs until released, then answers `.done(k)`.
    func run(_ job: Int) async -> Job? {
        record.withLock { record in
            record.started.append(job)
            record.running += 1
            record.mostRunning = max(record.mostRunning, record.running)
        }
        defer { record.withLock { $0.running -= 1 } }
        while !record.withLock({ $0.released.contains(job) }) {
            if Task.isCancelled {
                record.withLock { $0.cancelled.append(job) }
                return nil
            }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return .done(job)
    }

    func release(_ jobs: Int...) { record.withLock { $0.released.formUnion(jobs) } }
    var started: [Int] { record.withLock { $0.started } }
    var cancelled: [Int] { record.withLock { $0.cancelled } }
    var running: Int { record.withLock { $0.running } }
    var mostRunning: Int { record.withLock { $0.mostRunning } }
}

enum Job: Equatable, Sendable {
    /// Starts job k in the queue, under effect id `id`.
    case start(Int, id: String)
    case done(Int)
    case cancel(String)
}

/// A Spin whose state lists the jobs done, in order; its jobs run in `queue`.
func jobs(in queue: EffectQueue, probe: JobProbe) -> SpinLoop<[Int], Job> {
    let table = TransitionTable<[Int], Job, JobProbe>([
        TransitionRow { state, event in
            guard case .start(let job, let id) = event else { return nil }
            return (state, Effect(queue: queue, id: EffectID(id)) { await $0.run(job) })
        },
        TransitionRow { state, event in
            guard case .done(let job) = event else { return nil }
            return (state + [job], .none)
        },
        TransitionRow { state, event in
            guard case .cancel(let id) = event else { return nil }
            return (state, .cancel(EffectID(id)))
        },
    ])
    return Spin(initialState: [], table: table, environment: probe).start()
}

@Suite(.timeLimit(.minutes(1)))
struct EffectQueueTests {
    @Test func merge_RunsEveryEffectAtOnce() async {
        let probe = JobProbe()
        let loop = jobs(in: EffectQueue("merge", .merge), probe: probe)
        loop.emit(contentsOf: [.start(1, id: "a"), .start(2, id: "a"), .start(3, id: "a")])
        #expect(await eventually { probe.running == 3 })
        probe.release(3, 1, 2)
        let done = await loop.firstState { $0.count == 3 }
        #expect(Set(done ?? []) == [1, 2, 3])
        loop.stop()
    }

    @Test func latest_CancelsTheRunningEffect() async {
        let probe = JobProbe()
        let loop = jobs(in: EffectQueue("latest", .latest), probe: probe)
        loop.emit(.start(1, id: "a"))
        #expect(await eventually { probe.started == [1] })
        loop.emit(.start(2, id: "b"))
        #expect(await eventually { probe.cancelled == [1] && probe.started == [1, 2] })
        probe.release(1, 2)
        #expect(await loop.firstState { !$0.isEmpty } == [2])
        _ = await loop.emitBatchAndWait([.cancel("none")])
        #expect(loop.state == [2])
        loop.stop()
    }

    @Test func concat_RunsOneAfterAnother_InOrder() async {
        let probe = JobProbe()
        let loop = jobs(in: EffectQueue("concat", .concat), probe: probe)
        loop.emit(contentsOf: [.start(1, id: "a"), .start(2, id: "a"), .start(3, id: "a")])
        #expect(await eventually { probe.started == [1] })
        // Released out of order, they still end in the order they were started.
        probe.release(3, 2)
        probe.release(1)
        #expect(await loop.firstState { $0.count == 3 } == [1, 2, 3])
        #expect(probe.mostRunning == 1)
        loop.stop()
    }

    @Test func concurrent_NeverRunsMoreThanItsLimit() async {
        let probe = JobProbe()
        let loop = jobs(in: EffectQueue("pair", .concurrent(2)), probe: probe)
        loop.emit(contentsOf: (1...6).map { .start($0, id: "a") })
        #expect(await eventually { probe.started == [1, 2] })
        probe.release(1)
        #expect(await eventually { probe.started == [1, 2, 3] })
        probe.release(2, 3, 4, 5, 6)
        let done = await loop.firstState { $0.count == 6 }
        #expect(Set(done ?? []) == Set(1...6))
        #expect(probe.mostRunning == 2)
        loop.stop()
    }

    @Test func cancel_StopsTheRunningAndWaitingEffectsOfThatIDOnly() async {
        let probe = JobProbe()
        let loop = jobs(in: EffectQueue("one", .concat), probe: probe)
        loop.emit(contentsOf: [.start(1, id: "a"), .start(2, id: "a"), .start(3, id: "b")])
        #expect(await eventually { probe.started == [1] })
        loop.emit(.cancel("a"))
        // Job 1 (running) is cancelled, job 2 (waiting) never starts, job 3 runs next.
        #expect(await eventually { probe.cancelled == [1] && probe.started == [1, 3] })
        probe.release(1, 2, 3)
        #expect(await loop.firstState { !$0.isEmpty } == [3])
        #expect(probe.started == [1, 3])
        loop.stop()
    }
}
