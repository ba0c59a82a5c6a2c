import SpinWire

/// The answer of `GET /v1/cluster`: the nodes, whether each is alive, the Spins each
/// owns, and which node answered:
/// `{"nodes":[{"node":..,"advertise":..,"live":true,"spins":[..]}],"self":..}`.
package struct ClusterStatus: Sendable, Equatable {
    /// One node and the Spins whose lease it holds.
    package struct Node: Sendable, Equatable {
        package var node: String
        package var advertise: String
        package var live: Bool
        /// Sorted by name.
        package var spins: [String]

        package init(node: String, advertise: String, live: Bool, spins: [String]) {
            self.node = node
            self.advertise = advertise
            self.live = live
            self.spins = spins
        }
    }

    /// Sorted by name.
    package var nodes: [Node]
    /// The node that answers.
    package var selfNode: String

    package init(nodes: [Node], selfNode: String) {
        self.nodes = nodes
        self.selfNode = selfNode
    }

    /// A server that does not share its Spins (the file backend): one node, this one,
    /// owning every hosted Spin.
    package static func single(node: String, advertise: String, spins: [String]) -> ClusterStatus {
        ClusterStatus(nodes: [Node(node: node, advertise: advertise, live: true, spins: spins.sorted())], selfNode: node)
    }

    /// The cluster as `view` shows it at `now`: every node row, and for each the Spins
    /// whose lease it holds and that has not run out.
    package static func shared<Instant: InstantProtocol>(view: ClusterView<Instant>, now: Instant, leaseDuration: Duration,
                                                        selfNode: String) -> ClusterStatus where Instant.Duration == Duration {
        var owned: [String: [String]] = [:]
        for lease in view.leases.values where lease.isValid(now: now) {
            owned[lease.node, default: []].append(lease.spin)
        }
        let nodes = view.nodes.sorted { $0.name < $1.name }.map { row in
            Node(node: row.name, advertise: row.advertise, live: row.isLive(now: now, leaseDuration: leaseDuration),
                 spins: (owned[row.name] ?? []).sorted())
        }
        return ClusterStatus(nodes: nodes, selfNode: selfNode)
    }

    /// The Spins `node` owns here.
    package func spins(of node: String) -> [String] {
        nodes.first { $0.node == node }?.spins ?? []
    }

    /// The owning node of each Spin some node holds a lease of.
    package var owners: [String: String] {
        var owners: [String: String] = [:]
        for node in nodes { for spin in node.spins { owners[spin] = node.node } }
        return owners
    }

    /// The response body.
    package var json: JSONValue {
        let list = nodes.map { node -> JSONValue in
            .object([("node", .string(node.node)), ("advertise", .string(node.advertise)), ("live", .bool(node.live)),
                     ("spins", .array(node.spins.map(JSONValue.string)))])
        }
        return .object([("nodes", .array(list)), ("self", .string(selfNode))])
    }
}
