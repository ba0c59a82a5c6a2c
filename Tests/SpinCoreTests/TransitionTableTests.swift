import Dispatch
import SpinCore
import Testing

/// Harvest's login states and events.
enum Session: Equatable, Sendable {
    case loggedOut, loggingIn, loggedIn, loggingOut
}

enum SessionEvent: Equatable, Sendable {
    case login, loginOK, logout, logoutOK, forceLogout
}

/// A door whose events carry payloads: the closure and pattern forms of rows.
enum Door: Equatable, Sendable {
    case closed(opens: Int)
    case open(opens: Int)
    case locked(code: Int, opens: Int)
}

enum DoorEvent: Equatable, Sendable {
    case open, close
    case lock(code: Int)
    case unlock(code: Int)
}

@Suite(.timeLimit(.minutes(1)))
struct TransitionTableTests {
    static let canForceLogout: @Sendable (Session) -> Bool = { [.loggingIn, .loggedIn].contains($0) }

    static let session = TransitionTable<Session, SessionEvent, Void>([
        .login | .loggedOut => .loggingIn,
        .loginOK | .loggingIn => .loggedIn,
        .logout | .loggedIn => .loggingOut,
        .logoutOK | .loggingOut => .loggedOut,
        .forceLogout | canForceLogout => .loggedOut,
    ])

    @Test func aRow_AppliesOnlyToItsEventFromItsState() {
        let reducer = Self.session.reducer
        #expect(reducer.apply(.login, to: .loggedOut) == .loggingIn)
        #expect(reducer.apply(.loginOK, to: .loggingIn) == .loggedIn)
        #expect(reducer.apply(.login, to: .loggedIn) == nil)
        #expect(reducer.apply(.loginOK, to: .loggedOut) == nil)
        #expect(reducer.apply(.logoutOK, to: .loggedIn) == nil)
    }

    @Test func aPredicateFromState_MatchesEveryStateItAccepts() {
        let reducer = Self.session.reducer
        #expect(reducer.apply(.forceLogout, to: .loggingIn) == .loggedOut)
        #expect(reducer.apply(.forceLogout, to: .loggedIn) == .loggedOut)
        #expect(reducer.apply(.forceLogout, to: .loggedOut) == nil)
        #expect(reducer.apply(.forceLogout, to: .loggingOut) == nil)
    }

    @Test func theFirstMatchingRow_Wins_AndAWildcardMatchesAnything() {
        let table = TransitionTable<Session, SessionEvent, Void>([
            .logout | .loggedIn => .loggingOut,
            .logout | .any => .loggedOut,
            .any | .oneOf([.loggingIn, .loggingOut]) => .loggedIn,
            .forceLogout | { $0 != .loggedOut } => .loggedOut,
        ])
        #expect(table.reducer.apply(.logout, to: .loggedIn) == .loggingOut)
        #expect(table.reducer.apply(.logout, to: .loggingIn) == .loggedOut)
        #expect(table.reducer.apply(.login, to: .loggingOut) == .loggedIn)
        #expect(table.reducer.apply(.login, to: .loggedOut) == nil)
        #expect(table.reducer.apply(.forceLogout, to: .loggedIn) == .loggedOut)
        #expect(table.reducer.apply(.forceLogout, to: .loggedOut) == nil)
        // Appended rows come after: they only take what the first table declines.
        let both = Self.session.appending(TransitionTable([.login | .any => .loggedIn]))
        #expect(both.reducer.apply(.login, to: .loggedOut) == .loggingIn)
        #expect(both.reducer.apply(.login, to: .loggingOut) == .loggedIn)
    }

    @Test func rowsWithPayloads_ComputeTheirState() {
        let table = TransitionTable<Door, DoorEvent, Void>([
            TransitionRow { state, event in
                guard case .closed(let opens) = state, case .lock(let code) = event else { return nil }
                return (.locked(code: code, opens: opens), .none)
            },
            TransitionRow(on: .matching { if case .unlock = $0 { true } else { false } },
                          from: .matching { if case .locked = $0 { true } else { false } },
                          to: { state, event in
                              guard case .locked(let code, let opens) = state, case .unlock(code) = event else { return state }
                              return .closed(opens: opens)
                          }),
            TransitionRow(on: .exactly(.open), from: .matching { if case .closed = $0 { true } else { false } },
                          to: { state, _ in
                              guard case .closed(let opens) = state else { return state }
                              return .open(opens: opens + 1)
                          }),
        ])
        let reducer = table.reducer
        #expect(reducer.replay([.open, .lock(code: 1)], from: .closed(opens: 0)) == .open(opens: 1))
        #expect(reducer.apply(.lock(code: 7), to: .closed(opens: 2)) == .locked(code: 7, opens: 2))
        #expect(reducer.apply(.unlock(code: 7), to: .locked(code: 7, opens: 2)) == .closed(opens: 2))
        #expect(reducer.apply(.unlock(code: 8), to: .locked(code: 7, opens: 2)) == .locked(code: 7, opens: 2))
        #expect(reducer.apply(.close, to: .closed(opens: 0)) == nil)
    }

    @Test func aTableSpin_IgnoresEventsWithoutARow() async {
        let loop = Spin(initialState: Session.loggedOut, table: Self.session, environment: ()).start()
        let result = await loop.emitBatchAndWait([.loginOK, .login, .login, .loginOK, .forceLogout, .forceLogout])
        #expect(result?.replies == [.ignored(.noTransition), .applied, .ignored(.noTransition), .applied, .applied,
                                    .ignored(.noTransition)])
        #expect(loop.state == .loggedOut)
        #expect(loop.sequence == 3)
        loop.stop()
    }

    @Test func aTableWithoutEffects_AddsNoFeedback_AndOneWithEffectsDoes() {
        #expect(Spin(initialState: Session.loggedOut, table: Self.session, environment: ()).feedbacks.isEmpty)
        let withEffect = TransitionTable<Session, SessionEvent, Void>([
            .login | .loggedOut => .loggingIn | Effect { _ in .loginOK },
        ])
        #expect(Spin(initialState: Session.loggedOut, table: withEffect, environment: ()).feedbacks.count == 1)
    }

    @Test func executeOn_RunsTheRowsEffectsOnThatQueue() async {
        let queue = DispatchQueue(label: "test.table-effects")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "effects queue")
        let places = Recorder<String?>()
        let table = TransitionTable<Session, SessionEvent, Void>([
            .login | .loggedOut => .loggingIn | Effect { _ in
                places.append(DispatchQueue.getSpecific(key: key))
                return .loginOK
            },
            .loginOK | .loggingIn => .loggedIn,
        ])
        let loop = Spin(initialState: Session.loggedOut, feedbacks: [table.effects(environment: ()).execute(on: queue)],
                        reducer: table.reducer).start()
        loop.emit(.login)
        #expect(await loop.firstState { $0 == .loggedIn } == .loggedIn)
        #expect(places.all == ["effects queue"])
        loop.stop()
    }
}
