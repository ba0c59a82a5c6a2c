import Dispatch
import SpinCore
import Synchronization
import Testing
@testable import SpinConcurrency

@Suite(.timeLimit(.minutes(1)))
struct SpinLoopTests {
    @Test func events_AreAppliedInArrivalOrder_EachExactlyOnce() async {
        let loop = Spin(initialState: [Int]()) {
            Reducer { (state: [Int], event: Int) in state + [event] }
        }.start()
        let transitions = Recorder<UInt64>()
        let observation = loop.observe { transitions.append($0.sequence) }
        for value in 0..<1000 { loop.emit(value) }
        let final = await loop.firstState { $0.count == 1000 }
        #expect(final == Array(0..<1000))
        #expect(transitions.all == Array(1...1000))
        #expect(loop.sequence == 1000)
        observation.cancel()
        loop.stop()
    }

    @Test func concurrentEmitters_KeepTheirOwnOrder_AndLoseNothing() async {
        let loop = Spin(initialState: [Int]()) {
            Reducer { (state: [Int], event: Int) in state + [event] }
        }.start()
        DispatchQueue.concurrentPerform(iterations: 4) { emitter in
            for index in 0..<250 { loop.emit(emitter * 1000 + index) }
        }
        let final = await loop.firstState { $0.count == 1000 } ?? []
        for emitter in 0..<4 {
            let mine = final.filter { $0 / 1000 == emitter }
            #expect(mine == (0..<250).map { emitter * 1000 + $0 })
        }
        #expect(Set(final).count == 1000)
        loop.stop()
    }

    @Test func everyFeedback_SeesTheInitialStateFirst_ThenEveryStateInOrder() async {
        let seen = (0..<3).map { _ in Recorder<Int>() }
        let spin = Spin(initialState: 5, feedbacks: seen.map { recorder in
            Feedback<Int, Step>(effect: { (state: Int) -> Step? in
                recorder.append(state)
                return nil
            })
        }, reducer: Reducer(sum))
        let loop = spin.start()
        for n in 1...5 { loop.emit(.add(n)) }
        _ = await loop.firstState { $0 == 20 }
        _ = await loop.emitAndWait(.marker)
        for recorder in seen {
            #expect(recorder.all == [5, 6, 8, 11, 15, 20, 20])
        }
        loop.stop()
    }

