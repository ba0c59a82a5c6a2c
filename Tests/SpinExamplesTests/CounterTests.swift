import Foundation
import SpinCore
import SpinExamples
import SpinTesting
import Testing
@testable import SpinConcurrency

@Suite(.timeLimit(.minutes(1)))
struct CounterTests {
    @Test func counter_CountsFrom0To10_AndStops() async {
        let tester = SpinTester(Counter.spin())
        for value in 1...10 {
            await tester.receive(.increase) { $0.value = value }
        }
        await tester.finish()
    }

    @Test func reset_CountsAgain() async {
        let tester = SpinTester(Counter.spin(initialState: .init(value: 10)))
        await tester.send(.reset) { $0.value = 0 }
        for value in 1...10 {
            await tester.receive(.increase) { $0.value = value }
        }
        await tester.finish()
    }

    @Test func belowTen_TheCounterCountsBackUp() async {
        let tester = SpinTester(Counter.spin(initialState: .init(value: 10)))
        await tester.send(.decrease) { $0.value = 9 }
        await tester.receive(.increase) { $0.value = 10 }
        await tester.finish()
    }

    @Test func belowZero_TheCounterStays() async {
        let tester = SpinTester(Counter.spin(initialState: .init(value: -2)))
        await tester.send(.decrease) { $0.value = -3 }
        await tester.send(.increase) { $0.value = -2 }
        await tester.finish()
    }

    @Test func withATick_EachStepWaitsForTheClock() async {
        let clock = ManualClock()
        let tester = SpinTester(Counter.spin(tick: .milliseconds(100), clock: clock), clock: clock)
        for value in 1...10 {
            await tester.advance(by: .milliseconds(100))
            await tester.receive(.increase) { $0.value = value }
        }
        await tester.finish()
        #expect(clock.now.offset == .seconds(1))
    }

    @Test func aRunningCounterLoop_ReachesTen() async {
        let loop = Counter.spin().start()
        for await state in loop.states where state.value == 10 { break }
        #expect(loop.state.value == 10)
        #expect(loop.sequence == 10)
        loop.stop()
    }
}

@Suite(.timeLimit(.minutes(1)))
struct CounterBatchTests {
    @Test func aBatchOfDecrements_StillStopsAtTen() async {
        for _ in 0..<20 {
            let loop = Counter.spin(initialState: .init(value: 10)).start()
            let done = Protected(false)
            loop.emit(contentsOf: [.decrease, .decrease, .decrease]) { _ in done.withLock { $0 = true } }
            while !done.withLock({ $0 }) { await Task.yield() }
            for await state in loop.states where state.value == 10 { break }
            // Give any request still in flight the chance to (wrongly) land.
            try? await Task.sleep(for: .milliseconds(5))
            #expect(loop.state.value == 10)
            loop.stop()
        }
    }
}
