import Dispatch
import SpinCore
import Testing

/// A pair whose `count` reducer counts events in `left` and keeps the last one in `right`.
struct Pair: Equatable, Sendable {
    var left: Int
    var right: Int

    static func count(_ pair: Pair, _ event: Int) -> Pair {
        Pair(left: pair.left + 1, right: event)
    }
}

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

    /// The `right`s an effect lensing on them sees (those above 0) when a pair loop is
    /// sent 3, 0, 4 and 5.
    private func rightsSeen(by makeFeedback: (Recorder<Int>) -> Feedback<Pair, Int>) async -> [Int] {
        let seen = Recorder<Int>()
        let loop = Spin(initialState: Pair(left: 0, right: 0), feedbacks: [makeFeedback(seen)],
                        reducer: Reducer(Pair.count)).start()
        loop.emit(3)
        loop.emit(0)
        loop.emit(4)
        _ = await loop.firstState { $0.left == 3 }
        _ = await loop.emitAndWait(5)
        _ = await eventually { seen.count >= 3 }
        loop.stop()
        return seen.all
    }

    @Test func lensingOn_GivesTheEffectASubstate() async {
        let seen = await rightsSeen { seen in
            Feedback(effect: { (right: Int) -> Int? in
                seen.append(right)
                return nil
            }, lensingOn: \Pair.right, filteredBy: { $0 > 0 })
        }
        #expect(seen == [3, 4, 5])
    }

    @Test func lensingOn_TakesAClosure() async {
        let seen = await rightsSeen { seen in
            Feedback(effect: { (right: Int) -> Int? in
                seen.append(right)
                return nil
            }, lensingOn: { (pair: Pair) in pair.right }, filteredBy: { $0 > 0 })
        }
        #expect(seen == [3, 4, 5])
    }

    @Test func rawStreamForm_LensingOnAKeyPathOrAClosure_StreamsTheFilteredSubstates() async {
        let byKeyPath = await rightsSeen { seen in
            Feedback(effect: { (rights: AsyncStream<Int>) in Self.recording(rights, into: seen) },
                     lensingOn: \Pair.right, filteredBy: { $0 > 0 })
        }
        let byClosure = await rightsSeen { seen in
            Feedback(effect: { (rights: AsyncStream<Int>) in Self.recording(rights, into: seen) },
                     lensingOn: { (pair: Pair) in pair.right }, filteredBy: { $0 > 0 })
        }
        #expect(byKeyPath == [3, 4, 5])
        #expect(byClosure == [3, 4, 5])
    }

    @Test func rawStreamForm_FilteredBy_StreamsOnlyTheStatesItAccepts() async {
        let seen = Recorder<Int>()
        let feedback = Feedback<Int, Step>(effect: { (states: AsyncStream<Int>) in Self.recording(states, into: seen) },
                                           filteredBy: { $0 % 2 == 0 })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        for _ in 0..<5 { loop.emit(.add(1)) }
        _ = await loop.firstState { $0 == 5 }
        _ = await loop.emitAndWait(.add(1))
        _ = await eventually { seen.count >= 4 }
        #expect(seen.all == [0, 2, 4, 6])
        loop.stop()
    }

    /// A raw effect that records every element it is given and produces no event.
    static func recording<Element: Sendable, Event>(_ elements: AsyncStream<Element>,
                                                    into seen: Recorder<Element>) -> AsyncStream<Event> {
        AsyncStream { continuation in
            Task {
                for await element in elements { seen.append(element) }
                continuation.finish()
            }
        }
    }

    @Test func asyncLensingForm_RunsOnTheSubstate() async {
        let byKeyPath = Feedback<[Int], Int>(effect: { (count: Int) async -> Int? in
            count < 3 ? count : nil
        }, lensingOn: \[Int].count)
        let byClosure = Feedback<[Int], Int>(effect: { (count: Int) async -> Int? in
            count < 3 ? count : nil
        }, lensingOn: { (list: [Int]) in list.count })
        for feedback in [byKeyPath, byClosure] {
            let loop = Spin(initialState: [Int](), feedbacks: [feedback], reducer: Reducer { $0 + [$1] }).start()
            #expect(await loop.firstState { $0.count == 3 } == [0, 1, 2])
            loop.stop()
        }
    }

    @Test func streamLensingForm_TakesAClosure() async {
        let feedback = Feedback<Pair, Int>(effect: { (left: Int) -> AsyncStream<Int> in
            AsyncStream { continuation in
                if left == 0 { continuation.yield(7) }
                continuation.finish()
            }
        }, lensingOn: { (pair: Pair) in pair.left })
        let loop = Spin(initialState: Pair(left: 0, right: 0), feedbacks: [feedback], reducer: Reducer(Pair.count)).start()
        #expect(await loop.firstState { $0.left == 1 } == Pair(left: 1, right: 7))
        loop.stop()
    }

    @Test func dependencyForms_LensOnASubstate() async {
        // Each counts `left` up to its limit in steps of `step` and ignores `right`.
        let sync = Feedback<Pair, Int>(effect: { (limit: Int, left: Int) -> Int? in
            left < limit ? 0 : nil
        }, dep1: 2, lensingOn: \.left)
        let async = Feedback<Pair, Int>(effect: { (limit: Int, value: Int, left: Int) async -> Int? in
            left >= 2 && left < limit ? value : nil
        }, dep1: 4, dep2: 9, lensingOn: { (pair: Pair) in pair.left })
        let stream = Feedback<Pair, Int>(effect: { (limit: Int, left: Int) -> AsyncStream<Int> in
            AsyncStream { continuation in
                if left >= 4 && left < limit { continuation.yield(1) }
                continuation.finish()
            }
        }, dep1: 6, lensingOn: \.left, filteredBy: { $0 % 2 == 0 })
        let loop = Spin(initialState: Pair(left: 0, right: 0), feedbacks: [sync, async, stream],
                        reducer: Reducer(Pair.count)).start()
        // 0, 1 by sync; 2, 3 by async (right 9); 4 by stream (right 1); 5 is odd, so the
        // stream's filter rejects it and nothing counts further.
        #expect(await loop.firstState { $0.left == 5 } == Pair(left: 5, right: 1))
        #expect(await loop.emitAndWait(-1)?.state == Pair(left: 6, right: -1))
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

    @Test func streamForm_WithCancel_AppliesWhatItHandedOverBeforeTheNewState() async {
        // Spin.Swift switches to the latest effect when a newer state reaches the
        // feedback: the events the old stream handed over before that are applied.
        let state = await stateAfterEventsHandedOverBeforeANewState { handOver in
            Feedback(effect: { (state: Int) in addingOneTwoThree(after: handOver, if: state == 0) })
        }
        #expect(state == 7)
    }

    @Test func latestStateOnly_DropsWhatWasHandedOverWhenANewerStateReachesTheFeedbackFirst() async {
        let state = await stateAfterEventsHandedOverBeforeANewState { handOver in
            Feedback(effect: { (state: Int) in addingOneTwoThree(after: handOver, if: state == 0) },
                     applying: .latestStateOnly)
        }
        #expect(state == 1)
    }

    /// A regulation that asks to add 1 below 10, of a loop at 10 given a batch of three
    /// `-1` (10 → 9 → 8 → 7, each state reaching the feedback): where the loop ends.
    private func regulatedEnd(_ strategy: ExecutionStrategy) async -> Int? {
        let regulation = Feedback<Int, Step>(effect: { (state: Int) -> Step? in state < 10 ? .add(1) : nil },
                                             applying: strategy)
        let loop = Spin(initialState: 10, feedbacks: [regulation], reducer: Reducer(sum)).start()
        _ = await withCheckedContinuation { applied in
            loop.emit(contentsOf: [.add(-1), .add(-1), .add(-1)]) { applied.resume(returning: $0) }
        }
        _ = await loop.firstState { $0 >= 10 }
        let end = await loop.emitAndWait(.marker)?.state
        loop.stop()
        return end
    }

    @Test func latestStateOnly_AppliesOnlyTheEventOfTheLatestState_EvenASynchronousOne() async {
        // The default applies the requests made for 9, 8 and 7, and those for the states
        // they make: the loop overshoots. `latestStateOnly` keeps only the one for 7.
        #expect(await regulatedEnd(.cancelOnNewState) == 12)
        #expect(await regulatedEnd(.latestStateOnly) == 10)
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

    @Test func executeOn_ASynchronousEffectOnABusyQueue_SeesEveryStateInOrder() async {
        let queue = DispatchQueue(label: "test.busy")
        let seen = Recorder<Int>()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) -> Step? in
            seen.append(state)
            return state == 5 ? .add(100) : nil
        }).execute(on: queue)
        let busy = DispatchSemaphore(value: 0)
        queue.async { busy.wait() }
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        for _ in 1...10 { loop.emit(.add(1)) }
        // Once the marker is applied, every state up to 10 went to the feedback while
        // its queue was busy.
        _ = await loop.emitAndWait(.marker)
        busy.signal()
        // The event made for state 5, late, is applied as well, and its state seen.
        _ = await eventually { seen.count >= 13 }
        #expect(seen.all == Array(0...10) + [10, 110])
        #expect(await loop.emitAndWait(.marker)?.state == 110)
        loop.stop()
    }
}
