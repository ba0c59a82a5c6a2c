import SpinCore
@testable import SpinServer
import Testing
@testable import SpinConcurrency

@Suite struct StreamMailboxTests {
    @Test func post_AsksForADrainOnlyWhenNoneIsPending_AndTakeKeepsTheOrder() {
        let mailbox = StreamMailbox()
        #expect(mailbox.post(.control([1])))
        #expect(!mailbox.post(.control([2])))
        let taken = mailbox.take().map { message -> [UInt8] in if case .control(let bytes) = message { bytes } else { [] } }
        #expect(taken == [[1], [2]])
        #expect(mailbox.take().isEmpty)
        #expect(mailbox.post(.control([3])))
    }
}

extension StreamMailboxTests {
    @Test func postsFromManyThreads_AreEachTakenOnce_InEachThreadsOrder() async {
        let mailbox = StreamMailbox()
        let taken = Protected<[[UInt8]]>([])
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for index in 0..<500 {
                        // Whoever is told to schedule a drain runs it at once. Drains run one
                        // at a time, as on the connection's event loop: taking and handling
                        // a batch happen under one lock, or a later batch could be handled
                        // before an earlier one.
                        guard mailbox.post(.control([UInt8(thread), UInt8(index % 256), UInt8(index / 256)])) else { continue }
                        taken.withLock { taken in
                            for case .control(let bytes) in mailbox.take() { taken.append(bytes) }
                        }
                    }
                }
            }
        }
        let rest = mailbox.take()
        taken.withLock { taken in for case .control(let bytes) in rest { taken.append(bytes) } }
        let all = taken.withLock { $0 }
        #expect(all.count == 2000)
        for thread in 0..<4 {
            let indices = all.filter { $0[0] == UInt8(thread) }.map { Int($0[1]) + Int($0[2]) * 256 }
            #expect(indices == Array(0..<500))
        }
    }
}
