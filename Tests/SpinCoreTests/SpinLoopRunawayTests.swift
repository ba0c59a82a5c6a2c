import Dispatch
@testable import SpinCore
import Testing

/// The runaway guard of `SpinLoop`: the feedback budget, `suspend(reason:)` and `resume()`.
@Suite(.timeLimit(.minutes(1)))
struct SpinLoopRunawayTests {
    /// Two levels that two feedbacks bring together one step at a time, as the `levels`
    /// example does: a gap wider than the budget is a runaway.
    struct Levels: Equatable, Sendable {
        var left: Int
        var right: Int
    }

    enum Move: Equatable, Sendable {
        case left(Int), right(Int), set(Levels), marker
    }

    /// Converged levels stay put, as in the example.
    static func move(_ state: Levels, _ event: Move) -> Levels {
        if case .set(let levels) = event { return levels }
        guard state.left != state.right else { return state }
        switch event {
        case .left(let step): return Levels(left: state.left + step, right: state.right)
        case .right(let step): return Levels(left: state.left, right: state.right + step)
        case .marker, .set: return state
        }
    }

    static func levels(from state: Levels) -> Spin<Levels, Move> {
        Spin(initialState: state) {
            Feedback(effect: { (state: Levels) -> Move? in
                state.left == state.right ? nil : .left(state.left < state.right ? 1 : -1)
            })
            Feedback(effect: { (state: Levels) -> Move? in
                state.left == state.right ? nil : .right(state.right < state.left ? 1 : -1)
            })
            Reducer(move)
        }
    }

    /// Counts up forever: one feedback event per state.
    static func forever(feedbacks: Int = 1) -> Spin<Int, Step> {
        Spin(initialState: 0, feedbacks: (0..<feedbacks).map { _ in
            Feedback<Int, Step>(effect: { (_: Int) -> Step? in .add(1) })
        }, reducer: Reducer(sum))
    }

    /// Records what `onSuspensionChange` reports and lets a test wait for the n-th report.
    final class Changes: Sendable {
        private let recorder = Recorder<Suspension?>()
        var all: [Suspension?] { recorder.all }

        func attach<State, Event>(to loop: SpinLoop<State, Event>) -> SpinSubscription {
            loop.onSuspensionChange { self.recorder.append($0) }
        }

        func wait(for count: Int) async -> Bool {
            await eventually { self.recorder.count >= count }
        }
    }

    @Test func aRunawayTwoFeedbackLoop_SuspendsAfterExactlyTheBudget() async {
        let loop = Self.levels(from: Levels(left: 0, right: 1_000_000)).makeLoop(feedbackBudget: 1000)
        let changes = Changes()
        let subscription = changes.attach(to: loop)
        let applied = Recorder<UInt64>()
        let observation = loop.observe { applied.append($0.sequence) }
        loop.start()
        #expect(await changes.wait(for: 1))
        #expect(changes.all == [Suspension(reason: .feedbackBudget(1000), sequence: 1000)])
        #expect(loop.isSuspended)
        #expect(loop.suspension == Suspension(reason: .feedbackBudget(1000), sequence: 1000))
        #expect(applied.count == 1000)
        #expect(loop.sequence == 1000)
        // 500 steps each way: the state the runaway reached stays readable.
        #expect(loop.state == Levels(left: 500, right: 999_500))
        // The pending feedback events were dropped.
        #expect(loop.pendingEvents == 0)
        observation.cancel()
        subscription.cancel()
        loop.stop()
    }

    @Test func aSettlingLoop_IsNotSuspended() async {
        let loop = Self.levels(from: Levels(left: 10, right: 20)).start(feedbackBudget: 1000)
        let final = await loop.firstState { $0.left == $0.right }
        #expect(final == Levels(left: 15, right: 15))
        #expect(await loop.emitAndWait(.marker) != nil)
        #expect(!loop.isSuspended)
        loop.stop()
    }

    @Test func anExternalEvent_StartsTheCountAgain() async {
        let loop = Self.forever().makeLoop(feedbackBudget: 100)
        let changes = Changes()
        let subscription = changes.attach(to: loop)
        // On the executor, after the 50th feedback event: the marker is applied next.
        let observation = loop.observe { transition in
            if transition.sequence == 50 { loop.emit(.marker) }
        }
        loop.start()
        #expect(await changes.wait(for: 1))
        // 50 feedback events, the marker, then a whole budget of 100 again.
        #expect(changes.all == [Suspension(reason: .feedbackBudget(100), sequence: 151)])
        #expect(loop.state == 150)
        observation.cancel()
        subscription.cancel()
        loop.stop()
    }

