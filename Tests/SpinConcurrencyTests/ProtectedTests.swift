import Dispatch
@testable import SpinConcurrency
import Synchronization
import Testing

/// `Protected`, the package's one lock (on Linux a futex word): mutual exclusion under
/// contention, and threads parked on a held lock all get it once it is released.
@Suite(.timeLimit(.minutes(1)))
struct ProtectedTests {
    struct Counter {
        var value = 0
        var inside = 0
        var overlaps = 0
    }

    @Test func contendedIncrements_AreNeverLost_AndNoTwoThreadsAreInsideAtOnce() {
        let counter = Protected(Counter())
        let threads = 4, increments = 50_000
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<increments {
                counter.withLock { counter in
                    counter.inside += 1
                    if counter.inside > 1 { counter.overlaps += 1 }
                    counter.value += 1
                    counter.inside -= 1
                }
            }
        }
        let result = counter.withLock { $0 }
        #expect(result.value == threads * increments)
        #expect(result.overlaps == 0)
    }

    @Test func threadsParkedOnAHeldLock_AllGetIt_OnceItIsReleased() {
        let counter = Protected(0)
        let entered = Atomic<Int>(0)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        DispatchQueue.global().async(group: done) {
            counter.withLock { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        // These find the lock held and park on its word until the holder leaves.
        for _ in 0..<3 {
            DispatchQueue.global().async(group: done) {
                counter.withLock { count in
                    entered.add(1, ordering: .relaxed)
                    count += 1
                }
            }
        }
        _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(50))
        #expect(entered.load(ordering: .relaxed) == 0, "nobody got in while it was held")
        release.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(counter.withLock { $0 } == 3)
    }
}
