import Foundation
import SpinCore
@testable import SpinServer
import SpinWire
import Testing
@testable import SpinConcurrency

/// The router of a cluster node while a Spin moves: a request waits for the move
/// instead of being refused, and events a stopped Spin did not apply follow it.
@Suite struct APIRouterMoveTests {
    /// A router whose node routes every Spin as `routing` says now, waiting at most `wait`.
    static func router(_ host: SpinHost, routing: Protected<ClusterRouting>, wait: Duration = .seconds(10)) -> APIRouter {
        let cluster = ClusterNode(node: "a", advertise: "http://a:1", moveWait: wait)
        cluster.route { _, _ in routing.withLock { $0 } }
        return APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics(), cluster: cluster)
    }

    static let post = makeRequest("POST", "/v1/spins/counter/events", headers: [("Content-Type", "application/json")],
                                  body: Array(#"{"type":"reset"}"#.utf8))

    @Test func aRequestDuringAMove_WaitsAndIsServedByTheNewOwner() async throws {
        let host = try makeExampleHost()
        defer { host.stop() }
        let routing = Protected(ClusterRouting.pending)
        let router = Self.router(host, routing: routing)
        let answered = Task { await router.route(Self.post) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(router.cluster.waitingCount == 1)
        // The new owner serves it now: the next look at the cluster sends it there.
        routing.withLock { $0 = .proxy(node: "b", advertise: "http://127.0.0.1:9") }
        router.cluster.publish(.single(node: "a", advertise: "http://a:1", spins: []))
        guard case .proxy(let proxied) = await answered.value else {
            Issue.record("expected the request to go to the new owner")
            return
        }
        #expect(proxied.owner.port == 9)
        #expect(String(decoding: proxied.bytes, as: UTF8.self).hasPrefix("POST /v1/spins/counter/events HTTP/1.1\r\n"))
    }

    @Test func eventsAStoppedSpinDidNotApply_FollowTheMove_AndAreRefusedOnlyWhenTheWaitRunsOut() async throws {
        let host = try makeExampleHost()
        // The node still served the Spin when the request came, which then stopped (handed
        // over) before applying it: from then on the move is under way.
        let asked = Protected(0)
        let cluster = ClusterNode(node: "a", advertise: "http://a:1", moveWait: .milliseconds(200))
        cluster.route { _, _ in asked.withLock { $0 += 1; return $0 == 1 ? .local : .pending } }
        let router = APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics(), cluster: cluster)
        host.stop()
        let started = ContinuousClock.now
        guard case .respond(let response) = await router.route(Self.post) else {
            Issue.record("expected an answer")
            return
        }
        // Not the 503 `unavailable` of a stopping server: it waited for the move.
        #expect(response.status == 503)
        #expect(response.error?.code == "spin_unavailable")
        #expect(response.headers.contains("Retry-After"))
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(asked.withLock { $0 } >= 2)
        // Without a cluster the same stop is the server's own: 503 `unavailable` at once.
        let single = makeRouter(host)
        let alone = await single.respond("POST", "/v1/spins/counter/events", headers: [("Content-Type", "application/json")],
                                         body: #"{"type":"reset"}"#)
        #expect(alone.status == 503 && alone.error?.code == "unavailable")
    }
}
