@testable import SpinServer
import Testing

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
