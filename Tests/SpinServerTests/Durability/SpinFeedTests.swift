import Foundation
@testable import SpinServer
import SpinCore
import SpinWire
import Testing
@testable import SpinConcurrency

/// The feed without sockets: what streams see, when acknowledgements go out, and what a
/// storage failure takes back.
@Suite struct SpinFeedTests {
    static func transition(_ sequence: UInt64) -> HostedTransition {
        HostedTransition(sequence: sequence, event: .object([("type", .string("increase"))]),
                         state: .object([("value", .number(String(sequence)))]))
    }

    /// Collects what a subscriber is given.
    final class Recorder: Sendable {
        let starts = Protected<[String]>([])
        let live = Protected<[UInt64]>([])

        func subscribe(_ feed: SpinFeed, since: UInt64? = nil, epoch: String? = nil) -> SpinSubscription {
            feed.subscribe(since: since, epoch: epoch, deltas: false, start: { start, epoch in
                switch start {
                case .snapshot(let sequence, _): self.starts.withLock { $0.append("snapshot \(sequence) \(epoch)") }
                case .replay(let history):
                    self.starts.withLock { $0.append("replay \(history.map(\.sequence)) \(epoch)") }
                }
            }, live: { transition, _, _ in self.live.withLock { $0.append(transition.sequence) } })
        }
    }

    static func makeFeed(retain: Int = 5) -> SpinFeed {
        let feed = SpinFeed(name: "counter", retain: retain, immediate: false)
        feed.begin(sequence: 0, state: .object([("value", .number("0"))]), history: [], epoch: "e1")
        return feed
    }

    @Test func appliedTransitions_AreStreamedAndAcknowledged_OnlyOnceDurable() {
        let feed = Self.makeFeed()
        let recorder = Recorder()
        let subscription = recorder.subscribe(feed)
        let acked = Protected<[UInt64]>([])
        for sequence in 1...3 as ClosedRange<UInt64> {
            feed.applied(Self.transition(sequence))
            feed.whenDurable(sequence) { error in
                #expect(error == nil)
                acked.withLock { $0.append(sequence) }
            }
        }
        #expect(recorder.starts.withLock { $0 } == ["snapshot 0 e1"])
        #expect(recorder.live.withLock { $0 }.isEmpty)
        #expect(acked.withLock { $0 }.isEmpty)
        feed.durable(through: 2)
        #expect(recorder.live.withLock { $0 } == [1, 2])
        #expect(acked.withLock { $0 } == [1, 2])
        #expect(feed.snapshot.sequence == 2)
        feed.durable(through: 3)
        #expect(recorder.live.withLock { $0 } == [1, 2, 3])
        subscription.cancel()
        feed.applied(Self.transition(4))
        feed.durable(through: 4)
        #expect(recorder.live.withLock { $0 } == [1, 2, 3])
    }

    @Test func aResumingSubscriber_GetsExactlyWhatFollowsItsSequence_OrASnapshot() {
        let feed = Self.makeFeed(retain: 5)
        for sequence in 1...8 as ClosedRange<UInt64> { feed.applied(Self.transition(sequence)) }
        feed.durable(through: 8)
        let cases: [(since: UInt64, epoch: String?, expected: String)] = [
            (5, nil, "replay [6, 7, 8] e1"),
            (5, "e1", "replay [6, 7, 8] e1"),
            (3, nil, "replay [4, 5, 6, 7, 8] e1"),
            (2, nil, "replay [3, 4, 5, 6, 7, 8] e1"),
            (1, nil, "snapshot 8 e1"),               // older than what is retained
            (8, nil, "replay [] e1"),                // up to date: nothing to send, no gap
            (9, nil, "snapshot 8 e1"),               // ahead of the history
            (5, "other", "snapshot 8 e1"),           // another history
        ]
        for (since, epoch, expected) in cases {
            let recorder = Recorder()
            let subscription = recorder.subscribe(feed, since: since, epoch: epoch)
            #expect(recorder.starts.withLock { $0 } == [expected], "since \(since) epoch \(epoch ?? "-")")
            subscription.cancel()
        }
    }

    @Test func aStorageFailure_RefusesEveryWaiter_AndRollbackDropsWhatWasNotDurable() {
        let feed = Self.makeFeed()
        let recorder = Recorder()
        let subscription = recorder.subscribe(feed)
        let answers = Protected<[String]>([])
        for sequence in 1...3 as ClosedRange<UInt64> {
            feed.applied(Self.transition(sequence))
            feed.whenDurable(sequence) { error in answers.withLock { $0.append(error.map { APIError($0).code } ?? "ok \(sequence)") } }
        }
        feed.durable(through: 1)
        feed.fail(.storageFailed(spin: "counter", "No space left on device"))
        #expect(feed.isFailing)
        // Nobody hears "not applied" before the Spin is back at its durable state.
        feed.whenDurable(4) { error in answers.withLock { $0.append(error.map { APIError($0).code } ?? "ok 4") } }
        #expect(answers.withLock { $0 } == ["ok 1"])
        let back = feed.rollback()
        #expect(back.sequence == 1)
        #expect(back.dropped == 2)
        #expect(back.state == Self.transition(1).state)
        feed.rolledBack()
        #expect(answers.withLock { $0 } == ["ok 1", "storage_unavailable", "storage_unavailable", "storage_unavailable"])
        feed.whenDurable(5) { error in answers.withLock { $0.append(error.map { APIError($0).code } ?? "ok 5") } }
        #expect(answers.withLock { $0 }.count == 5)
        // The sequences after the rollback are the Spin's new events 2, 3...
        feed.recovered()
        feed.applied(Self.transition(2))
        feed.durable(through: 2)
        #expect(recorder.live.withLock { $0 } == [1, 2])
        #expect(!feed.isFailing)
        subscription.cancel()
    }

