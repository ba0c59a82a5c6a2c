@testable import SpinServer
import SpinWire
import Testing

/// The router's admission, unit by unit and without sockets: the host policy (421), the
/// route and its method (404, 405), then authentication (401) and permissions (403).
@Suite struct APIRouterAdmissionTests {
    static let tokens = [
        AccessToken(token: "counter-reader", scopes: [], subject: "dash", grants: Grants(spinRead: ["counter"])),
        AccessToken(token: "admin", scopes: [.admin], subject: "ops"),
    ]

    static func router(_ host: SpinHost, tokens: [AccessToken] = [], hosts: HostPolicy = .any,
                       echo: Bool = false) -> APIRouter {
        APIRouter(host: host, access: AccessControl(tokens: tokens), hosts: hosts, metrics: Metrics(), echoEndpoint: echo)
    }

    static func request(_ method: String, _ path: String, token: String? = nil, host: String? = nil) -> HTTPRequest {
        var headers: [(name: String, value: String)] = []
        if let host { headers.append(("Host", host)) }
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return makeRequest(method, path, headers: headers)
    }

    @Test func hostPolicy_RefusesAForeignHost_NamingIt_AndServesItsOwn() throws {
        let host = try makeExampleHost(start: false)
        let policy = HostPolicy(listenHost: "127.0.0.1", allowedHosts: ["spin.example.com"], tokensConfigured: false)
        let router = Self.router(host, hosts: policy)
        #expect(router.misdirection(of: Self.request("GET", "/healthz", host: "evil.example:8080"))
            == .misdirectedRequest(host: "evil.example:8080"))
        #expect(router.misdirection(of: Self.request("GET", "/healthz", host: "spin.example.com")) == nil)
        #expect(router.misdirection(of: Self.request("GET", "/healthz", host: "localhost:8080")) == nil)
        // Before anything else: a foreign host learns not even that a route is unknown.
        let refused = router.admit(Self.request("GET", "/nowhere", host: "evil.example")).verdict
        #expect(refused.failure == .misdirectedRequest(host: "evil.example"))
    }

    @Test func resolve_Refuses404WithoutARoute_AndTheEchoRouteUnlessEnabled() throws {
        let host = try makeExampleHost(start: false)
        let router = Self.router(host)
        let unknown = Self.request("GET", "/v1/nothing")
        #expect(router.resolve(unknown, matched: Route.match("/v1/nothing")).failure == .routeNotFound("/v1/nothing"))
        let echo = Self.request("GET", "/v1/echo")
        #expect(router.resolve(echo, matched: Route.match("/v1/echo")).failure == .routeNotFound("/v1/echo"))
        #expect(Self.router(host, echo: true).resolve(echo, matched: Route.match("/v1/echo")).success?.route == .echo)
    }

    @Test func resolve_AnswersHEADOnGETRoutesButStreams_AndRefusesOtherMethods405() throws {
        let host = try makeExampleHost(start: false)
        let router = Self.router(host)
        let head = Self.request("HEAD", "/v1/spins/counter")
        let resolved = router.resolve(head, matched: Route.match("/v1/spins/counter")).success
        #expect(resolved?.route == .spin && resolved?.name == "counter")
        let headStream = Self.request("HEAD", "/v1/spins/counter/stream")
        #expect(router.resolve(headStream, matched: Route.match("/v1/spins/counter/stream")).failure
            == .methodNotAllowed("HEAD", allowed: ["GET"]))
        let put = Self.request("PUT", "/v1/spins/counter/events")
        #expect(router.resolve(put, matched: Route.match("/v1/spins/counter/events")).failure
            == .methodNotAllowed("PUT", allowed: ["POST"]))
        // A Spin's path also takes PUT (create) and DELETE: each its own route.
        #expect(Route.spin.allowedMethods == [.get, .head, .put, .delete])
        let delete = Self.request("DELETE", "/v1/spins/counter")
        #expect(router.resolve(delete, matched: Route.match("/v1/spins/counter")).success?.route == .spinDelete)
        let patch = Self.request("PATCH", "/v1/spins/counter")
        #expect(router.resolve(patch, matched: Route.match("/v1/spins/counter")).failure
            == .methodNotAllowed("PATCH", allowed: ["GET", "HEAD", "PUT", "DELETE"]))
        #expect(Route.spinEvents.method == .post)
    }

    @Test func authorize_Refuses401WithoutCredentials_403WithoutThePermission_AndPassesTheCaller() throws {
        let host = try makeExampleHost(start: false)
        let router = Self.router(host, tokens: Self.tokens)
        let anonymous = Self.request("GET", "/v1/spins/counter")
        #expect(router.authorize(router.identify(anonymous, route: .spin), route: .spin, name: "counter").failure?.code == "unauthorized")
        let reader = Self.request("GET", "/v1/spins/counter", token: "counter-reader")
        #expect(router.authorize(router.identify(reader, route: .spin), route: .spin, name: "counter").success?.subject == "dash")
        #expect(router.authorize(router.identify(reader, route: .spinEvents), route: .spinEvents, name: "counter").failure
            == .forbiddenOnSpin(.write, spin: "counter"))
        #expect(router.authorize(router.identify(reader, route: .metrics), route: .metrics, name: "").failure
            == .forbiddenEverywhere(.read, what: "/metrics"))
        #expect(router.authorize(router.identify(reader, route: .gearStream), route: .gearStream, name: "auth").failure == .forbiddenGear("auth"))
        // Open routes need no credentials at all.
        #expect(router.authorize(router.identify(anonymous, route: .healthz), route: .healthz, name: "").success == .anyone)
        // An identity is taken as it is, and still checked.
        #expect(router.authorize(.success(.anyone), route: .spin, name: "counter").success == .anyone)
        let admin = Self.request("POST", "/v1/spins/counter/resume", token: "admin")
        #expect(router.authorize(router.identify(admin, route: .spinResume), route: .spinResume, name: "counter").success?.subject == "ops")
    }

    @Test func admit_ChecksInOrder_RouteBeforeCredentials() throws {
        let host = try makeExampleHost(start: false)
        let router = Self.router(host, tokens: Self.tokens)
        // An unknown route is 404 even without credentials; a known one without them 401.
        let unknown = Self.request("GET", "/v1/nothing")
        #expect(router.admit(unknown).verdict.failure?.code == "not_found")
        let known = Self.request("GET", "/v1/spins/counter")
        #expect(router.admit(known).verdict.failure?.code == "unauthorized")
        let reader = Self.request("GET", "/v1/spins/counter", token: "counter-reader")
        let admitted = router.admit(reader).verdict.success
        #expect(admitted?.route == .spin && admitted?.name == "counter" && admitted?.caller.subject == "dash")
    }

    @Test func admit_LabelsTheRoute_AndNamesTheSubject_EvenWhenItRefuses() throws {
        let host = try makeExampleHost(start: false)
        let router = Self.router(host, tokens: Self.tokens)
        let reader = router.admit(Self.request("POST", "/v1/spins/counter/events", token: "counter-reader"))
        #expect(reader.label == "/v1/spins/{name}/events" && reader.subject == "dash")
        #expect(reader.verdict.failure == .forbiddenOnSpin(.write, spin: "counter"))
        let unknown = router.admit(Self.request("GET", "/../etc/passwd", token: "admin"))
        #expect(unknown.label == "other" && unknown.subject == nil && unknown.verdict.failure?.code == "not_found")
    }
}

extension Result {
    var success: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
