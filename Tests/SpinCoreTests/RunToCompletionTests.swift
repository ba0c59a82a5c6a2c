import Dispatch
import Foundation
@testable import SpinCore
import Synchronization
import Testing

/// A stand-in for a network thread: installs itself as the thread's `TurnScheduler` and
/// runs turns of `emit`s followed by the end-of-turn work, as SpinNet's event loops do.
private final class TurnThread: TurnScheduler, @unchecked Sendable {  // hooks: its own thread only
    private var hooks: [() -> Void] = []

    func atEndOfTurn(_ body: @escaping () -> Void) { hooks.append(body) }

    /// Runs `turns` on a new thread; `done` is signalled after the last.
    static func run(turns: Int, _ turn: @escaping @Sendable (Int) -> Void, done: DispatchSemaphore) {
        let thread = Thread {
            let scheduler = TurnThread()
            EndOfTurn.install(scheduler)
            for index in 0..<turns {
                usleep(200)  // a network thread waits for its sockets between turns
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
    }
}

@Suite(.timeLimit(.minutes(1)))
struct RunToCompletionTests {
    @Test func eventsFromNetworkThreads_AreAppliedAtTheEndOfTheirTurn_OnThatThread_InOrder_WithOthersOffThem() async {
        let loop = Spin(initialState: [Int]()) {
            Reducer { (state: [Int], event: Int) in state + [event] }
        }.start()
        let sequences = Recorder<UInt64>()
        let appliedOnATurnThread = Atomic<Int>(0)
        let observation = loop.observe { transition in
            sequences.append(transition.sequence)
            if EndOfTurn.current != nil { appliedOnATurnThread.add(1, ordering: .relaxed) }
        }
        let done = DispatchSemaphore(value: 0)
        // Two network threads, ten events a turn each, and a plain thread beside them.
        for emitter in 0..<2 {
            TurnThread.run(turns: 50, { turn in
                for index in 0..<10 { loop.emit(emitter * 1000 + turn * 10 + index) }
            }, done: done)
        }
        DispatchQueue.global().async {
            for index in 0..<500 {
                loop.emit(2000 + index)
                if index % 10 == 9 { usleep(200) }
            }
            done.signal()
        }
        for _ in 0..<3 { await withCheckedContinuation { continuation in
            DispatchQueue.global().async { done.wait(); continuation.resume() }
        } }
        let final = await loop.firstState { $0.count == 1500 } ?? []
        for emitter in 0..<3 {
            let mine = final.filter { $0 / 1000 == emitter }
            #expect(mine == (0..<500).map { emitter * 1000 + $0 })
        }
        #expect(sequences.all == Array(1...1500))
        // The network threads applied events themselves (not only the loop's queue).
        #expect(appliedOnATurnThread.load(ordering: .relaxed) > 0)
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
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { done.wait(); continuation.resume() }
        }
        #expect(await loop.firstState { $0 == 20 } == 20)
        #expect(offExecutor.load(ordering: .relaxed) == 0)
        observation.cancel()
        loop.stop()
    }
}