    @Test func end_RefusesWhatWasNotDurable_AndClosesEveryStream_NowAndLater() {
        // A cluster node stops serving the Spin: durable is acknowledged, the rest refused.
        let feed = Self.makeFeed()
        let ended = Protected(0)
        _ = feed.subscribe(since: nil, epoch: nil, deltas: false, start: { _, _ in }, live: { _, _, _ in },
                           ended: { ended.withLock { $0 += 1 } })
        let answers = Protected<[String]>([])
        feed.applied(Self.transition(1))
        feed.applied(Self.transition(2))
        feed.whenDurable(1) { error in answers.withLock { $0.append("1: \(error.map { APIError($0).code } ?? "ok")") } }
        feed.whenDurable(2) { error in answers.withLock { $0.append("2: \(error.map { APIError($0).code } ?? "ok")") } }
        feed.durable(through: 1)
        feed.end(.moved(spin: "counter"))
        #expect(answers.withLock { $0 } == ["1: ok", "2: spin_unavailable"])
        #expect(ended.withLock { $0 } == 1)
        // Later waiters and subscribers get the same at once.
        feed.whenDurable(3) { error in answers.withLock { $0.append("3: \(error.map { APIError($0).code } ?? "ok")") } }
        _ = feed.subscribe(since: nil, epoch: nil, deltas: false, start: { _, _ in Issue.record("no snapshot after end") },
                           live: { _, _, _ in }, ended: { ended.withLock { $0 += 1 } })
        #expect(answers.withLock { $0 }.last == "3: spin_unavailable")
        #expect(ended.withLock { $0 } == 2)
        #expect(feed.snapshot.sequence == 1)
    }

    @Test func withoutAJournal_AppliedIsDurable() {
        let feed = SpinFeed(name: "counter", retain: 3, immediate: true)
        feed.begin(sequence: 0, state: .null, history: [], epoch: "e")
        let recorder = Recorder()
        let subscription = recorder.subscribe(feed)
        feed.applied(Self.transition(1))
        #expect(recorder.live.withLock { $0 } == [1])
        let acked = Protected(false)
        feed.whenDurable(1) { error in acked.withLock { $0 = error == nil } }
        #expect(acked.withLock { $0 })
        subscription.cancel()
    }

    @Test func aSpinServedAgainAfterItsPartitionLeft_WakesWithAFreshFeed_AndASleepingOneKeepsItsOwn() {
        let feeds = SpinFeeds(retain: 4, immediate: true)
        let watched = feeds.feed("door-1")
        #expect(feeds.continuing("door-1") === watched)   // asleep, watched: goes on with it
        // The node stopped serving it: an ended placeholder refuses what still comes.
        feeds.retire("door-1", ending: .moved(spin: "door-1"))
        #expect(watched.hasEnded)
        #expect(feeds.feed("door-1").hasEnded)
        // Served here again and woken: a new feed, not the ended one.
        let fresh = feeds.continuing("door-1")
        #expect(!fresh.hasEnded)
        #expect(fresh !== watched)
        #expect(feeds.feed("door-1") === fresh)
    }
}

/// Where acknowledgements are told when a thread that is no event loop's makes their
/// events durable (a journal's sync).
@Suite struct SpinFeedHandBackTests {
    /// A loop stand-in: records the batches handed to it, runs them when asked.
    final class Loop: TurnScheduler, @unchecked Sendable {  // under its lock
        let batches = Protected<[[@Sendable () -> Void]]>([])
        var isIdle: Bool { false }
        func atEndOfTurn(_ body: @escaping () -> Void) { body() }
        func enqueue(_ body: @escaping @Sendable () -> Void) { enqueue(contentsOf: [body]) }
        func enqueue(contentsOf work: [@Sendable () -> Void]) { batches.withLock { $0.append(work) } }
    }

    /// Runs `body` on a new thread that runs `loop` (as an event loop's thread is).
    static func onLoopThread(_ loop: Loop, _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            EndOfTurn.install(loop)
            body()
            done.signal()
        }.start()
        done.wait()
    }

    @Test func acknowledgementsMadeDurableByAJournalThread_GoBackToTheirLoop_InOneBatch() {
        let feed = SpinFeedTests.makeFeed()
        let loop = Loop()
        let told = Protected<[UInt64]>([])
        Self.onLoopThread(loop) {
            for sequence: UInt64 in 1...3 {
                feed.applied(SpinFeedTests.transition(sequence))
                feed.whenDurable(sequence) { error in
                    #expect(error == nil)
                    told.withLock { $0.append(sequence) }
                }
            }
        }
        // Asked on no loop: told at once, on the thread that makes it durable.
        feed.applied(SpinFeedTests.transition(4))
        feed.whenDurable(4) { _ in told.withLock { $0.append(4) } }

        HandOffs.gathering { feed.durable(through: 4) }
        #expect(told.withLock { $0 } == [4])
        let batches = loop.batches.withLock { $0 }
        #expect(batches.count == 1)
        for work in batches.joined() { work() }
        #expect(told.withLock { $0 } == [4, 1, 2, 3])

        // Made durable where nothing gathers (a loop's own turn, a test): told at once.
        Self.onLoopThread(loop) {
            feed.applied(SpinFeedTests.transition(5))
            feed.whenDurable(5) { _ in told.withLock { $0.append(5) } }
        }
        feed.durable(through: 5)
        #expect(told.withLock { $0 } == [4, 1, 2, 3, 5])
        #expect(loop.batches.withLock { $0 }.count == 1)
    }
}