    @Test func states_StartWithTheCurrentState() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        _ = await loop.emitAndWait(.add(7))
        var iterator = loop.states.makeAsyncIterator()
        #expect(await iterator.next() == 7)
        loop.emit(.add(1))
        #expect(await iterator.next() == 8)
        loop.stop()
        #expect(await iterator.next() == nil)
    }

    @Test func states_OfAStoppedLoop_GiveTheLastStateAndEnd() async {
        let loop = Spin(initialState: 3) { Reducer(sum) }.start()
        loop.stop()
        var collected: [Int] = []
        for await state in loop.states { collected.append(state) }
        #expect(collected == [3])
    }

    @Test func cancelOnNewState_DropsWhatTheOldEffectProducesAfterANewerState() async {
        let gate = Gate()
        let finished = Gate()
        let sawCancellation = Recorder<Bool>()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) async -> Step? in
            guard state == 1 else { return nil }
            await gate.wait()
            sawCancellation.append(Task.isCancelled)
            finished.open()
            return .add(100)
        })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        _ = await loop.emitAndWait(.add(1))   // state 1: the effect starts and waits
        _ = await loop.emitAndWait(.add(1))   // state 2 cancels it
        gate.open()
        await finished.wait()
        let marker = await loop.emitAndWait(.marker)
        #expect(marker?.state == 2)
        #expect(marker?.sequence == 3)
        #expect(sawCancellation.all == [true])
        loop.stop()
    }

    @Test func continueOnNewState_AppliesWhatTheOldEffectProduces() async {
        let gate = Gate()
        let finished = Gate()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) async -> Step? in
            guard state == 1 else { return nil }
            await gate.wait()
            defer { finished.open() }
            return .add(100)
        }, applying: .continueOnNewState)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        _ = await loop.emitAndWait(.add(1))
        _ = await loop.emitAndWait(.add(1))
        gate.open()
        await finished.wait()
        let final = await loop.firstState { $0 == 102 }
        #expect(final == 102)
        loop.stop()
    }

    @Test func synchronousEvents_AreNeverDroppedByLaterStates() async {
        // Both feedbacks answer every state synchronously; both events were produced
        // before any newer state, so both are applied (levels converge to the middle).
        let left = Feedback<Int, Step>(effect: { (state: Int) -> Step? in state < 10 ? .add(1) : nil })
        let right = Feedback<Int, Step>(effect: { (state: Int) -> Step? in state < 10 ? .add(1) : nil })
        let transitions = Recorder<Step>()
        let loop = Spin(initialState: 0, feedbacks: [left, right], reducer: Reducer(sum)).makeLoop()
        let observation = loop.observe { transitions.append($0.event) }
        loop.start()
        _ = await loop.firstState { $0 >= 20 }
        _ = await loop.emitAndWait(.marker)
        // Each of the states 0...9 makes both feedbacks emit, and every produced event is
        // applied: 20 increments.
        #expect(transitions.all.filter { $0 == .add(1) }.count == 20)
        #expect(loop.state == 20)
        observation.cancel()
        loop.stop()
    }

    @Test func emitBatch_OverTheLimit_IsRefusedWhole() async {
        let gate = Gate()
        // The executor is blocked by an observer so that the inbox fills up.
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        let observation = await loop.holdExecutor(until: gate)
        #expect(loop.emit(contentsOf: [.add(2), .add(3)], limit: 3) == .accepted)
        #expect(loop.emit(contentsOf: [.add(4), .add(5)], limit: 3) == .inboxFull)
        #expect(loop.pendingEvents == 2)
        gate.open()
        let final = await loop.firstState { $0 == 6 }
        #expect(final == 6)
        #expect(loop.sequence == 3)
        observation.cancel()
        loop.stop()
    }

    @Test func onApplied_GetsTheTransitionOfTheLastEventOfTheBatch() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        let transition: Transition<Int, Step>? = await withCheckedContinuation { continuation in
            loop.emit(contentsOf: [.add(1), .add(2), .add(3)]) { continuation.resume(returning: $0) }
        }
        #expect(transition == Transition(event: .add(3), state: 6, sequence: 3))
        loop.stop()
    }

    @Test func emit_AfterStop_ChangesNothing_AndOnAppliedGetsNil() async {
        let loop = Spin(initialState: 1) { Reducer(sum) }.start()
        loop.stop()
        loop.emit(.add(1))
        let refused = loop.emit(contentsOf: [.add(1)]) { _ in Issue.record("must not be called") }
        #expect(refused == .stopped)
        #expect(loop.state == 1)
        #expect(loop.sequence == 0)
    }

    @Test func stopAndWait_ReturnsOnlyOnceTheBatchBeingAppliedIsApplied_AndDropsTheOthers() async {
        let (held, gate) = (Gate(), Gate())
        let loop = Spin(initialState: 0) {
            Reducer { (state: Int, event: Step) in
                if event == .add(1) {
                    // The executor is in this batch when the loop is told to stop.
                    held.open()
                    let semaphore = DispatchSemaphore(value: 0)
                    Task { await gate.wait(); semaphore.signal() }
                    semaphore.wait()
                }
                return sum(state, event)
            }
        }.start()
        let observed = Recorder<UInt64>()
        let observation = loop.observe { observed.append($0.sequence) }
        let results = Recorder<UInt64?>()
        loop.emit(batch: [.add(1)]) { results.append($0?.sequence) }
        await held.wait()
        loop.emit(batch: [.add(2)]) { results.append($0?.sequence) }
        let stopped = Protected(false)
        DispatchQueue.global().async {
            loop.stopAndWait()
            stopped.withLock { $0 = true }
        }
        // The batch still waiting comes back unapplied at once; the one being applied
        // keeps `stopAndWait` waiting.
        #expect(await eventually { results.all == [nil] })
        try? await Task.sleep(for: .milliseconds(50))
        #expect(!stopped.withLock { $0 })
        gate.open()
        #expect(await eventually { stopped.withLock { $0 } })
        // Returned: the batch was applied, observed and answered, and nothing follows.
        #expect(results.all == [nil, 1])
        #expect(observed.all == [1])
        #expect(loop.emit(.add(3)) == .stopped)
        observation.cancel()
    }

    @Test func makeLoop_QueuesEvents_UntilStart() async {
        let seen = Recorder<Int>()
        let spin = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(effect: { (state: Int) -> Step? in seen.append(state); return nil }),
        ], reducer: Reducer(sum))
        let loop = spin.makeLoop(sequence: 41)
        loop.emit(.add(1))
        #expect(loop.state == 0)
        #expect(seen.all.isEmpty)
        loop.start()
        let final = await loop.firstState { $0 == 1 }
        _ = await loop.emitAndWait(.marker)
        #expect(final == 1)
        #expect(seen.all.prefix(2) == [0, 1])
        #expect(loop.sequence == 43)
        loop.stop()
    }

    @Test func stop_CancelsEffects_FinishesStates_AndReleasesTheLoopAndItsEffects() async {
        weak var weakLoop: SpinLoop<Int, Step>?
        weak var weakDependency: Token?
        let cancelled = Gate()
        let running = Gate()
        var iterator: SpinStates<Int>.Iterator
        do {
            let dependency = Token("backend")
            weakDependency = dependency
            let forever = Feedback<Int, Step>(effect: { (dependency: Token, state: Int) async -> Step? in
                _ = dependency
                running.open()
                try? await Task.sleep(for: .seconds(3600))
                if Task.isCancelled { cancelled.open() }
                return .add(1)
            }, dep1: dependency)
            let loop = Spin(initialState: 0, feedbacks: [forever], reducer: Reducer(sum)).start()
            weakLoop = loop
            iterator = loop.states.makeAsyncIterator()
            #expect(await iterator.next() == 0)
            await running.wait()
            loop.stop()
        }
        await cancelled.wait()
        #expect(await iterator.next() == nil)
        #expect(weakLoop == nil)
        // The effect's task ends right after it returns; its closure goes with it.
        #expect(await eventually { weakDependency == nil })
    }

    @Test func aRunningLoop_KeepsItselfAlive_UntilStop() async {
        weak var weakLoop: SpinLoop<Int, Step>?
        do {
            let loop = Spin(initialState: 0, feedbacks: [
                Feedback<Int, Step>(effect: { (state: Int) async -> Step? in
                    try? await Task.sleep(for: .milliseconds(1))
                    return state < 50 ? .add(1) : nil
                }),
            ], reducer: Reducer(sum)).start()
            weakLoop = loop
        }
        #expect(weakLoop != nil)
        let final = await weakLoop?.firstState { $0 == 50 }
        #expect(final == 50)
        weakLoop?.stop()
        // Work already on the executor finishes first; nothing else holds the loop.
        #expect(await eventually { weakLoop == nil })
    }

    @Test func observe_SeesEveryTransition_BeforeFeedbacks() async {
        let order = Recorder<String>()
        let spin = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(effect: { (state: Int) -> Step? in order.append("feedback \(state)"); return nil }),
        ], reducer: Reducer(sum))
        let loop = spin.makeLoop()
        let observation = loop.observe { order.append("observer \($0.state)") }
        loop.start()
        _ = await loop.emitAndWait(.add(1))
        _ = await loop.emitAndWait(.marker)
        #expect(order.all == ["feedback 0", "observer 1", "feedback 1", "observer 1", "feedback 1"])
        observation.cancel()
        loop.stop()
    }

    @Test func theLoop_RunsOnTheGivenExecutor() async {
        let queue = DispatchQueue(label: "test.executor")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "mine")
        let labels = Recorder<String?>()
        let loop = Spinner
            .initialState(0, executeOn: queue)
            .reducer(Reducer { (state: Int, event: Step) in
                labels.append(DispatchQueue.getSpecific(key: key))
                return sum(state, event)
            })
            .start()
        _ = await loop.emitAndWait(.add(1))
        #expect(labels.all == ["mine"])
        loop.stop()
    }
}

