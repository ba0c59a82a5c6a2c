import SpinCore
import SpinTesting
import Testing

/// Harvest's login example: TransitionTables.md's table (`ReadmeLogin`), its effects waiting on a
/// manual clock given as the environment, so the test decides when time passes.
enum LoginExample {
    static func tester() -> (SpinTester<ReadmeLogin.Session, ReadmeLogin.SessionEvent>, ManualClock) {
        let clock = ManualClock()
        let spin = Spin(initialState: .loggedOut, table: ReadmeLogin.table, environment: ReadmeLogin.World(clock: clock))
        return (SpinTester(spin, clock: clock), clock)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct LoginExampleTests {
    @Test func loginAndLogout_CompleteByTheirDelayedEffects() async {
        let (tester, _) = LoginExample.tester()
        await tester.send(.login) { $0 = .loggingIn }
        await tester.advance(by: .milliseconds(500))
        await tester.receive(.loginOK) { $0 = .loggedIn }
        await tester.send(.logout) { $0 = .loggingOut }
        await tester.advance(by: .milliseconds(500))
        await tester.receive(.logoutOK) { $0 = .loggedOut }
        await tester.finish()
        #expect(tester.sequence == 4)
    }

    @Test func forceLogout_RightAfterLogin_CancelsThePendingLoginOK() async {
        let (tester, clock) = LoginExample.tester()
        await tester.send(.login) { $0 = .loggingIn }
        await tester.send(.forceLogout) { $0 = .loggedOut }
        // Past the delay, the cancelled effect produces nothing: `finish` fails on a
        // `loginOK` not received, or on an effect still running.
        await tester.advance(by: .seconds(1))
        await tester.finish()
        #expect(tester.state == .loggedOut)
        #expect(clock.sleepers == 0)
        #expect(tester.sequence == 2)
    }

    @Test func anEventWithoutARow_IsIgnoredByTheTester() async {
        let (tester, _) = LoginExample.tester()
        await tester.send(.loginOK)
        await tester.send(.forceLogout)
        await tester.finish()
        #expect(tester.sequence == 0)
        #expect(tester.state == .loggedOut)
    }

    @Test func theLoop_EndsLoggedOut_AfterForceLogout_AndStaysThere() async {
        let clock = ManualClock()
        let loop = Spin(initialState: .loggedOut, table: ReadmeLogin.table, environment: ReadmeLogin.World(clock: clock)).start()
        let result = await loop.emitBatchAndWait([.login, .forceLogout])
        #expect(result?.replies == [.applied, .applied])
        #expect(await eventually { clock.sleepers == 0 })
        await clock.advance(by: .seconds(1))
        // A marker batch goes through the executor after anything the effect could have sent.
        _ = await loop.emitBatchAndWait([.logoutOK])
        #expect(loop.state == .loggedOut)
        #expect(loop.sequence == 2)
        loop.stop()
    }
}
