import SpinStorage
import SpinWire
import Testing
@testable import SpinServer

/// `ClusterStatus` and `ClusterNode`: the body of `GET /v1/cluster`.
@Suite struct ClusterStatusTests {
    @Test func singleNode_OwnsEveryHostedSpin() {
        let status = ClusterStatus.single(node: "n1", advertise: "http://127.0.0.1:8080", spins: ["levels", "counter"])
        #expect(String(decoding: status.json.bytes, as: UTF8.self)
            == #"{"nodes":[{"node":"n1","advertise":"http://127.0.0.1:8080","live":true,"spins":["counter","levels"]}],"self":"n1"}"#)
    }

    @Test func sharedView_ListsEveryNode_WithThePartitionsItsValidLeasesHold_AndTheirConfiguredSpins() {
        let partitions = SpinPartitions(count: 4)
        let spins = ["w", "x", "y", "z"]
        let of = { (spin: String) in partitions.partition(of: spin) }
        // b holds the partitions of x and w; a's lease of y's partition ran out.
        let held: Set<Int> = [of("x"), of("w")]
        let view = View(
            nodes: [.init(name: "b", advertise: "http://b:1", heartbeatAt: at(10)),
                    .init(name: "a", advertise: "http://a:1", heartbeatAt: at(1))],
            leases: held.map { .init(partition: $0, node: "b", epoch: 1, expiresAt: at(15)) }
                + (held.contains(of("y")) ? [] : [.init(partition: of("y"), node: "a", epoch: 1, expiresAt: at(9))]))
        let status = ClusterStatus.shared(view: view, now: at(12), leaseDuration: .seconds(9), selfNode: "b",
                                          partitions: partitions, spins: spins)
        let owned = spins.filter { held.contains(of($0)) }
        #expect(status == ClusterStatus(nodes: [.init(node: "a", advertise: "http://a:1", live: false, spins: [], partitions: []),
                                                .init(node: "b", advertise: "http://b:1", live: true, spins: owned,
                                                      partitions: held.sorted())],
                                        selfNode: "b"))
        #expect(status.spins(of: "b") == owned)
        let json = String(decoding: status.json.bytes, as: UTF8.self)
        #expect(json.contains(#""partitions":[\#(held.sorted().map(String.init).joined(separator: ","))]"#), "\(json)")
    }

    @Test func clusterNode_ShowsTheBoundURL_ThenAPublishedView() {
        let node = ClusterNode(node: "n1", advertise: "http://127.0.0.1:0")
        node.bind(advertise: "http://127.0.0.1:4321")
        #expect(node.status(hostedSpins: ["counter"]).nodes.first?.advertise == "http://127.0.0.1:4321")
        let shared = ClusterStatus(nodes: [.init(node: "n2", advertise: "http://n2:1", live: true, spins: ["counter"])],
                                   selfNode: "n1")
        node.publish(shared)
        #expect(node.status(hostedSpins: ["counter"]) == shared)
    }
}

/// `GET /v1/cluster` through the router: a single node owning every hosted Spin, the
/// read scope, and the owned-Spins gauge.
@Suite struct ClusterRouteTests {
    static func router(tokens: [AccessToken] = []) throws -> APIRouter {
        APIRouter(host: try makeExampleHost(), access: AccessControl(tokens: tokens), metrics: Metrics(),
                  cluster: ClusterNode(node: "n1", advertise: "http://127.0.0.1:8080"))
    }

    @Test func singleNode_ListsItselfOwningEveryHostedSpin() async throws {
        let router = try Self.router()
        let response = await router.respond("GET", "/v1/cluster")
        #expect(response.status == 200)
        #expect(response.text == #"{"nodes":[{"node":"n1","advertise":"http://127.0.0.1:8080","live":true,"spins":["counter","feature","levels","router"]}],"self":"n1"}"#)
        #expect(await router.respond("POST", "/v1/cluster").status == 405)
        router.host.stop()
    }

    @Test func needsTheReadScope() async throws {
        let router = try Self.router(tokens: [AccessToken(token: "r", scopes: [.read])])
        #expect(await router.respond("GET", "/v1/cluster").status == 401)
        #expect(await router.respond("GET", "/v1/cluster", headers: [("Authorization", "Bearer other")]).status == 401)
        #expect(await router.respond("GET", "/v1/cluster", headers: [("Authorization", "Bearer r")]).status == 200)
        router.host.stop()
    }

    @Test func metrics_ShowTheSpinsThisNodeOwns() async throws {
        let router = try Self.router()
        #expect(await router.respond("GET", "/metrics").text.contains("spin_cluster_owned_spins 4"))
        router.cluster.publish(ClusterStatus(nodes: [.init(node: "n1", advertise: "", live: true, spins: ["counter"])],
                                             selfNode: "n1"))
        #expect(await router.respond("GET", "/metrics").text.contains("spin_cluster_owned_spins 1"))
        router.host.stop()
    }
}
