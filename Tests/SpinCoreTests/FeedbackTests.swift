import Dispatch
import SpinCore
import Testing

@Suite(.timeLimit(.minutes(1)))
struct FeedbackTests {
    @Test func filteredBy_SkipsRejectedStates() async {
        let seen = Recorder<Int>()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) -> Step? in
            seen.append(state)
            return nil
        }, filteredBy: { $0 % 2 == 0 })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        for _ in 0..<5 { loop.emit(.add(1)) }
        _ = await loop.firstState { $0 == 5 }
        _ = await loop.emitAndWait(.marker)
        #expect(seen.all == [0, 2, 4])
        loop.stop()
    }

    /// A loop at 1 whose feedback, filtered to even states, waits at 2 for `gate` and then
    /// adds 100; it is brought to 2 (the effect starts) and then 3 (filtered out).
    private func loopLeavingTheFilteredState(_ strategy: ExecutionStrategy, gate: Gate) async -> SpinLoop<Int, Step> {
        let feedback = Feedback<Int, Step>(effect: { (state: Int) async -> Step? in
            guard state == 2 else { return nil }
            await gate.wait()
            return .add(100)
        }, filteredBy: { $0 % 2 == 0 }, applying: strategy)
        let loop = Spin(initialState: 1, feedbacks: [feedback], reducer: Reducer(sum)).start()
        _ = await loop.emitAndWait(.add(1))
        _ = await loop.emitAndWait(.add(1))
        return loop
    }

    @Test func aFilteredOutState_CancelsTheRunningEffect_UnderCancelOnNewState() async {
        // Spin.Swift's `filteredBy:` and RxFeedback's `react` (a nil request): leaving
        // the filtered state cancels the effect, so a stale result is never applied.
        let gate = Gate()
        let loop = await loopLeavingTheFilteredState(.cancelOnNewState, gate: gate)
        gate.open()
        #expect(await loop.emitAndWait(.marker)?.state == 3)
        try? await Task.sleep(for: .milliseconds(50))
        #expect(await loop.emitAndWait(.marker)?.state == 3)
        loop.stop()
    }

    @Test func aFilteredOutState_LeavesTheRunningEffect_UnderContinueOnNewState() async {
        let gate = Gate()
        let loop = await loopLeavingTheFilteredState(.continueOnNewState, gate: gate)
        gate.open()
        #expect(await loop.firstState { $0 == 103 } == 103)
        loop.stop()
    }

    @Test func lensingOn_GivesTheEffectASubstate() async {
        struct Pair: Equatable, Sendable { var left: Int; var right: Int }
        let seen = Recorder<Int>()
        let feedback = Feedback<Pair, Int>(effect: { (right: Int) -> Int? in
            seen.append(right)
            return nil
        }, lensingOn: \Pair.right, filteredBy: { $0 > 0 })
        let loop = Spin(initialState: Pair(left: 0, right: 0), feedbacks: [feedback],
                        reducer: Reducer { state, event in Pair(left: state.left + 1, right: event) }).start()
        loop.emit(3)
        loop.emit(0)
        loop.emit(4)
        _ = await loop.firstState { $0.left == 3 }
        _ = await loop.emitAndWait(5)
        #expect(seen.all == [3, 4, 5])
        loop.stop()
    }

    @Test func asyncLensingForm_RunsOnTheSubstate() async {
        let feedback = Feedback<[Int], Int>(effect: { (count: Int) async -> Int? in
            count < 3 ? count : nil
        }, lensingOn: \[Int].count)
        let loop = Spin(initialState: [Int](), feedbacks: [feedback],
                        reducer: Reducer { $0 + [$1] }).start()
        #expect(await loop.firstState { $0.count == 3 } == [0, 1, 2])
        loop.stop()
    }

    @Test func dependencies_ArePassedBeforeTheState() async {
        let base = Token("base")
        let feedback = Feedback<Int, Step>(effect: { (token: Token, limit: Int, state: Int) -> Step? in
            token.name == "base" && state < limit ? .add(1) : nil
        }, dep1: base, dep2: 4)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 4 } == 4)
        loop.stop()
    }

    @Test func asyncDependencyForm_Works() async {
        let feedback = Feedback<Int, Step>(effect: { (step: Int, state: Int) async -> Step? in
            state < 9 ? .add(step) : nil
        }, dep1: 3)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 9 } == 9)
        loop.stop()
    }

    static func oneTwoThree(state: Int) -> AsyncStream<Step> {
        AsyncStream { continuation in
            if state == 0 {
                for n in 1...3 { continuation.yield(.add(n)) }
            }
            continuation.finish()
        }
    }

    @Test func streamForm_WithContinue_AppliesEveryElementForItsState() async {
        let feedback = Feedback<Int, Step>(effect: Self.oneTwoThree, applying: .continueOnNewState)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 6 } == 6)
        loop.stop()
    }

    @Test func streamForm_WithCancel_StopsAtTheFirstNewState() async {
        // The first element makes a new state, which cancels the stream for state 0:
        // the elements after it are never applied, however fast they were produced.
        let feedback = Feedback<Int, Step>(effect: Self.oneTwoThree)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 1 } == 1)
        try? await Task.sleep(for: .milliseconds(20))
        #expect(await loop.emitAndWait(.marker)?.state == 1)
        loop.stop()
    }

    @Test func streamForm_WithDependencies_Works() async {
        let feedback = Feedback<Int, Step>(effect: { (a: Int, b: Int, state: Int) -> AsyncStream<Step> in
            AsyncStream { continuation in
                if state == 0 { continuation.yield(.add(a)); continuation.yield(.add(b)) }
                continuation.finish()
            }
        }, dep1: 2, dep2: 5, applying: .continueOnNewState)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 7 } == 7)
        loop.stop()
    }

    @Test func streamForm_ANewStateCancelsTheOldStream() async {
        let gate = Gate()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) -> AsyncStream<Step> in
            AsyncStream { continuation in
                guard state == 1 else { continuation.finish(); return }
                Task {
                    await gate.wait()
                    continuation.yield(.add(100))
                    continuation.finish()
                }
            }
        })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        _ = await loop.emitAndWait(.add(1))
        _ = await loop.emitAndWait(.add(1))
        gate.open()
        try? await Task.sleep(for: .milliseconds(20))
        #expect(await loop.emitAndWait(.marker)?.state == 2)
        loop.stop()
    }

    @Test func rawStreamForm_SeesEveryStateAndLivesWithTheLoop() async {
        let seen = Recorder<Int>()
        let feedback = Feedback<Int, Step>(effect: { (states: AsyncStream<Int>) -> AsyncStream<Step> in
            AsyncStream { continuation in
                Task {
                    for await state in states {
                        seen.append(state)
                        if state < 3 { continuation.yield(.add(1)) }
                    }
                    continuation.finish()
                }
            }
        })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 3 } == 3)
        _ = await eventually { seen.count >= 4 }
        #expect(seen.all == [0, 1, 2, 3])
        loop.stop()
    }

    @Test func executeOn_RunsTheEffectOnThatQueue() async {
        let queue = DispatchQueue(label: "test.feedback")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "feedback queue")
        let syncPlaces = Recorder<String?>()
        let asyncPlaces = Recorder<String?>()
        let sync = Feedback<Int, Step>(effect: { (state: Int) -> Step? in
            syncPlaces.append(DispatchQueue.getSpecific(key: key))
            return nil
        }).execute(on: queue)
        let async = Feedback<Int, Step>(effect: { (state: Int) async -> Step? in
            asyncPlaces.append(DispatchQueue.getSpecific(key: key))
            return state == 0 ? .add(1) : nil
        }).execute(on: queue)
        let loop = Spin(initialState: 0, feedbacks: [sync, async], reducer: Reducer(sum)).start()
        _ = await loop.firstState { $0 == 1 }
        _ = await eventually { syncPlaces.count >= 2 && asyncPlaces.count >= 2 }
        #expect(syncPlaces.all == ["feedback queue", "feedback queue"])
        #expect(asyncPlaces.all == ["feedback queue", "feedback queue"])
        loop.stop()
    }
}
