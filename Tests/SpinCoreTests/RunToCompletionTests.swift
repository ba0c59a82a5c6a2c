import Dispatch
import Foundation
@testable import SpinCore
import Synchronization
import Testing
@testable import SpinConcurrency

/// A stand-in for a network thread: installs itself as the thread's `TurnScheduler` and
/// runs turns of `emit`s followed by the end-of-turn work, as SpinNet's event loops do.
private final class TurnThread: TurnScheduler, @unchecked Sendable {  // hooks: its own thread only
    private var hooks: [() -> Void] = []
    /// Work handed in (`enqueue`), run at the start of its next turn.
    private let inbox = Protected<[@Sendable () -> Void]>([])
    /// How many pieces of work were handed in.
    let handedIn = Atomic<Int>(0)
    /// What `isIdle` answers: a turn thread runs its turns on a timer, busy or not.
    let idle: Bool

    init(idle: Bool = false) { self.idle = idle }

    var isIdle: Bool { idle }

    func atEndOfTurn(_ body: @escaping () -> Void) { hooks.append(body) }

    func enqueue(_ body: @escaping @Sendable () -> Void) {
        handedIn.add(1, ordering: .relaxed)
        inbox.withLock { $0.append(body) }
    }

    func enqueue(contentsOf work: [@Sendable () -> Void]) {
        handedIn.add(1, ordering: .relaxed)
        inbox.withLock { $0.append(contentsOf: work) }
    }

    /// Runs `turns` on a new thread; `done` is signalled after the last.
    @discardableResult
    static func run(turns: Int, _ turn: @escaping @Sendable (Int) -> Void, done: DispatchSemaphore,
                    scheduler: TurnThread = TurnThread()) -> TurnThread {
        let thread = Thread {
            EndOfTurn.install(scheduler)
            for index in 0..<turns {
                usleep(200)  // a network thread waits for its sockets between turns
                for work in scheduler.inbox.withLock({ inbox in defer { inbox = [] }; return inbox }) { work() }
                turn(index)
                while !scheduler.hooks.isEmpty {
                    let due = scheduler.hooks
                    scheduler.hooks.removeAll()
                    for hook in due { hook() }
                }
            }
            done.signal()
        }
        thread.start()
        return scheduler
    }
}

@Suite(.timeLimit(.minutes(1)))
struct RunToCompletionTests {
    /// Two turn threads, emitters 0 and 1: 50 turns of ten events each (`1000 * emitter +
    /// n` for n in 0..<500, in order); `done` is signalled once by each.
    private func startTwoNetworkThreads(emitting loop: SpinLoop<[Int], Int>, done: DispatchSemaphore) {
        for emitter in 0..<2 {
            TurnThread.run(turns: 50, { turn in
                for index in 0..<10 { loop.emit(emitter * 1000 + turn * 10 + index) }
            }, done: done)
        }
    }

