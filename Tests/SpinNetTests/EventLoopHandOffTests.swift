#if canImport(Glibc)
import Glibc
import Synchronization
import Testing
import SpinConcurrency
@testable import SpinNet

/// What one event loop hands another at the end of its turn (a Spin's events to its
/// home, answers to a connection's loop) travels in one batch once that turn's end is
/// done, in order, and runs on the other loop's thread.
@Suite(.timeLimit(.minutes(1)))
struct EventLoopHandOffTests {
    @Test func workHandedOverAtTheEndOfATurn_ArrivesWhenThatTurnEnds_InOrder_OnTheOtherLoop() async {
        let loops = EventLoop.loops(count: 2)
        let (source, target) = (loops[0], loops[1])
        let turnEnded = Atomic<Bool>(false)
        let seen = Protected<[(index: Int, afterTurn: Bool, onTarget: Bool)]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            source.enqueue {
                EndOfTurn.current?.atEndOfTurn {
                    for index in 0..<100 {
                        target.enqueue {
                            seen.withLock { $0.append((index, turnEnded.load(ordering: .acquiring), target.inLoop)) }
                            if index == 99 { done.resume() }
                        }
                    }
                    // The target loop is idle: work handed to it at once would run now.
                    usleep(50_000)
                    turnEnded.store(true, ordering: .releasing)
                }
            }
        }
        let runs = seen.withLock { $0 }
        #expect(runs.map(\.index) == Array(0..<100))
        #expect(runs.allSatisfy { $0.afterTurn && $0.onTarget })
    }

    @Test func workHandedOverOutsideTheEndOfATurn_GoesAtOnce() async {
        let loops = EventLoop.loops(count: 2)
        let (source, target) = (loops[0], loops[1])
        let gathered = Atomic<Bool>(true)
        let ranOnTarget = Atomic<Bool>(false)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // Handed over while the source loop runs handed-in work (as a request's
            // handler runs): not held back for the end of the turn, since that work may
            // go on for a while. (Whether the target then runs it at once depends on what
            // else the process's loops do: other tests share them.)
            source.enqueue {
                gathered.store(HandOffs.current != nil, ordering: .relaxed)
                target.enqueue {
                    ranOnTarget.store(target.inLoop, ordering: .relaxed)
                    done.resume()
                }
            }
        }
        let (wasGathered, ran) = (gathered.load(ordering: .relaxed), ranOnTarget.load(ordering: .relaxed))
        #expect(!wasGathered)
        #expect(ran)
    }
}
#endif
