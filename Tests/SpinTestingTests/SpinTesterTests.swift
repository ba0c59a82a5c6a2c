import SpinCore
import SpinTesting
import Testing

enum Tick: Equatable, Sendable {
    case add(Int)
    case start
}

func reduce(_ state: Int, _ event: Tick) -> Int {
    switch event {
    case .add(let n): state + n
    case .start: 0
    }
}

/// Counts to 3, one step per second of `clock`.
func slowCounter(clock: ManualClock) -> Spin<Int, Tick> {
    Spin(initialState: 0) {
        Feedback(effect: { (clock: ManualClock, state: Int) async -> Tick? in
            guard state < 3 else { return nil }
            do { try await clock.sleep(for: .seconds(1)) } catch { return nil }
            return .add(1)
        }, dep1: clock)
        Reducer(reduce)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct SpinTesterTests {
    @Test func aFullyAssertedRun_Passes() async {
        let tester = SpinTester(Spin(initialState: 0) {
            Feedback(effect: { (state: Int) -> Tick? in state == 1 ? .add(10) : nil })
            Reducer(reduce)
        })
        await tester.send(.add(1)) { $0 = 1 }
        await tester.receive(.add(10)) { $0 = 11 }
        await tester.finish()
        #expect(tester.state == 11)
        #expect(tester.sequence == 2)
    }

    @Test func manualClock_DrivesEffectsWithoutWaiting() async {
        let clock = ManualClock()
        let tester = SpinTester(slowCounter(clock: clock), clock: clock)
        for expected in 1...3 {
            await tester.advance(by: .seconds(1))
            await tester.receive(.add(1)) { $0 = expected }
        }
        await tester.finish()
        #expect(clock.now.offset == .seconds(3))
    }

    @Test func aWrongState_IsReported() async {
        let tester = SpinTester(Spin(initialState: 0) { Reducer(reduce) })
        await withKnownIssue {
            await tester.send(.add(2)) { $0 = 3 }
        }
        await tester.finish()
    }

    @Test func anUnassertedChange_IsReported() async {
        let tester = SpinTester(Spin(initialState: 0) { Reducer(reduce) })
        await withKnownIssue {
            await tester.send(.add(2))
        }
        await tester.finish()
    }

    @Test func anUnexpectedEvent_IsReported() async {
        let tester = SpinTester(Spin(initialState: 0) {
            Feedback(effect: { (state: Int) -> Tick? in state == 0 ? .add(1) : nil })
            Reducer(reduce)
        })
        await withKnownIssue {
            await tester.receive(.add(2)) { $0 = 1 }
        }
        await tester.finish()
    }

    @Test func anUnreceivedEvent_FailsFinish() async {
        let tester = SpinTester(Spin(initialState: 0) {
            Feedback(effect: { (state: Int) -> Tick? in state == 0 ? .add(1) : nil })
            Reducer(reduce)
        })
        await withKnownIssue {
            await tester.finish()
        }
    }

    @Test func sendingWithUnreceivedEvents_IsReported() async {
        let tester = SpinTester(Spin(initialState: 0) {
            Feedback(effect: { (state: Int) -> Tick? in state == 0 ? .add(1) : nil })
            Reducer(reduce)
        })
        await withKnownIssue {
            await tester.send(.start)
        }
        tester.skipReceivedEvents()
        await tester.finish()
    }

    @Test func advance_WithoutAClock_IsReported() async {
        let tester = SpinTester(Spin(initialState: 0) { Reducer(reduce) })
        await withKnownIssue {
            await tester.advance(by: .seconds(1))
        }
        await tester.finish()
    }

    @Test func anEffectStillRunning_FailsFinish() async {
        let clock = ManualClock()
        let tester = SpinTester(slowCounter(clock: clock), clock: clock, timeout: .milliseconds(200))
        await withKnownIssue {
            await tester.finish()
        }
        #expect(clock.sleepers == 0)   // finish stopped the effect
    }

    @Test func anEventThatNeverComes_IsReported() async {
        let clock = ManualClock()
        let tester = SpinTester(slowCounter(clock: clock), clock: clock, timeout: .milliseconds(200))
        await withKnownIssue {
            await tester.receive(.add(1)) { $0 = 1 }
        }
        await tester.advance(by: .seconds(1))
        await tester.receive(.add(1)) { $0 = 1 }
        await tester.advance(by: .seconds(1))
        await tester.receive(.add(1)) { $0 = 2 }
        await tester.advance(by: .seconds(1))
        await tester.receive(.add(1)) { $0 = 3 }
        await tester.finish()
    }

    @Test func cancelledEffects_ProduceNothing_AsInALoop() async {
        let clock = ManualClock()
        let tester = SpinTester(slowCounter(clock: clock), clock: clock)
        // The sleep for state 0 is cancelled by the new state 5; state 5 starts none.
        await tester.send(.add(5)) { $0 = 5 }
        await tester.advance(by: .seconds(1))
        await tester.finish()
    }
}

@Suite struct ManualClockTests {
    @Test func sleepers_WakeInDeadlineOrder_OnlyWhenTimePasses() async {
        let clock = ManualClock()
        let woke = WokeList()
        let first = Task { try? await clock.sleep(for: .seconds(2)); await woke.add(2) }
        let second = Task { try? await clock.sleep(for: .seconds(1)); await woke.add(1) }
        while clock.sleepers < 2 { await Task.yield() }
        await clock.advance(by: .milliseconds(999))
        #expect(await woke.all.isEmpty)
        await clock.advance(by: .seconds(5))
        _ = await (first.value, second.value)
        #expect(await woke.all.sorted() == [1, 2])
        #expect(clock.sleepers == 0)
    }

    @Test func cancellingASleeper_ThrowsAndRemovesIt() async {
        let clock = ManualClock()
        let task = Task { () -> Bool in
            do { try await clock.sleep(for: .seconds(1)); return false } catch { return error is CancellationError }
        }
        while clock.sleepers < 1 { await Task.yield() }
        task.cancel()
        #expect(await task.value)
        #expect(clock.sleepers == 0)
    }
}

actor WokeList {
    var all: [Int] = []
    func add(_ value: Int) { all.append(value) }
}

@Suite(.timeLimit(.minutes(1)))
struct RawFormTesterTests {
    @Test func aRawStreamFeedback_IsNotAnEffectStillRunning() async {
        let tester = SpinTester(Spin(initialState: 0) {
            Feedback(effect: { (states: AsyncStream<Int>) -> AsyncStream<Tick> in
                AsyncStream { continuation in
                    Task {
                        for await state in states where state == 1 { continuation.yield(.add(1)) }
                        continuation.finish()
                    }
                }
            })
            Reducer(reduce)
        })
        await tester.send(.add(1)) { $0 = 1 }
        await tester.receive(.add(1)) { $0 = 2 }
        await tester.finish()
    }
}
