import SpinCore
import SpinTesting
import Testing

// The table of the SpinCore DocC article "Transition Tables" (SpinCore.docc/TransitionTables.md),
// verbatim (inside a namespace, as these tests have their own Session), so that it cannot
// drift from the API (Tests/e2e/test_readme.py checks that the article's lines are here).
extension EffectQueue {
    static let request = EffectQueue("request", .latest)  // a new request cancels the running one
}

/// Harvest's login example as TransitionTables.md shows it (also `LoginExampleTests`' Spin).
enum ReadmeLogin {
    enum Session: Equatable, Sendable { case loggedOut, loggingIn, loggedIn, loggingOut }
    enum SessionEvent: Equatable, Sendable { case login, loginOK, logout, logoutOK, forceLogout }

    struct World: Sendable {
        let clock: any Clock<Duration>
        func after(_ event: SessionEvent) async -> SessionEvent? {
            do { try await clock.sleep(for: .milliseconds(500)) } catch { return nil }
            return event
        }
    }

    static let canForceLogout: @Sendable (Session) -> Bool = { [.loggingIn, .loggedIn].contains($0) }

    static let table = TransitionTable<Session, SessionEvent, World>([
        .login       | .loggedOut  => .loggingIn  | Effect(queue: .request, id: "login") { await $0.after(.loginOK) },
        .loginOK     | .loggingIn  => .loggedIn,
        .logout      | .loggedIn   => .loggingOut | Effect(queue: .request, id: "logout") { await $0.after(.logoutOK) },
        .logoutOK    | .loggingOut => .loggedOut,
        .forceLogout | canForceLogout => .loggedOut | .cancel("login", "logout"),
    ])
}

@Suite(.timeLimit(.minutes(1)))
struct TransitionTableReadmeTests {
    @Test func theReadmeTable_LogsInAfterItsDelay_AndForceLogoutCancels() async {
        let clock = ManualClock()
        let tester = SpinTester(Spin(initialState: .loggedOut, table: ReadmeLogin.table, environment: ReadmeLogin.World(clock: clock)),
                                clock: clock)
        await tester.send(.login) { $0 = .loggingIn }
        await tester.advance(by: .milliseconds(500))
        await tester.receive(.loginOK) { $0 = .loggedIn }
        await tester.send(.logout) { $0 = .loggingOut }
        await tester.send(.forceLogout)  // not from loggingOut: ignored
        await tester.advance(by: .milliseconds(500))
        await tester.receive(.logoutOK) { $0 = .loggedOut }
        await tester.send(.login) { $0 = .loggingIn }
        await tester.send(.forceLogout) { $0 = .loggedOut }
        await tester.advance(by: .seconds(1))
        await tester.finish()
    }

    @Test func theReadmeLoop_Starts() async {
        let loop = Spin(initialState: .loggedOut, table: ReadmeLogin.table, environment: ReadmeLogin.World(clock: ContinuousClock())).start()
        #expect(loop.state == .loggedOut)
        loop.stop()
    }
}
