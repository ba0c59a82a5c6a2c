import SpinCore
@testable import SpinServer
import SpinWire
import Testing

/// Cluster forwarding as a unit: which requests a node serves itself, sends on to the
/// Spin's owner, holds until a move ends, or refuses, without sockets.
@Suite struct APIRouterForwardingTests {
    static func router(_ host: SpinHost, routing: ClusterRouting) -> APIRouter {
        let cluster = ClusterNode(node: "a", advertise: "http://a:1")
        cluster.route { _, _ in routing }
        return APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics(), cluster: cluster)
    }

    static let get = makeRequest("GET", "/v1/spins/counter")

    @Test func aSpinOwnedHere_OrARouteAboutNoOneSpin_IsServedHere() throws {
        let host = try makeExampleHost(start: false)
        #expect(Self.router(host, routing: .local).forwarding(Self.get, route: .spin, name: "counter") == nil)
        let elsewhere = Self.router(host, routing: .proxy(node: "b", advertise: "http://127.0.0.1:9"))
        #expect(elsewhere.forwarding(makeRequest("GET", "/v1/spins"), route: .spins, name: "") == nil)
        #expect(elsewhere.forwarding(makeRequest("GET", "/v1/gears"), route: .gears, name: "") == nil)
    }

    @Test func makingDeletingAndReadingTheSchemaOfASpin_GoToItsOwner() throws {
        // A Spin made at run time is only found on the node serving its partition.
        let host = try makeExampleHost(start: false)
        let elsewhere = Self.router(host, routing: .proxy(node: "b", advertise: "http://127.0.0.1:9"))
        for (method, path, route) in [("PUT", "/v1/spins/door-1", Route.spinCreate), ("DELETE", "/v1/spins/door-1", .spinDelete),
                                      ("GET", "/v1/spins/door-1/schema", .spinSchema)] {
            guard case .proxy(let proxied)? = elsewhere.forwarding(makeRequest(method, path), route: route, name: "door-1") else {
                Issue.record("\(method) \(path) should go to the owner")
                continue
            }
            #expect(proxied.owner.port == 9)
        }
    }

    @Test func aSpinOwnedElsewhere_IsSentToItsOwner() throws {
        let host = try makeExampleHost(start: false)
        let router = Self.router(host, routing: .proxy(node: "b", advertise: "http://127.0.0.1:9"))
        guard case .proxy(let proxied)? = router.forwarding(Self.get, route: .spin, name: "counter") else {
            Issue.record("expected the request to go to the owner")
            return
        }
        #expect(proxied.owner.port == 9)
        #expect(String(decoding: proxied.bytes, as: UTF8.self).hasPrefix("GET /v1/spins/counter HTTP/1.1\r\n"))
    }

    @Test func aMovingSpin_Waits_AndOneNoNodeServes_IsRefused503() throws {
        let host = try makeExampleHost(start: false)
        guard case .awaitMove(let spin)? = Self.router(host, routing: .pending).forwarding(Self.get, route: .spin, name: "counter")
        else {
            Issue.record("expected a wait for the move")
            return
        }
        #expect(spin == "counter")
        let unavailable = Self.router(host, routing: .unavailable(retryAfterSeconds: 4))
        guard case .refuse(let error)? = unavailable.forwarding(Self.get, route: .spinEvents, name: "counter") else {
            Issue.record("expected a refusal")
            return
        }
        #expect(error == .spinUnavailable("counter", retryAfter: 4))
        // An owner whose advertised address is not a URL cannot be reached either.
        let unreachable = Self.router(host, routing: .proxy(node: "b", advertise: "not a url"))
        guard case .refuse(let refusal)? = unreachable.forwarding(Self.get, route: .spin, name: "counter") else {
            Issue.record("expected a refusal")
            return
        }
        #expect(refusal.code == "spin_unavailable")
    }
}

