import Foundation
@testable import SpinServer
import SpinWire
import Testing

/// Per-Spin and per-Gear permissions on every route: what a caller with grants on some
/// Spins may do, and the 403s that name the Spin or Gear and the missing permission.
struct APIRouterPermissionTests {
    static func makeRouter() throws -> APIRouter {
        APIRouter(host: try makeExampleHost(), access: AccessControl(tokens: [
            AccessToken(token: "counter-reader", scopes: [], subject: "dash", grants: Grants(spinRead: ["counter"])),
            AccessToken(token: "counter-writer", scopes: [], subject: "device-1", grants: Grants(spinWrite: ["count*"])),
            AccessToken(token: "gear-reader", scopes: [], subject: "audit", grants: Grants(gearRead: ["auth"])),
            AccessToken(token: "admin", scopes: [.admin], subject: "ops"),
        ]), metrics: Metrics())
    }

    static func bearer(_ token: String) -> [(name: String, value: String)] { [("Authorization", "Bearer \(token)")] }

    @Test func aSpinGrant_ReadsThatSpinOnly_AndTheRefusalNamesTheSpinAndThePermission() async throws {
        let router = try Self.makeRouter()
        #expect(await router.respond("GET", "/v1/spins/counter", headers: Self.bearer("counter-reader")).status == 200)
        #expect(await router.respond("GET", "/v1/spins/counter/schema", headers: Self.bearer("counter-reader")).status == 200)
        let levels = await router.respond("GET", "/v1/spins/levels", headers: Self.bearer("counter-reader"))
        #expect(levels.status == 403)
        #expect(levels.errorCode == "forbidden")
        #expect(levels.errorMessage == #"the credentials may not read Spin "levels": that needs the read permission on it"#)
        // A Spin that does not exist is refused the same way: nothing is learnt of names.
        #expect(await router.respond("GET", "/v1/spins/nope", headers: Self.bearer("counter-reader")).status == 403)
        let post = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#, token: "counter-reader")
        #expect(post.status == 403)
        #expect(post.errorMessage == #"the credentials may not send events to Spin "counter": that needs the write permission on it"#)
    }

    @Test func aRefusedWrite_ChangesNothing_AndAGrantedOneIsApplied() async throws {
        let router = try Self.makeRouter()
        var before: [String: Any] = [:]
        for _ in 0..<5000 where (before["state"] as? [String: Any])?["value"] as? Int != 10 {
            before = await router.respond("GET", "/v1/spins/counter", headers: Self.bearer("admin")).object
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#, token: "counter-reader").status == 403)
        #expect(await router.post("/v1/spins/levels/events", #"{"type":"increaseLeft"}"#, token: "counter-writer").status == 403)
        #expect(await router.respond("GET", "/v1/spins/counter", headers: Self.bearer("admin")).object["sequence"] as? Int
                == before["sequence"] as? Int)
        let accepted = await router.post("/v1/spins/counter/events", #"{"type":"reset"}"#, token: "counter-writer")
        #expect(accepted.status == 202)
        // write implies read; resume needs admin.
        #expect(await router.respond("GET", "/v1/spins/counter", headers: Self.bearer("counter-writer")).status == 200)
        let resume = await router.respond("POST", "/v1/spins/counter/resume", headers: Self.bearer("counter-writer"))
        #expect(resume.errorMessage == #"the credentials may not resume, create or delete Spin "counter": that needs the admin permission on it"#)
        #expect(await router.respond("POST", "/v1/spins/counter/resume", headers: Self.bearer("admin")).status == 200)
    }

    @Test func listings_ShowOnlyWhatTheCallerMayRead() async throws {
        let router = try Self.makeRouter()
        func names(_ response: APIResponse, _ key: String) -> [String] {
            (response.object[key] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        }
        #expect(names(await router.respond("GET", "/v1/spins", headers: Self.bearer("counter-reader")), "spins") == ["counter"])
        #expect(names(await router.respond("GET", "/v1/spins", headers: Self.bearer("gear-reader")), "spins") == [])
        #expect(names(await router.respond("GET", "/v1/spins", headers: Self.bearer("admin")), "spins")
                == ["counter", "feature", "levels", "router"])
        #expect(names(await router.respond("GET", "/v1/gears", headers: Self.bearer("counter-reader")), "gears") == [])
        #expect(names(await router.respond("GET", "/v1/gears", headers: Self.bearer("gear-reader")), "gears") == ["auth"])
        // Still 401 without credentials.
        #expect(await router.respond("GET", "/v1/spins").status == 401)
    }

    @Test func gearStreams_NeedTheGearGrant_AndRoutesAboutEverySpinNeedAGlobalScope() async throws {
        let router = try Self.makeRouter()
        let refused = await router.respond("GET", "/v1/gears/auth/stream", headers: acceptsEvents + Self.bearer("counter-reader"))
        #expect(refused.errorMessage == #"the credentials may not read Gear "auth": that needs the read permission on it"#)
        guard case .stream(.gear, .sse, let identity) = await router.route(
            makeRequest("GET", "/v1/gears/auth/stream", headers: acceptsEvents + Self.bearer("gear-reader"))) else {
            Issue.record("the Gear stream was not opened for its reader")
            return
        }
        #expect(identity.subject == "audit")
        for path in ["/metrics", "/v1/cluster"] {
            let response = await router.respond("GET", path, headers: Self.bearer("counter-writer"))
            #expect(response.status == 403, "\(path)")
            #expect(response.errorMessage.contains("that needs the read scope on every Spin"), "\(path)")
            #expect(await router.respond("GET", path, headers: Self.bearer("admin")).status == 200, "\(path)")
        }
    }

    @Test func aStateStream_CarriesTheCallersIdentity_WhichDecidesWhetherItMayWrite() async throws {
        let router = try Self.makeRouter()
        for (token, mayWrite) in [("counter-reader", false), ("counter-writer", true)] {
            guard case .stream(let source, .sse, let identity) = await router.route(
                makeRequest("GET", "/v1/spins/counter/stream", headers: acceptsEvents + Self.bearer(token))) else {
                Issue.record("the stream was not opened for \(token)")
                continue
            }
            #expect(source.machineKind(for: identity) == .state(clientMayWrite: mayWrite), "\(token)")
        }
        // The token may also come as ?access_token= on a stream route (browsers).
        guard case .stream = await router.route(makeRequest("GET", "/v1/spins/counter/stream",
                                                            query: [("access_token", "counter-reader")], headers: acceptsEvents)) else {
            Issue.record("access_token was not taken on a stream route")
            return
        }
        let refused = await router.respond("GET", "/v1/spins/levels/stream", query: [("access_token", "counter-reader")],
                                           headers: acceptsEvents)
        #expect(refused.status == 403)
    }
}
