import Dispatch
import SpinCore
import SpinExamples
import SpinTesting
import Testing
@testable import SpinConcurrency

/// `SessionService` on a `SessionStore`: what two servers of a cluster see through one
/// store, and what a store that fails or hangs answers.
@Suite(.timeLimit(.minutes(1)))
struct SessionServiceTests {
    @Test func twoServicesOnOneStore_ShareTheSession_SoTheScenarioRunsAsOnOneServer() async {
        // `router` on one server, `feature` on another: one Gear between them (a cluster
        // carries it across nodes), a session service each, one store.
        let store = MemoryStore()
        let gear = Gear<AuthRouting.GearEvent>()
        let routerServer = AuthRouting(session: SessionService(store: store), gear: gear)
        let featureServer = AuthRouting(session: SessionService(store: store, items: 5), gear: gear)
        let router = SpinTester(routerServer.router, label: "router")
        let feature = SpinTester(featureServer.feature, label: "feature")
        await AuthRoutingTests.launch(router)

        // The logout's write is queued, not waited for: the router is on `login` at once.
        await router.send(.logout) { $0.route = .login }
        #expect(await waitUntil { store.writes == [true, false] })
        await feature.send(.load) { $0.status = .loading }
        await feature.receive(.unauthorizedResponse) { $0.status = .unauthorized }
        await router.receive(.checkAuthorization) { $0 = .init(route: .checkingAuthorization, authorizationChecks: 2) }
        await router.receive(.unauthorized) { $0.route = .login }

        await router.send(.login) { $0.route = .home }
        #expect(await waitUntil { store.writes.last == true })
        await feature.send(.load) { $0.status = .loading }
        await feature.receive(.loaded(items: 5)) { $0 = .init(status: .loaded, items: 5) }
        await router.finish()
        await feature.finish()
    }

    @Test func aStoreThatFails_AnswersUnauthorized_AndItsWritesChangeNothing() async {
        let session = SessionService(store: FailingStore())
        #expect(await session.fetchItems() == nil)
        #expect(await session.checkAuthorization() == false)
        #expect(!session.isValid)
        session.start()
        #expect(await session.checkAuthorization() == false)
    }

    @Test func aStoreThatDoesNotAnswer_CountsAsUnauthorized_AndIsNotAskedStaleQuestions() async {
        let store = StuckStore()
        let session = SessionService(store: store, timeout: .milliseconds(50))
        #expect(await session.checkAuthorization() == false)   // the store is stuck in this one
        #expect(await session.fetchItems() == nil)             // queued behind it, given up
        store.release()
        #expect(await session.checkAuthorization() == true)
        // The question given up while the store was stuck was never put to it.
        #expect(store.reads == 2)
    }
}

/// A store every service of a test shares, as servers share a database. (Locks here are
/// `Protected`'s pthread mutexes, which the thread sanitizer sees: it takes the standard
/// library's `Mutex`, a futex on Linux, for no lock at all and reports a race.)
final class MemoryStore: SessionStore {
    private let state = Protected((valid: true, writes: [Bool]()))
    var writes: [Bool] { state.withLock { $0.writes } }
    func isValid() throws -> Bool { state.withLock { $0.valid } }
    func setValid(_ valid: Bool) throws {
        state.withLock {
            $0.valid = valid
            $0.writes.append(valid)
        }
    }
}

/// A store whose database is down.
struct FailingStore: SessionStore {
    struct Down: Error {}
    func isValid() throws -> Bool { throw Down() }
    func setValid(_ valid: Bool) throws { throw Down() }
}

/// A store whose first read hangs until `release()`, as a database that stopped answering.
final class StuckStore: SessionStore {
    private let released = DispatchSemaphore(value: 0)
    private let count = Protected(0)
    var reads: Int { count.withLock { $0 } }
    func isValid() throws -> Bool {
        if count.withLock({ $0 += 1; return $0 }) == 1 { released.wait() }
        return true
    }
    func setValid(_ valid: Bool) throws {}
    func release() { released.signal() }
}