    /// Waits until `count` semaphore signals arrived, off the cooperative pool.
    private func wait(_ done: DispatchSemaphore, count: Int) async {
        for _ in 0..<count {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { done.wait(); continuation.resume() }
            }
        }
    }

    @Test func eventsFromNetworkThreads_AreAppliedAtTheEndOfTheirTurn_OnThoseThreads_InOrder() async {
        let loop = Spin(initialState: [Int]()) {
            Reducer { (state: [Int], event: Int) in state + [event] }
        }.start()
        let sequences = Recorder<UInt64>()
        let offTurnThreads = Atomic<Int>(0)
        let observation = loop.observe { transition in
            sequences.append(transition.sequence)
            if EndOfTurn.current == nil { offTurnThreads.add(1, ordering: .relaxed) }
        }
        // The start and the observer's joining ran on the loop's queue: once it is idle,
        // nothing but the network threads gives the loop work.
        await withCheckedContinuation { continuation in loop.queue.async { continuation.resume() } }
        let done = DispatchSemaphore(value: 0)
        // Two network threads, ten events a turn each: nothing else emits, so whichever
        // of them is in the loop's section applies what both brought.
        startTwoNetworkThreads(emitting: loop, done: done)
        await wait(done, count: 2)
        let final = await loop.firstState { $0.count == 1000 } ?? []
        for emitter in 0..<2 {
            #expect(final.filter { $0 / 1000 == emitter } == (0..<500).map { emitter * 1000 + $0 })
        }
        #expect(sequences.all == Array(1...1000))
        #expect(offTurnThreads.load(ordering: .relaxed) == 0)
        observation.cancel()
        loop.stop()
    }

    /// Two network threads emit 1,000 events into a loop whose home is `home` (its own
    /// turns emit nothing, and it runs longer than theirs, so that it takes in what they
    /// hand over last). Returns the final state and how many transitions were observed
    /// on the home's thread.
    private func emitIntoALoop(homedOn home: TurnThread) async -> (state: [Int], onHome: Int) {
        let loop = Spin(initialState: [Int]()) {
            Reducer { (state: [Int], event: Int) in state + [event] }
        }.makeLoop(home: home)
        loop.start()
        let onHome = Atomic<Int>(0)
        let observation = loop.observe { _ in
            if EndOfTurn.current === home { onHome.add(1, ordering: .relaxed) }
        }
        await withCheckedContinuation { continuation in loop.queue.async { continuation.resume() } }
        let done = DispatchSemaphore(value: 0)
        TurnThread.run(turns: 400, { _ in }, done: done, scheduler: home)
        startTwoNetworkThreads(emitting: loop, done: done)
        await wait(done, count: 3)
        let final = await loop.firstState { $0.count == 1000 } ?? []
        observation.cancel()
        loop.stop()
        return (final, onHome.load(ordering: .relaxed))
    }

    @Test func aLoopWithABusyHome_AppliesEveryNetworkThreadsEvents_OnItsHome_HandedOverOncePerTurn() async {
        let home = TurnThread()
        let (final, onHome) = await emitIntoALoop(homedOn: home)
        for emitter in 0..<2 {
            #expect(final.filter { $0 / 1000 == emitter } == (0..<500).map { emitter * 1000 + $0 })
        }
        // Every event applied on the home's thread; ten events a turn handed over in one
        // piece of work (at most one per emitter's turn: 100).
        #expect(onHome == 1000)
        #expect(home.handedIn.load(ordering: .relaxed) <= 100)
    }

    @Test func aLoopWhoseHomeIsIdle_IsAppliedByTheThreadThatBroughtTheEvents() async {
        let home = TurnThread(idle: true)
        let (final, onHome) = await emitIntoALoop(homedOn: home)
        #expect(final.count == 1000)
        #expect(onHome == 0)
        #expect(home.handedIn.load(ordering: .relaxed) == 0)
    }

    @Test func networkThreadsAndAPlainEmitter_KeepEachOnesOrder_AndLoseNothing() async {
        let loop = Spin(initialState: [Int]()) {
            Reducer { (state: [Int], event: Int) in state + [event] }
        }.start()
        let sequences = Recorder<UInt64>()
        let observation = loop.observe { sequences.append($0.sequence) }
        let done = DispatchSemaphore(value: 0)
        startTwoNetworkThreads(emitting: loop, done: done)
        // A thread that runs no event loop: its events go to the loop's queue, which
        // then applies the network threads' events too, in arrival order.
        DispatchQueue.global().async {
            for index in 0..<500 {
                loop.emit(2000 + index)
                if index % 10 == 9 { usleep(200) }
            }
            done.signal()
        }
        await wait(done, count: 3)
        let final = await loop.firstState { $0.count == 1500 } ?? []
        for emitter in 0..<3 {
            #expect(final.filter { $0 / 1000 == emitter } == (0..<500).map { emitter * 1000 + $0 })
        }
        #expect(sequences.all == Array(1...1500))
        observation.cancel()
        loop.stop()
    }

    @Test func aLoopGivenAnExecutor_NeverRunsOnANetworkThread() async {
        let executor = DispatchQueue(label: "test.executor")
        let key = DispatchSpecificKey<Bool>()
        executor.setSpecific(key: key, value: true)
        let loop = Spin(initialState: 0, executeOn: executor) {
            Reducer { (state: Int, event: Int) in state + event }
        }.start()
        let offExecutor = Atomic<Int>(0)
        let observation = loop.observe { _ in
            if DispatchQueue.getSpecific(key: key) != true { offExecutor.add(1, ordering: .relaxed) }
        }
        let done = DispatchSemaphore(value: 0)
        TurnThread.run(turns: 20, { _ in loop.emit(1) }, done: done)
        await wait(done, count: 1)
        #expect(await loop.firstState { $0 == 20 } == 20)
        #expect(offExecutor.load(ordering: .relaxed) == 0)
        observation.cancel()
        loop.stop()
    }
}
