import Foundation
@testable import SpinConcurrency
import Testing

/// What a thread hands to event loops while it gathers: one batch per loop, handed over
/// when the outermost gathering ends, and nothing held back outside one.
@Suite struct HandOffsTests {
    /// A scheduler that records the batches handed to it (and runs nothing).
    final class Recorder: TurnScheduler, @unchecked Sendable {  // batches: under its lock
        let batches = Protected<[[Int]]>([])
        let log: Protected<[Int]>

        init(log: Protected<[Int]>) { self.log = log }

        var isIdle: Bool { false }
        func atEndOfTurn(_ body: @escaping () -> Void) { body() }
        func enqueue(_ body: @escaping @Sendable () -> Void) { enqueue(contentsOf: [body]) }
        func enqueue(contentsOf work: [@Sendable () -> Void]) {
            // Run the work to learn which pieces came in this batch, in order.
            let before = log.withLock { $0.count }
            for piece in work { piece() }
            let pieces = log.withLock { Array($0[before...]) }
            batches.withLock { $0.append(pieces) }
        }
    }

    @Test func workGatheredForTwoLoops_ReachesEachInOneBatch_InOrder_WhenTheGatheringEnds() {
        let log = Protected<[Int]>([])
        let first = Recorder(log: log), second = Recorder(log: log)
        #expect(HandOffs.current == nil)
        HandOffs.gathering {
            let gathering = HandOffs.current!
            for value in [1, 2, 3] { gathering.add({ log.withLock { $0.append(value) } }, for: first) }
            gathering.add({ log.withLock { $0.append(10) } }, for: second)
            gathering.add({ log.withLock { $0.append(4) } }, for: first)
            // Nested: still the outer gathering's, nothing handed over at its end.
            HandOffs.gathering {
                HandOffs.current!.add({ log.withLock { $0.append(11) } }, for: second)
            }
            #expect(first.batches.withLock { $0 }.isEmpty)
            #expect(second.batches.withLock { $0 }.isEmpty)
        }
        #expect(first.batches.withLock { $0 } == [[1, 2, 3, 4]])
        #expect(second.batches.withLock { $0 } == [[10, 11]])
        #expect(HandOffs.current == nil)

        // A second gathering on the same thread starts empty: nothing is handed twice.
        HandOffs.gathering { HandOffs.current!.add({ log.withLock { $0.append(5) } }, for: first) }
        #expect(first.batches.withLock { $0 } == [[1, 2, 3, 4], [5]])
        #expect(second.batches.withLock { $0 } == [[10, 11]])
    }

    @Test func eachThread_GathersOnItsOwn() {
        let log = Protected<[Int]>([])
        let loop = Recorder(log: log)
        let done = DispatchSemaphore(value: 0)
        HandOffs.gathering {
            Thread {
                // Another thread is not in this one's gathering.
                #expect(HandOffs.current == nil)
                done.signal()
            }.start()
            done.wait()
            HandOffs.current!.add({ log.withLock { $0.append(1) } }, for: loop)
        }
        #expect(loop.batches.withLock { $0 } == [[1]])
    }
}
