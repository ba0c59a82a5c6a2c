import SpinCore
import SpinExamples
import SpinTesting
import Testing
@testable import SpinConcurrency

@Suite(.timeLimit(.minutes(1)))
struct AuthRoutingTests {
    /// The router's launch: it checks at once and, with a valid session, routes home.
    static func launch(_ router: SpinTester<Router.State, Router.Event>) async {
        await router.receive(.checkAuthorization) { $0 = .init(route: .checkingAuthorization, authorizationChecks: 1) }
        await router.receive(.authorized) { $0.route = .home }
    }

    @Test func anUnauthorizedFeature_MakesTheRouterCheck_AndRouteToLogin() async {
        let example = AuthRouting()
        let gearEvents = GearLog()
        let observation = example.gear.observe { gearEvents.append("\($0.event) from \($0.source ?? "?")") }
        let router = SpinTester(example.router, label: "router")
        let feature = SpinTester(example.feature, label: "feature")
        await Self.launch(router)

        // The backend session expires: loading now gets an unauthorized response.
        example.session.end()
        await feature.send(.load) { $0.status = .loading }
        await feature.receive(.unauthorizedResponse) { $0.status = .unauthorized }
        #expect(gearEvents.all == ["authorizationIssueHappened from feature"])

        await router.receive(.checkAuthorization) { $0 = .init(route: .checkingAuthorization, authorizationChecks: 2) }
        await router.receive(.unauthorized) { $0.route = .login }
        await router.finish()
        await feature.finish()
        observation.cancel()
    }

    @Test func aCheckWithAValidSession_RoutesHome() async {
        let example = AuthRouting()
        let router = SpinTester(example.router)
        let feature = SpinTester(example.feature)
        await Self.launch(router)
        await feature.send(.unauthorizedResponse) { $0.status = .unauthorized }
        await router.receive(.checkAuthorization) { $0 = .init(route: .checkingAuthorization, authorizationChecks: 2) }
        await router.receive(.authorized) { $0.route = .home }
        await router.finish()
        await feature.finish()
    }

    @Test func loadingWithAValidSession_LoadsTheItems() async {
        let example = AuthRouting(session: SessionService(items: 7))
        let feature = SpinTester(example.feature)
        await feature.send(.load) { $0.status = .loading }
        await feature.receive(.loaded(items: 7)) { $0 = .init(status: .loaded, items: 7) }
        await feature.finish()
    }

    @Test func logoutAndLogin_DriveTheSession() async {
        let example = AuthRouting()
        let router = SpinTester(example.router)
        await Self.launch(router)
        await router.send(.logout) { $0.route = .login }
        #expect(!example.session.isValid)
        await router.send(.login) { $0.route = .home }
        #expect(example.session.isValid)
        await router.finish()
    }

    @Test func overRunningLoops_TheRouterEndsInLogin() async {
        let example = AuthRouting()
        // A host makes both loops before starting either.
        let feature = example.feature.makeLoop(label: "feature")
        let router = example.router.makeLoop(label: "router")
        feature.start()
        router.start()
        for await state in router.states where state.route == .home { break }
        router.emit(.logout)
        for await state in router.states where state.route == .login { break }
        feature.emit(.load)
        for await state in feature.states where state.status == .unauthorized { break }
        for await state in router.states where state.authorizationChecks == 2 && state.route == .login { break }
        #expect(router.state == .init(route: .login, authorizationChecks: 2))
        feature.stop()
        router.stop()
    }
}

final class GearLog: Sendable {
    private let recorder = Protected<[String]>([])
    func append(_ line: String) { recorder.withLock { $0.append(line) } }
    var all: [String] { recorder.withLock { $0 } }
}