@Suite(.timeLimit(.minutes(1)))
struct SpinStatesTests {
    @Test func droppingASequence_Unsubscribes() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        do {
            var iterator = loop.states.makeAsyncIterator()
            #expect(await iterator.next() == 0)
            #expect(loop.subscriberCount == 1)
        }
        #expect(loop.subscriberCount == 0)
        loop.stop()
    }

    @Test func cancellingTheConsumer_EndsItsSequence() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        let consumer = Task { () -> Int in
            var count = 0
            for await _ in loop.states { count += 1 }
            return count
        }
        while loop.subscriberCount == 0 { await Task.yield() }
        consumer.cancel()
        #expect(await consumer.value == 1)
        loop.stop()
    }

    @Test func aSlowConsumer_GetsEveryStateInOrder() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        let states = loop.states
        for _ in 0..<10_000 { loop.emit(.add(1)) }
        var expected = 0
        for await state in states {
            #expect(state == expected)
            if state == 10_000 { break }
            expected += 1
        }
        loop.stop()
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ObserveFromSnapshotTests {
    @Test func theSnapshotAndTheTransitions_FollowEachOtherWithoutGapOrOverlap() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        let producer = Task.detached { for _ in 0..<20_000 { loop.emit(.add(1)) } }
        // Join while events pour in: the first transition must follow the snapshot.
        let seen = Recorder<UInt64>()
        let start = Recorder<UInt64>()
        let joined = Gate()
        let subscription = loop.observe(startingWith: { sequence, state in
            #expect(UInt64(state) == sequence)
            start.append(sequence)
            joined.open()
        }) { transition in seen.append(transition.sequence) }
        await joined.wait()
        await producer.value
        _ = await loop.emitAndWait(.marker)
        let sequences = seen.all
        let first = start.all.first ?? 0
        #expect(sequences == Array((first + 1)...20_001))
        subscription.cancel()
        loop.stop()
    }

    @Test func observingAStoppedLoop_GivesItsLastStateAtOnce() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        _ = await loop.emitAndWait(.add(4))
        loop.stop()
        let snapshot = Recorder<Int>()
        _ = loop.observe(startingWith: { _, state in snapshot.append(state) }) { _ in Issue.record("no transition after stop") }
        #expect(snapshot.all == [4])
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ReviewRegressionTests {
    @Test func whoeverIsToldApplied_ReadsItBack() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.start()
        let seen = Recorder<Bool>()
        let done = Gate()
        loop.emit(contentsOf: [.add(1), .add(2), .add(3)]) { transition in
            seen.append(loop.sequence == transition?.sequence && loop.state == transition?.state)
            done.open()
        }
        await done.wait()
        #expect(seen.all == [true])
        loop.stop()
    }

    @Test func replaceState_TakesTheNextSequence_TheFeedbacksGetTheState_ObserversNoTransition() async {
        // A feedback that counts up to 10 from whatever state it is given.
        let counting = Feedback<Int, Step>(effect: { (state: Int) -> Step? in state < 10 ? .add(1) : nil })
        let loop = Spin(initialState: 0, feedbacks: [counting], reducer: Reducer(sum)).makeLoop()
        let observed = Recorder<(UInt64, Int)>()
        let observation = loop.observe { observed.append(($0.sequence, $0.state)) }
        loop.start()
        _ = await loop.firstState { $0 == 10 }
        #expect(loop.sequence == 10)
        let recorded = Recorder<UInt64?>()
        loop.replaceState(with: 4, record: { sequence in
            recorded.append(sequence)
            // Told before anyone reads the state.
            #expect(loop.sequence == 10)
        })
        // Sequence 11 is the replacement; the feedback counts on from 4: 12...17.
        #expect(await eventually { loop.sequence == 17 })
        #expect(recorded.all == [11])
        #expect(loop.state == 10)
        let after = observed.all.filter { $0.0 > 10 }
        #expect(after.map(\.0) == Array(12...17) && after.map(\.1) == Array(5...10))
        // Suspended or stopped: nothing taken, told nil.
        #expect(loop.suspend(reason: "held"))
        loop.replaceState(with: 0, record: { recorded.append($0) })
        #expect(await eventually { recorded.count == 2 })
        #expect(recorded.all.last == .some(nil) && loop.sequence == 17 && loop.state == 10)
        loop.stop()
        loop.replaceState(with: 0, record: { recorded.append($0) })
        #expect(await eventually { recorded.count == 3 })
        #expect(recorded.all.last == .some(nil) && loop.sequence == 17)
        observation.cancel()
    }

    @Test func afterStop_TheStateStillShowsEveryAppliedEvent() async {
        let loop = Spin(initialState: 0) { Reducer(sum) }.makeLoop()
        let applied = Recorder<UInt64>()
        let observation = loop.observe { transition in
            applied.append(transition.sequence)
            if transition.sequence == 5 { loop.stop() }
        }
        loop.start()
        for _ in 0..<5 { loop.emit(.add(1)) }
        #expect(await eventually { applied.count == 5 })
        #expect(loop.sequence == 5)
        #expect(loop.state == 5)
        observation.cancel()
    }

    @Test func stop_CancelsAnEffectStillQueuedOnItsExecutor() async {
        let queue = DispatchQueue(label: "test.blocked")
        let ran = Recorder<Int>()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) -> Step? in
            ran.append(state)
            return nil
        }).execute(on: queue)
        queue.suspend()
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        _ = await loop.emitAndWait(.marker)
        loop.stop()
        queue.resume()
        queue.sync {}
        #expect(ran.all.isEmpty)
    }

    @Test func aCancelledAsyncEffect_IsNotAppliedEvenIfItRacedTheNewState() async {
        // The effect hands its event over while a newer state is being delivered: the
        // loop re-checks before applying.
        let release = Gate()
        let handedOver = Gate()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) -> AsyncStream<Step> in
            AsyncStream { continuation in
                guard state == 1 else { return continuation.finish() }
                Task {
                    await release.wait()
                    continuation.yield(.add(100))
                    continuation.finish()
                    handedOver.open()
                }
            }
        })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        _ = await loop.emitAndWait(.add(1))
        _ = await loop.emitAndWait(.add(1))
        release.open()
        await handedOver.wait()
        try? await Task.sleep(for: .milliseconds(20))
        #expect(await loop.emitAndWait(.marker)?.state == 2)
        loop.stop()
    }
}
