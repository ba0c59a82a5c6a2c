@testable import SpinServer
import Testing

/// `GearInbox`: one catching Spin's consumption of one sender's outbox, as a value. What
/// is settled is what a crash keeps; what is handed back is delivered again.
struct GearInboxTests {
    @Test func aFreshInbox_StartsAfterWhatWasConsumed() {
        let inbox = GearInbox(consumed: 7)
        #expect(inbox.settled == 7 && inbox.delivered == 7 && inbox.items.isEmpty && inbox.inFlight == 0)
        #expect(!inbox.holds(7) && !inbox.holds(8))
    }

    @Test func anAppliedEvent_IsSettledOnlyOnceTheJournalIsDurableThroughIt() {
        var inbox = GearInbox(consumed: 0)
        inbox.handed(1, enqueued: 1)
        #expect(inbox.inFlight == 1 && inbox.holds(1))
        var moved = inbox.durable(through: 100)
        #expect(moved == 0, "in flight: nothing settles")
        var took = inbox.took(1, sequence: 12)
        #expect(took)
        moved = inbox.durable(through: 11)
        #expect(moved == 0, "applied as 12, durable through 11: a crash loses it")
        #expect(inbox.settled == 0)
        moved = inbox.durable(through: 12)
        #expect(moved == 1)
        #expect(inbox.settled == 1 && inbox.items.isEmpty)
        took = inbox.took(1, sequence: 13)
        #expect(!took, "a stale receipt changes nothing")
    }

    @Test func ignoredEvents_SettleWithTheirPrefix_NotPastOneStillInFlight() {
        var inbox = GearInbox(consumed: 3)
        inbox.handed(4, enqueued: 0)
        inbox.handed(5, enqueued: 1)
        inbox.handed(6, enqueued: 0)
        var moved = inbox.durable(through: 0)
        #expect(moved == 1, "4 was ignored: settled at once")
        #expect(inbox.settled == 4 && inbox.delivered == 6)
        let took = inbox.took(5, sequence: 2)
        #expect(took)
        moved = inbox.durable(through: 2)
        #expect(moved == 2)
        #expect(inbox.settled == 6)
    }

    @Test func anEventMadeIntoTwoEvents_IsTakenOnceBothAre_AtTheLatestState() {
        var inbox = GearInbox(consumed: 0)
        inbox.handed(1, enqueued: 2)
        var took = inbox.took(1, sequence: 5)
        #expect(took && inbox.inFlight == 1)
        took = inbox.took(1, sequence: 6)
        #expect(took && inbox.items == [.taken(sequence: 6)])
        var moved = inbox.durable(through: 5)
        #expect(moved == 0)
        moved = inbox.durable(through: 6)
        #expect(moved == 1)
    }

    @Test func aSuspension_HandsBackFromTheFirstEventInFlight() {
        var inbox = GearInbox(consumed: 0)
        inbox.handed(1, enqueued: 1)
        inbox.handed(2, enqueued: 1)
        inbox.handed(3, enqueued: 0)
        inbox.handed(4, enqueued: 1)
        _ = inbox.took(1, sequence: 1)
        let handedBack = inbox.dropInFlight()
        #expect(handedBack == 3, "2 was in flight: 2, 3 and 4 come again")
        #expect(inbox.delivered == 1 && inbox.items == [.taken(sequence: 1)])
        inbox.handed(2, enqueued: 1)
        _ = inbox.took(2, sequence: 2)
        let moved = inbox.durable(through: 2)
        #expect(moved == 2)
    }

    @Test func aRollback_HandsBackWhatWasTakenAfterTheDurableState() {
        var inbox = GearInbox(consumed: 10)
        for position in UInt64(11)...14 { inbox.handed(position, enqueued: 1) }
        for (position, sequence) in [(UInt64(11), UInt64(1)), (12, 2), (13, 3)] {
            _ = inbox.took(position, sequence: sequence)
        }
        inbox.durable(through: 1)
        var handedBack = inbox.rollBack(to: 2)
        #expect(handedBack == 2, "13 (taken in state 3) and 14 (in flight) come again")
        #expect(inbox.items == [.taken(sequence: 2)] && inbox.delivered == 12)
        handedBack = inbox.rollBack(to: 2)
        #expect(handedBack == 0)
        handedBack = inbox.rollBack(to: 1)
        #expect(handedBack == 1)
        #expect(inbox.settled == 11 && inbox.delivered == 11)
    }

    @Test func skipping_MovesPastWhatTheOutboxNoLongerHolds() {
        var inbox = GearInbox(consumed: 2)
        inbox.skip(to: 9)
        #expect(inbox.settled == 8 && inbox.delivered == 8)
        inbox.handed(9, enqueued: 1)
        #expect(inbox.holds(9))
    }

    /// Crash at every step: whatever happens between two durable points, a restart from
    /// what the journal holds (`settled`) delivers exactly the positions after it, so
    /// every position is applied once, in order.
    @Test func atEveryStep_TheSettledPositionIsWhatACrashKeeps() {
        let positions = UInt64(1)...6
        for crashAfter in 0...(2 * positions.count) {
            var inbox = GearInbox(consumed: 0)
            var durable: UInt64 = 0
            var applied: [UInt64] = []
            var step = 0
            for position in positions {
                guard step < crashAfter else { break }
                inbox.handed(position, enqueued: 1)
                _ = inbox.took(position, sequence: position)
                applied.append(position)
                step += 1
                guard step < crashAfter else { break }
                // The journal makes every other event durable.
                if position % 2 == 0 {
                    durable = position
                    inbox.durable(through: durable)
                }
                step += 1
            }
            // The crash: what the journal holds survives, the rest goes back.
            let kept = applied.filter { $0 <= durable }
            #expect(inbox.settled == kept.last ?? 0, "crash after step \(crashAfter)")
            var restarted = GearInbox(consumed: inbox.settled)
            var again = kept
            for position in positions where position > restarted.delivered {
                restarted.handed(position, enqueued: 1)
                again.append(position)
            }
            #expect(again == Array(positions), "crash after step \(crashAfter): each once, in order")
        }
    }
}
