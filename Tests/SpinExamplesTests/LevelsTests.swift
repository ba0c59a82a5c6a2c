import SpinCore
import SpinExamples
import SpinTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct LevelsTests {
    /// Both feedbacks answer each state, in feedback order, and the reducer ignores
    /// whatever arrives once the levels are equal.
    static func assertConvergence(_ tester: SpinTester<Levels.State, Levels.Event>) async {
        // State 10/20: left asks +1, right asks -1.
        await tester.receive(.increaseLeft) { $0.left = 11 }       // 11/20: +1, -1
        await tester.receive(.decreaseRight) { $0.right = 19 }     // 11/19: +1, -1
        await tester.receive(.increaseLeft) { $0.left = 12 }       // 12/19: +1, -1
        await tester.receive(.decreaseRight) { $0.right = 18 }
        await tester.receive(.increaseLeft) { $0.left = 13 }
        await tester.receive(.decreaseRight) { $0.right = 17 }
        await tester.receive(.increaseLeft) { $0.left = 14 }
        await tester.receive(.decreaseRight) { $0.right = 16 }
        await tester.receive(.increaseLeft) { $0.left = 15 }
        await tester.receive(.decreaseRight) { $0.right = 15 }     // converged
        // The requests made for the ten states before convergence still arrive, and the
        // reducer ignores them.
        for _ in 0..<5 {
            await tester.receive(.increaseLeft)
            await tester.receive(.decreaseRight)
        }
        await tester.finish()
        #expect(tester.state == Levels.State(left: 15, right: 15))
    }

    @Test func dslForm_Converges() async {
        await Self.assertConvergence(SpinTester(Levels.spin()))
    }

    @Test func builderForm_ConvergesTheSameWay() async {
        await Self.assertConvergence(SpinTester(Levels.builderSpin()))
    }

    @Test func set_StartsAgainFromNewValues() async {
        let tester = SpinTester(Levels.spin(initialState: .init(left: 3, right: 3)))
        await tester.send(.set(left: 5, right: 3)) { $0 = .init(left: 5, right: 3) }
        await tester.receive(.decreaseLeft) { $0.left = 4 }
        await tester.receive(.increaseRight) { $0.right = 4 }
        await tester.receive(.decreaseLeft)
        await tester.receive(.increaseRight)
        await tester.finish()
        #expect(tester.state == .init(left: 4, right: 4))
    }

    @Test func aRunningLevelsLoop_Converges() async {
        let loop = Levels.spin().start()
        for await state in loop.states where state.left == state.right { break }
        #expect(loop.state.left == loop.state.right)
        loop.stop()
    }
}
