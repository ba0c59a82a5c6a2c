import Foundation
@testable import SpinServer
import SpinWire
import Testing

/// Each route's handler, called on its own (no admission, no sockets): what it answers
/// and the error it refuses with.
@Suite struct APIRouterRouteTests {
    static let tokens = [
        AccessToken(token: "counter-reader", scopes: [], subject: "dash", grants: Grants(spinRead: ["counter"])),
        AccessToken(token: "gear-reader", scopes: [], subject: "audit", grants: Grants(gearRead: ["auth"])),
    ]

    static func permissions(_ token: String) throws -> Permissions {
        try AccessControl(tokens: tokens).authenticate(token: token).get().permissions
    }

    @Test func readiness_IsNotReadyUntilTheSpinsRun_ThenReady_AndNamesFailingStorage() throws {
        let host = try makeExampleHost(start: false)
        let router = makeRouter(host)
        #expect(router.readiness().failure == .notReady(clusterProblem: nil))
        host.start()
        defer { host.stop() }
        #expect(router.readiness().success?.status == 200)
        router.feeds.feed("counter").fail(.storageFailed(spin: "counter", "disk full"))
        #expect(router.readiness().failure == .storageFailing(["counter"]))
        #expect(APIResponse.error(.storageFailing(["counter"])).headers["Retry-After"] == "1")
    }

    @Test func health_AnswersOK() throws {
        let router = makeRouter(try makeExampleHost(start: false))
        #expect(router.health().status == 200)
        #expect(router.health().text == #"{"status":"ok"}"#)
    }

    @Test func spinDetail_AndSchema_NameAnUnknownSpin404() throws {
        let host = try makeExampleHost()
        defer { host.stop() }
        let router = makeRouter(host)
        #expect(router.spinDetail("nobody").failure == .spinNotFound("nobody"))
        #expect(router.spinSchema("nobody").failure == .spinNotFound("nobody"))
        let detail = try #require(router.spinDetail("counter").success)
        #expect(detail.object["name"] as? String == "counter")
        #expect(detail.object["schema"] as? String == "/v1/spins/counter/schema")
        let schema = try #require(router.spinSchema("counter").success)
        #expect(schema.object["event"] != nil && schema.object["state"] != nil)
    }

    @Test func lists_ShowOnlyWhatThePermissionsRead() throws {
        let host = try makeExampleHost()
        defer { host.stop() }
        let router = makeRouter(host)
        let list = makeRequest("GET", "/v1/spins")
        let spins = try #require(router.spinList(list, for: try Self.permissions("counter-reader")).success).object["spins"] as? [[String: Any]]
        #expect(spins?.map { $0["name"] as? String } == ["counter"])
        #expect(try #require(router.spinList(list, for: .everything).success).object["spins"].map { ($0 as? [Any])?.count } == 4)
        let gears = router.gearList(for: try Self.permissions("gear-reader")).object["gears"] as? [[String: Any]]
        #expect(gears?.map { $0["name"] as? String } == ["auth"])
        #expect((router.gearList(for: try Self.permissions("counter-reader")).object["gears"] as? [Any])?.isEmpty == true)
    }

    static func call(_ request: HTTPRequest, _ route: Route, _ name: Substring,
                     respond: @escaping @Sendable (RouteOutcome) -> Void = { _ in }) -> RouteCall {
        RouteCall(request: request, route: route, name: name, caller: .anyone, trace: nil, moveDeadline: nil, respond: respond)
    }

    @Test func streams_Refuse406WhenAcceptRulesEventsOut_404WithoutTheirSpinOrGear_400OnABadSince() throws {
        let host = try makeExampleHost()
        defer { host.stop() }
        let router = makeRouter(host)
        let plain = makeRequest("GET", "/v1/spins/counter/stream")
        guard case .stream(_, .sse, _) = router.spinStream(Self.call(plain, .spinStream, "counter")) else {
            Issue.record("expected server-sent events for a request without Accept")
            return
        }
        let json = makeRequest("GET", "/v1/spins/counter/stream", headers: [("Accept", "application/json, text/event-stream;q=0")])
        guard case .respond(let refused) = router.spinStream(Self.call(json, .spinStream, "counter")) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(refused.error == .notAcceptable(accept: "application/json, text/event-stream;q=0"))
        #expect(refused.status == 406)
        guard case .respond(let missing) = router.gearStream(Self.call(plain, .gearStream, "nobody")) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(missing.error == .gearNotFound("nobody"))
        let badSince = makeRequest("GET", "/v1/spins/counter/stream?since=x", headers: acceptsEvents)
        guard case .respond(let bad) = router.spinStream(Self.call(badSince, .spinStream, "counter")) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(bad.error?.code == "bad_request")
        let events = makeRequest("GET", "/v1/spins/counter/stream", headers: acceptsEvents)
        guard case .stream(_, .sse, _) = router.spinStream(Self.call(events, .spinStream, "counter")) else {
            Issue.record("expected server-sent events")
            return
        }
    }

    /// What `handler` answers `request` (about Spin `name`), once it answers.
    static func answer(_ request: HTTPRequest, _ route: Route, _ name: Substring,
                       by handler: (RouteCall) -> Void) async -> APIResponse? {
        let outcome = await withCheckedContinuation { continuation in
            handler(call(request, route, name) { continuation.resume(returning: $0) })
        }
        guard case .respond(let response) = outcome else { return nil }
        return response
    }

    @Test func postEvents_AnswersAnUnknownSpin404_AndAcceptsAnEvent() async throws {
        let host = try makeExampleHost()
        defer { host.stop() }
        let router = makeRouter(host)
        let post = makeRequest("POST", "/v1/spins/nobody/events", headers: [("Content-Type", "application/json")],
                               body: Array(#"{"type":"increase"}"#.utf8))
        let refused = await Self.answer(post, .spinEvents, "nobody", by: router.postEvents)
        #expect(refused?.error == .spinNotFound("nobody"))
        let accepted = await Self.answer(post, .spinEvents, "counter", by: router.postEvents)
        #expect(accepted?.status == 202)
        let notJSON = makeRequest("POST", "/v1/spins/counter/events", headers: [("Content-Type", "text/plain")],
                                  body: Array(#"{"type":"increase"}"#.utf8))
        #expect(await Self.answer(notJSON, .spinEvents, "counter", by: router.postEvents)?.error
            == .unsupportedMediaType("text/plain"))
    }

    @Test func resumeSpin_AnswersAnUnknownSpin404_AndARunningSpinStaysRunning() async throws {
        let host = try makeExampleHost()
        defer { host.stop() }
        let router = makeRouter(host)
        let resume = makeRequest("POST", "/v1/spins/counter/resume")
        let refused = await Self.answer(resume, .spinResume, "nobody", by: router.resumeSpin)
        #expect(refused?.error == .spinNotFound("nobody"))
        let resumed = await Self.answer(resume, .spinResume, "counter", by: router.resumeSpin)
        #expect(resumed?.status == 200)
        #expect(resumed?.object["status"] as? String == "running")
    }

    @Test func dashboard_MayBeFramedOnlyByItselfAndTheAllowedOrigins() throws {
        let host = try makeExampleHost(start: false)
        let router = APIRouter(host: host, access: AccessControl(tokens: []),
                               origins: OriginPolicy(allowed: ["https://ops.example"]), metrics: Metrics())
        let policy = router.dashboard().headers["Content-Security-Policy"] ?? ""
        #expect(policy.hasSuffix("frame-ancestors 'self' https://ops.example"))
        #expect(router.dashboard().headers["Content-Type"] == "text/html; charset=utf-8")
    }
}