    @Test func aSuspendedLoop_RefusesExternalEvents_KeepsItsStateAndStates_AndChangesNothing() async {
        let loop = Self.forever().makeLoop(feedbackBudget: 10)
        let changes = Changes()
        let subscription = changes.attach(to: loop)
        var iterator = loop.states.makeAsyncIterator()
        loop.start()
        #expect(await changes.wait(for: 1))
        #expect(loop.emit(.add(5)) == .suspended)
        let called = Recorder<Bool>()
        #expect(loop.emit(contentsOf: [.add(1), .add(2)]) { _ in called.append(true) } == .suspended)
        #expect(loop.state == 10)
        #expect(loop.sequence == 10)
        #expect(loop.subscriberCount == 1)
        #expect(called.all.isEmpty)
        // The states sequence is alive and holds every applied state.
        for expected in 0...10 { #expect(await iterator.next() == expected) }
        subscription.cancel()
        loop.stop()
        #expect(await iterator.next() == nil)
    }

    @Test func resume_GivesTheStateToTheFeedbacksAgain_AndRunsUntilTheNextSuspension() async {
        let loop = Self.forever().makeLoop(feedbackBudget: 100)
        let changes = Changes()
        let subscription = changes.attach(to: loop)
        loop.start()
        #expect(await changes.wait(for: 1))
        #expect(loop.resume())
        #expect(await changes.wait(for: 3))
        #expect(changes.all == [
            Suspension(reason: .feedbackBudget(100), sequence: 100),
            nil,
            Suspension(reason: .feedbackBudget(100), sequence: 200),
        ])
        #expect(loop.state == 200)
        subscription.cancel()
        loop.stop()
    }

    @Test func resumeApplyingACorrection_AppliesItFirst_AndTheLoopSettles() async {
        let loop = Self.levels(from: Levels(left: 0, right: 1_000_000)).start(feedbackBudget: 1000)
        let changes = Changes()
        let subscription = changes.attach(to: loop)
        #expect(await changes.wait(for: 1))
        #expect(loop.emit(.marker) == .suspended)
        let applied = Recorder<Transition<Levels, Move>?>()
        #expect(loop.resume(applying: [.set(Levels(left: 7, right: 9))]) { applied.append($0) })
        // The correction is the next event, before anything of the feedbacks; they get
        // the state it made, and settle it: 7/9 takes four events.
        #expect(await eventually { applied.count == 1 })
        #expect(applied.all.first! == Transition(event: .set(Levels(left: 7, right: 9)), state: Levels(left: 7, right: 9),
                                                 sequence: 1001))
        #expect(await loop.firstState { $0.left == $0.right } == Levels(left: 8, right: 8))
        #expect(await loop.emitAndWait(.marker)?.sequence == 1006)
        #expect(!loop.isSuspended)
        #expect(changes.all == [Suspension(reason: .feedbackBudget(1000), sequence: 1000), nil])
        #expect(loop.resume(applying: [.marker]) == false)
        subscription.cancel()
        loop.stop()
    }

    @Test func resumeApplyingEvents_MarksThemOneBatch_ForTheJournal() async {
        let loop = Self.forever().makeLoop(feedbackBudget: 10)
        let changes = Changes()
        let subscription = changes.attach(to: loop)
        let ends = Recorder<(UInt64, Bool)>()
        let observation = loop.observe { ends.append(($0.sequence, $0.endsBatch)) }
        loop.start()
        #expect(await changes.wait(for: 1))
        #expect(loop.resume(applying: [.add(100), .add(200), .marker]))
        #expect(await eventually { ends.count >= 13 })
        // Three events in one batch: only the last one ends it.
        #expect(ends.all[10..<13].map(\.1) == [false, false, true])
        #expect(ends.all[10..<13].map(\.0) == [11, 12, 13])
        observation.cancel()
        subscription.cancel()
        loop.stop()
    }

    @Test func pendingFeedbackEvents_NeverExceedTheBudget() async {
        // Three feedbacks answer every state: the loop produces three events per event it
        // applies, faster than it can apply them, and suspends once the budget waits.
        let loop = Self.forever(feedbacks: 3).makeLoop(feedbackBudget: 1000)
        let changes = Changes()
        let subscription = changes.attach(to: loop)
        let largest = Recorder<Int>()
        let observation = loop.observe { _ in largest.append(loop.pendingEvents) }
        loop.start()
        #expect(await changes.wait(for: 1))
        #expect((largest.all.max() ?? 0) <= 1000)
        #expect(changes.all.first??.reason == .feedbackBudget(1000))
        #expect(loop.sequence < 1000)
        #expect(loop.pendingEvents == 0)
        observation.cancel()
        subscription.cancel()
        loop.stop()
    }

    @Test func suspend_DropsWaitingBatchesWhole_AndTheirOnAppliedGetsNil() async {
        let gate = Gate()
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        // The executor is held by an observer so that a batch waits behind it.
        let observation = await loop.holdExecutor(until: gate)
        let outcome = Recorder<Transition<Int, Step>?>()
        #expect(loop.emit(contentsOf: [.add(2), .add(3)]) { outcome.append($0) } == .accepted)
        #expect(loop.suspend(reason: "storage is failing"))
        #expect(!loop.suspend(reason: "twice"))
        #expect(outcome.all.count == 1 && outcome.all.first! == nil)
        #expect(loop.suspension?.reason == .requested("storage is failing"))
        gate.open()
        #expect(loop.resume())
        #expect(await loop.emitAndWait(.marker)?.state == 1)
        observation.cancel()
        loop.stop()
    }

    /// A loop made with a state it must stop at (a server's machine past its microstep
    /// limit) suspends with that reason at the state, before its observers see it; the
    /// transition is still observed, and the next event is refused until `resume()`.
    @Test func aLoopWithAStopState_SuspendsThere_BeforeItsObserversSeeIt() async {
        let suspendedWhenObserved = Recorder<Bool>()
        let loop = Spin(initialState: 0) { Reducer(sum) }
            .makeLoop(label: nil, sequence: 0, feedbackBudget: 100, suspendingAt: { $0 >= 5 ? "five or more" : nil })
        let observation = loop.observe { [weak loop] _ in suspendedWhenObserved.append(loop?.isSuspended ?? false) }
        loop.start()
        #expect(await loop.emitAndWait(.add(2))?.state == 2)
        #expect(await loop.emitAndWait(.add(3))?.state == 5)
        #expect(loop.suspension?.reason == .requested("five or more"))
        #expect(suspendedWhenObserved.all == [false, true])
        #expect(loop.emit(.add(1)) == .suspended)
        #expect(loop.resume())
        #expect(await loop.emitAndWait(.add(-1))?.state == 4 && !loop.isSuspended)
        observation.cancel()
        loop.stop()
    }

    @Test func suspendedBeforeStart_StartsNothing_UntilResumed() async {
        let seen = Recorder<Int>()
        let loop = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(effect: { (state: Int) -> Step? in
                seen.append(state)
                return state < 3 ? .add(1) : nil
            }),
        ], reducer: Reducer(sum)).makeLoop()
        #expect(loop.suspend(reason: "recovered suspended"))
        loop.start()
        #expect(await loop.firstState { _ in true } == 0)
        #expect(loop.emit(.add(1)) == .suspended)
        #expect(loop.resume())
        #expect(await loop.firstState { $0 == 3 } == 3)
        #expect(seen.all.prefix(4) == [0, 1, 2, 3])
        loop.stop()
    }

    @Test func gearEvents_ToASuspendedLoop_AreDropped() async {
        let gear = Gear<Int>()
        let loop = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, propagating: { (value: Int) -> Step? in .add(value) }),
        ], reducer: Reducer(sum)).start()
        gear.propagate(1)
        #expect(await loop.firstState { $0 == 1 } == 1)
        loop.suspend(reason: "test")
        for _ in 0..<10_000 { gear.propagate(1) }
        #expect(loop.pendingEvents == 0)
        loop.resume()
        gear.propagate(5)
        #expect(await loop.firstState { $0 == 6 } == 6)
        loop.stop()
    }

    @Test func stop_WhileSuspended_FinishesStatesAndReleasesTheLoop() async {
        weak var weakLoop: SpinLoop<Int, Step>?
        var iterator: SpinStates<Int>.Iterator
        do {
            let loop = Self.forever().makeLoop(feedbackBudget: 10)
            weakLoop = loop
            let changes = Changes()
            let subscription = changes.attach(to: loop)
            iterator = loop.states.makeAsyncIterator()
            loop.start()
            #expect(await changes.wait(for: 1))
            loop.stop()
            subscription.cancel()
            #expect(!loop.resume())
            #expect(!loop.suspend(reason: "stopped"))
            #expect(loop.emit(.add(1)) == .stopped)
        }
        while await iterator.next() != nil {}
        #expect(await eventually { weakLoop == nil })
    }
}
