import SpinStorage
import SpinWire
import SpinJSON

/// The answer of `GET /v1/cluster`: the nodes, whether each is alive, the configured
/// Spins each owns, the partitions each holds, and which node answered:
/// `{"nodes":[{"node":..,"advertise":..,"live":true,"spins":[..],"partitions":[..],"definitions":{..}}],"self":..}`.
/// Spins made at run time are not listed (there may be millions): each is owned with
/// its partition (`SpinPartitions`).
package struct ClusterStatus: Sendable, Equatable {
    /// One node, the configured Spins it owns and the partitions whose lease it holds.
    package struct Node: Sendable, Equatable {
        package var node: String
        package var advertise: String
        package var live: Bool
        /// Sorted by name.
        package var spins: [String]
        /// Sorted; nil for a server that does not share its Spins.
        package var partitions: [Int]?
        /// The version of each machine definition the node runs, by its stored name (a
        /// rolling upgrade shows here); empty when it runs none.
        package var definitions: [String: Int]

        package init(node: String, advertise: String, live: Bool, spins: [String], partitions: [Int]? = nil,
                     definitions: [String: Int] = [:]) {
            self.node = node
            self.advertise = advertise
            self.live = live
            self.spins = spins
            self.partitions = partitions
            self.definitions = definitions
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

    /// The cluster as `view` shows it at `now`: every node row, and for each the
    /// partitions whose lease it holds and that has not run out, with the configured
    /// `spins` in them.
    package static func shared<Instant: InstantProtocol>(view: ClusterView<Instant>, now: Instant, leaseDuration: Duration,
                                                        selfNode: String, partitions: SpinPartitions,
                                                        spins: [String]) -> ClusterStatus where Instant.Duration == Duration {
        var owned: [String: [Int]] = [:]
        var ownerOf: [Int: String] = [:]
        for lease in view.leases.values where lease.isValid(now: now) && partitions.all.contains(lease.partition) {
            owned[lease.node, default: []].append(lease.partition)
            ownerOf[lease.partition] = lease.node
        }
        var spinsOf: [String: [String]] = [:]
        for spin in spins {
            if let owner = ownerOf[partitions.partition(of: spin)] { spinsOf[owner, default: []].append(spin) }
        }
        let nodes = view.nodes.sorted { $0.name < $1.name }.map { row in
            Node(node: row.name, advertise: row.advertise, live: row.isLive(now: now, leaseDuration: leaseDuration),
                 spins: (spinsOf[row.name] ?? []).sorted(), partitions: (owned[row.name] ?? []).sorted(),
                 definitions: row.definitions)
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
            var members: [(String, JSONValue)] = [
                ("node", .string(node.node)), ("advertise", .string(node.advertise)), ("live", .bool(node.live)),
                ("spins", .array(node.spins.map(JSONValue.string))),
            ]
            if let partitions = node.partitions {
                members.append(("partitions", .array(partitions.map { .number(String($0)) })))
            }
            if !node.definitions.isEmpty { members.append(("definitions", .numbers(node.definitions))) }
            return .object(members)
        }
        return .object([("nodes", .array(list)), ("self", .string(selfNode))])
    }
}
