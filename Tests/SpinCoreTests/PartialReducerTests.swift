import SpinCore
import Testing

/// A partial reducer over `Int`: `.add(n)` applies while the sum stays at most 10, and
/// `.marker` never applies.
private func capped(_ state: Int, _ event: Step) -> Int? {
    switch event {
    case .add(let n): state + n <= 10 ? state + n : nil
    case .marker: nil
    }
}

private func makeCapped(feedbacks: [Feedback<Int, Step>] = []) -> SpinLoop<Int, Step> {
    Spin(initialState: 0, feedbacks: feedbacks, reducer: .partial(capped)).start()
}

extension SpinLoop {
    /// Emits `events` as one batch and waits for its result (nil: not applied).
    func emitBatchAndWait(_ events: [Event], detailed: Bool = false) async -> BatchResult<State, Event>? {
        await withCheckedContinuation { continuation in
            let outcome = emit(batch: events, detailedReplies: detailed) { continuation.resume(returning: $0) }
            if outcome != .accepted { continuation.resume(returning: nil) }
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct PartialReducerTests {
    @Test func declinedEvent_LeavesSequenceStateObserversAndFeedbacksUntouched() async {
        let fed = Recorder<Int>()
        let loop = makeCapped(feedbacks: [Feedback(effect: { (state: Int) -> Step? in fed.append(state); return nil })])
        let seen = Recorder<UInt64>()
        let observation = loop.observe { seen.append($0.sequence) }
        _ = await loop.emitBatchAndWait([.add(4)])
        let result = await loop.emitBatchAndWait([.marker])
        #expect(result?.replies == [.ignored(.noTransition)])
        #expect(result?.lastApplied == nil)
        #expect(result?.sequence == 1)
        #expect(result?.state == 4)
        #expect(loop.sequence == 1)
        #expect(loop.state == 4)
        #expect(seen.all == [1])
        // The feedback saw the initial state and the one applied event, nothing more.
        _ = await loop.emitBatchAndWait([.add(1)])
        #expect(fed.all == [0, 4, 5])
        observation.cancel()
        loop.stop()
    }

    @Test func batchWhoseLastEventsAreDeclined_EndsOnItsLastAppliedEvent() async {
        let loop = makeCapped()
        let seen = Recorder<Transition<Int, Step>>()
        let observation = loop.observe { seen.append($0) }
        let result = await loop.emitBatchAndWait([.add(3), .add(4), .marker, .add(50)])
        #expect(seen.all == [
            Transition(event: .add(3), state: 3, sequence: 1, endsBatch: false),
            Transition(event: .add(4), state: 7, sequence: 2, endsBatch: true),
        ])
        #expect(result?.lastApplied == seen.all.last)
        #expect(result?.declined == [2, 3])
        #expect(result?.replies == [.applied, .applied, .ignored(.noTransition), .ignored(.noTransition)])
        #expect(result?.sequence == 2)
        observation.cancel()
        loop.stop()
    }

    @Test func batchWithEveryEventDeclined_MakesNoTransition_AndStillAnswers() async {
        let loop = makeCapped()
        let seen = Recorder<UInt64>()
        let observation = loop.observe { seen.append($0.sequence) }
        _ = await loop.emitBatchAndWait([.add(10)])
        let result = await loop.emitBatchAndWait([.add(1), .marker, .add(2)])
        #expect(result?.appliedCount == 0)
        #expect(result?.lastApplied == nil)
        #expect(result?.replies == Array(repeating: .ignored(.noTransition), count: 3))
        #expect(result?.sequence == 1)
        #expect(result?.state == 10)
        #expect(seen.all == [1])
        #expect(loop.sequence == 1)
        // The older API says "no transition" with nil.
        let transition = await loop.emitAndWait(.marker)
        #expect(transition == nil)
        observation.cancel()
        loop.stop()
    }

    @Test func replies_ComeOnePerEvent_InOrder_WithTheirStates() async {
        let loop = makeCapped()
        let result = await loop.emitBatchAndWait([.marker, .add(6), .add(6), .add(4), .marker], detailed: true)
        #expect(result?.replies == [.ignored(.noTransition), .applied, .ignored(.noTransition), .applied,
                                    .ignored(.noTransition)])
        #expect(result?.detailed == [
            .ignored(.marker, state: 0),
            .applied(from: 0, Transition(event: .add(6), state: 6, sequence: 1, endsBatch: false)),
            .ignored(.add(6), state: 6),
            .applied(from: 6, Transition(event: .add(4), state: 10, sequence: 2, endsBatch: true)),
            .ignored(.marker, state: 10),
        ])
        #expect((0..<5).map { result?.reply(at: $0) } == result?.replies)
        loop.stop()
    }

    @Test func plainReducer_AppliesEveryEvent_WithNoDeclinedOffsets() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        let result = await loop.emitBatchAndWait([.add(1), .marker, .add(2)])
        #expect(result?.declined == [])
        #expect(result?.lastApplied == Transition(event: .add(2), state: 3, sequence: 3))
        #expect(result?.replies == [.applied, .applied, .applied])
        loop.stop()
    }

    @Test func declinedFeedbackEvent_IsSkipped() async {
        // A feedback asks for `.add(8)` in every state below 10: the second ask is
        // declined (8 + 8 > 10), and the loop settles at 8 with one applied event.
        let loop = makeCapped(feedbacks: [Feedback(effect: { (state: Int) -> Step? in state < 10 ? .add(8) : nil })])
        _ = await loop.firstState { $0 == 8 }
        _ = await loop.emitBatchAndWait([.marker])
        #expect(loop.sequence == 1)
        #expect(loop.state == 8)
        loop.stop()
    }

    @Test func aBatchReducedAhead_DoesNotLeakIntoTheNextEvents() async {
        let loop = makeCapped()
        _ = await loop.emitBatchAndWait([.add(1), .add(2), .add(3)])
        // The next drain starts its indices at 0 again: a single event without a reply
        // is reduced from the state, not from the last batch's states reduced ahead.
        loop.emit(.add(4))
        _ = await loop.emitBatchAndWait([.marker])
        #expect(loop.state == 10)
        #expect(loop.sequence == 4)
        loop.stop()
    }

    @Test func replay_OfAPartialReducer_KeepsTheStateForADeclinedEvent() {
        let reducer = Reducer<Int, Step>.partial(capped)
        #expect(reducer.replay([.add(4), .marker, .add(5)], from: 0) == 9)
        #expect(reducer.apply(.marker, to: 3) == nil)
        #expect(reducer.isPartial)
        #expect(!Reducer<Int, Step>(sum).isPartial)
    }
}
