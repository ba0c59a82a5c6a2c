import Foundation
import SpinCore
import SpinExamples
@testable import SpinServer
import Testing

/// The runaway guard over the API (DESIGN "Runaway loops"): status, 409, resume.
@Suite(.timeLimit(.minutes(1)))
struct APIRouterRunawayTests {
    /// `levels` with a small budget, already running away: `set` a gap far wider than it.
    static func runaway(tokens: [AccessToken] = []) async throws -> (SpinHost, APIRouter) {
        let host = SpinHost()
        // Settled from the start, so that the set is its first event.
        try host.host(Levels.spin(initialState: .init(left: 0, right: 0)), named: "levels", kind: "levels")
        host.start(feedbackBudget: 1000)
        let router = makeRouter(host, tokens: tokens)
        let admin = tokens.first { $0.scopes.contains(.admin) }?.token
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if let admin { headers.append(("Authorization", "Bearer \(admin)")) }
        _ = await router.respond("POST", "/v1/spins/levels/events", headers: headers,
                                 body: #"{"type":"set","left":0,"right":1000000}"#)
        return (host, router)
    }

    static func status(_ router: APIRouter, token: String? = nil) async -> String? {
        let headers = token.map { [(name: "Authorization", value: "Bearer \($0)")] } ?? []
        return await router.respond("GET", "/v1/spins/levels", headers: headers).object["status"] as? String
    }

    @Test func aRunaway_IsSuspended_ReadableInContractOrder_AndEventsGet409() async throws {
        let (host, router) = try await Self.runaway()
        #expect(await eventually { await Self.status(router) == "suspended" })
        let spin = await router.respond("GET", "/v1/spins/levels")
        // name, sequence, status, state: the contract order.
        #expect(spin.text.hasPrefix(#"{"name":"levels","sequence":1001,"status":"suspended","state":{"left":500,"right":999500},"#))
        let refused = await router.post("/v1/spins/levels/events", #"{"type":"set","left":1,"right":1}"#)
        #expect(refused.status == 409)
        #expect(refused.errorCode == "spin_suspended")
        #expect(refused.errorMessage.contains("/v1/spins/levels/resume"))
        #expect(await router.respond("GET", "/v1/spins/levels").text == spin.text)
        let list = await router.respond("GET", "/v1/spins").object["spins"] as? [[String: Any]] ?? []
        #expect(list.first?["status"] as? String == "suspended")
        let metrics = await router.respond("GET", "/metrics").text
        #expect(metrics.contains(#"spin_suspended{spin="levels"} 1"#))
        host.stop()
    }

    @Test func resumeWithACorrectingSet_AppliesItFirst_AndTheSpinSettles() async throws {
        let (host, router) = try await Self.runaway()
        #expect(await eventually { await Self.status(router) == "suspended" })
        let resumed = await router.post("/v1/spins/levels/resume", #"{"type":"set","left":3,"right":3}"#)
        #expect(resumed.status == 200)
        #expect(resumed.text == #"{"name":"levels","status":"running"}"#)
        // Answered once applied: the set is the next event after the suspension.
        let spin = await router.respond("GET", "/v1/spins/levels")
        #expect(spin.text == #"{"name":"levels","sequence":1002,"status":"running","state":{"left":3,"right":3},"schema":"/v1/spins/levels/schema"}"#)
        // Resuming a running Spin is fine too; a body then goes in as a POST would.
        #expect(await router.respond("POST", "/v1/spins/levels/resume").text == #"{"name":"levels","status":"running"}"#)
        #expect(await router.post("/v1/spins/levels/resume", #"{"type":"set","left":5,"right":5}"#).status == 200)
        #expect(await router.respond("GET", "/v1/spins/levels").object["sequence"] as? Int == 1003)
        host.stop()
    }

    @Test func resumeWithoutABody_RunsTheFeedbacksAgain_UntilTheNextSuspension() async throws {
        let (host, router) = try await Self.runaway()
        #expect(await eventually { await Self.status(router) == "suspended" })
        let resumed = await router.respond("POST", "/v1/spins/levels/resume")
        #expect(resumed.status == 200)
        #expect(await eventually {
            await router.respond("GET", "/v1/spins/levels").object["sequence"] as? Int == 2001
        })
        #expect(await Self.status(router) == "suspended")
        host.stop()
    }

    @Test func resumeWithABadBody_Is422_AndTheSpinStaysSuspended() async throws {
        let (host, router) = try await Self.runaway()
        #expect(await eventually { await Self.status(router) == "suspended" })
        let bad = await router.post("/v1/spins/levels/resume", #"{"type":"set","left":1}"#)
        #expect(bad.status == 422)
        #expect(bad.errorMessage.contains(#"right: "set" needs field "right""#))
        #expect(await router.post("/v1/spins/levels/resume", "x", contentType: "text/plain").status == 415)
        #expect(await Self.status(router) == "suspended")
        host.stop()
    }

    @Test func thePoisonBatch_Is422NamingTheField_AndChangesNothing() async throws {
        let host = try makeExampleHost()
        let router = makeRouter(host)
        let before = await waitForSettledState(router, "levels") { $0["left"] as? Int == $0["right"] as? Int }
        let poison = await router.post("/v1/spins/levels/events",
                                       #"[{"type":"set","left":9223372036854775807,"right":0},{"type":"increaseLeft"}]"#)
        #expect(poison.status == 422)
        #expect(poison.errorCode == "invalid_event")
        #expect(poison.errorMessage.contains("[0].left: must be an integer from -1000000000 to 1000000000"))
        let tooSmall = await router.post("/v1/spins/levels/events", #"{"type":"set","left":0,"right":-9223372036854775808}"#)
        #expect(tooSmall.status == 422)
        #expect(tooSmall.errorMessage.contains("right: must be"))
        let negative = await router.post("/v1/spins/feature/events", #"{"type":"loaded","items":-1}"#)
        #expect(negative.status == 422)
        #expect(negative.errorMessage.contains("items: must be 0 or more"))
        let after = await router.respond("GET", "/v1/spins/levels").object
        #expect(after["sequence"] as? Int == before["sequence"] as? Int)
        #expect(after["status"] as? String == "running")
        host.stop()
    }

    @Test func theResumeRoute_HasItsMetricsTemplate() {
        #expect(Route.label(Route.match("/v1/spins/levels/resume")) == "/v1/spins/{name}/resume")
    }

    @Test func resume_NeedsTheAdminScope_AKnownSpin_AndPOST() async throws {
        let (host, router) = try await Self.runaway(tokens: [
            AccessToken(token: "writer", scopes: [.read, .write]),
            AccessToken(token: "boss", scopes: [.read, .write, .admin]),
        ])
        #expect(await eventually { await Self.status(router, token: "boss") == "suspended" })
        #expect(await router.respond("POST", "/v1/spins/levels/resume").status == 401)
        let writer = await router.respond("POST", "/v1/spins/levels/resume", headers: [("Authorization", "Bearer writer")])
        #expect(writer.status == 403)
        #expect(await Self.status(router, token: "boss") == "suspended")
        let boss = [(name: "Authorization", value: "Bearer boss")]
        #expect(await router.respond("POST", "/v1/spins/nope/resume", headers: boss).errorCode == "spin_not_found")
        let get = await router.respond("GET", "/v1/spins/levels/resume", headers: boss)
        #expect(get.status == 405)
        #expect(get.headers["Allow"] == "POST")
        #expect(await router.respond("POST", "/v1/spins/levels/resume", headers: boss).status == 200)
        host.stop()
    }
}

/// Polls an async condition (a state read over the API) until it holds or 10 s pass.
private func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0..<10_000 {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return false
}
