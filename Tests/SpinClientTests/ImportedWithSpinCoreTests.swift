import Foundation
import SpinClient
import SpinCore
import Testing

/// A program that imports SpinClient and SpinCore together names each module's reply type
/// without qualifying it (the module SpinClient cannot qualify: `SpinClient.X` is a member
/// of the struct `SpinClient`).
struct ImportedWithSpinCoreTests {
    @Test func theClientsPostedEventReply_AndSpinCoresEventReply_AreBothNamedUnqualified() throws {
        let json = #"{"sequence":3,"state":7,"replies":[{"applied":true},{"applied":false,"reason":"no_transition"}]}"#
        let applied = try JSONDecoder().decode(Applied<Int>.self, from: Data(json.utf8))
        #expect(applied.replies == [PostedEventReply(applied: true),
                                    PostedEventReply(applied: false, reason: "no_transition")])
        let loopReply = EventReply<Int, String>.ignored("reset", state: 7)
        #expect(!loopReply.isApplied && loopReply.event == "reset")
    }
}
