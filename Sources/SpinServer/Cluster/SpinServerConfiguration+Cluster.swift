import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension SpinServerConfiguration {
    /// This server as a node of a cluster: servers sharing one PostgreSQL database
    /// (`storage.backend: "postgres"`) each own some of the Spins. With the file backend
    /// the server is a cluster of one, and these values only name it in `GET /v1/cluster`.
    public struct Cluster: Sendable, Equatable {
        /// The node's name, unique in the cluster (`cluster.node`, `SPIN_NODE`, `--node`):
        /// placement hashes it, so it must stay the same across restarts. Default: the
        /// machine's host name, which is what sets nodes apart in most deployments.
        public var node: String
        /// The URL other nodes (and clients redirected to this node) reach it at
        /// (`cluster.advertise`); nil: `advertiseURL(port:)` derives it from the listen
        /// address.
        public var advertise: String?
        /// How long a lease and a heartbeat last (`cluster.leaseSeconds`): a dead node's
        /// Spins move after at most this long. 10 s rides out a garbage-collecting
        /// database or a busy network without false takeovers, while keeping a failover
        /// within seconds; leases are renewed every third of it.
        public var leaseSeconds: Int
        /// How many partitions the Spins are cut into (`cluster.partitions`,
        /// `SPIN_CLUSTER_PARTITIONS`): a node owns Spins a partition at a time, with one
        /// lease per partition, so a lease period costs the database the same whatever
        /// the number of Spins. Every node of a cluster must use the same count (the
        /// database records it and refuses a node with another one while the cluster
        /// runs); aim for ten or more per node. Default 64.
        public var partitions: Int

        /// The largest `leaseSeconds` accepted: beyond ten minutes a dead node's Spins
        /// would be unreachable for longer than any operator waits.
        public static let maxLeaseSeconds = 600

        public init(node: String = Cluster.hostName(), advertise: String? = nil, leaseSeconds: Int = 10,
                    partitions: Int = 64) {
            self.node = node
            self.advertise = advertise
            self.leaseSeconds = leaseSeconds
            self.partitions = partitions
        }

        /// The largest `partitions` accepted.
        public static let maxPartitions = 4096

        /// This machine's host name (`gethostname`), or `localhost` when it has none.
        public static func hostName() -> String {
            var buffer = [CChar](repeating: 0, count: 256)
            guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
            let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return name.isEmpty ? "localhost" : name
        }
    }

    /// The URL this node advertises, listening on `port`: `cluster.advertise` when set;
    /// else `http(s)://<listen host>:<port>`, where a wildcard listen address (`0.0.0.0`,
    /// `::`), which no other machine can dial, is replaced by the node's name.
    public func advertiseURL(port: Int) -> String {
        if let advertise = cluster.advertise { return advertise }
        guard host == "0.0.0.0" || host == "::" || host == "[::]" else { return url(port: port) }
        var named = self
        named.host = cluster.node
        return named.url(port: port)
    }
}

// MARK: - Checking the values

extension SpinServerConfiguration.Builder {
    /// A node name: 1 to 253 letters, digits, `.`, `_` or `-` (a host name fits).
    static func nodeName(_ text: String, source: String, key: String) throws(ConfigurationError) -> String {
        let allowed = text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard !text.isEmpty, text.utf8.count <= 253, allowed else {
            throw ConfigurationError(source: source, key: key,
                                     problem: "\"\(text)\" is not a valid node name: use 1 to 253 letters, digits, '.', '_' or '-'")
        }
        return text
    }

    /// An advertise URL: `http://` or `https://`, a host, an optional port, no path
    /// (a trailing `/` is dropped).
    static func advertise(_ text: String, source: String, key: String) throws(ConfigurationError) -> String {
        guard AdvertiseURL(text) != nil else {
            throw ConfigurationError(source: source, key: key,
                                     problem: "\"\(text)\" is not a node URL: write http(s)://host[:port] with no path, e.g. http://node-a.internal:8080")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// Lease seconds: 1 to `Cluster.maxLeaseSeconds`.
    static func leaseSeconds(_ number: Int, source: String, key: String) throws(ConfigurationError) -> Int {
        guard (1...SpinServerConfiguration.Cluster.maxLeaseSeconds).contains(number) else {
            throw ConfigurationError(source: source, key: key,
                                     problem: "must be 1 to \(SpinServerConfiguration.Cluster.maxLeaseSeconds) seconds, got \(number)")
        }
        return number
    }

    /// A partition count: 1 to `Cluster.maxPartitions`, given as text (a variable) or a number.
    static func partitions(_ text: String, source: String, key: String) throws(ConfigurationError) -> Int {
        let maximum = SpinServerConfiguration.Cluster.maxPartitions
        guard let number = Int(text.trimmingCharacters(in: .whitespaces)), (1...maximum).contains(number) else {
            throw ConfigurationError(source: source, key: key,
                                     problem: "must be a whole number of partitions from 1 to \(maximum), got \"\(text)\"")
        }
        return number
    }

    /// `SPIN_NODE`, `SPIN_CLUSTER_ADVERTISE`, `SPIN_CLUSTER_LEASE_SECONDS`,
    /// `SPIN_CLUSTER_PARTITIONS`, or the flags `--node`, `--advertise`, `--lease-seconds`:
    /// whichever are given.
    mutating func apply(node: String?, advertise: String?, leaseSeconds: String?, partitions: String? = nil,
                        sources: (node: String, advertise: String, leaseSeconds: String),
                        partitionsSource: String = "") throws(ConfigurationError) {
        if let partitions {
            configuration.cluster.partitions = try Self.partitions(partitions, source: partitionsSource,
                                                                   key: "cluster.partitions")
        }
        if let node {
            configuration.cluster.node = try Self.nodeName(node, source: sources.node, key: "cluster.node")
        }
        if let advertise {
            configuration.cluster.advertise = try Self.advertise(advertise, source: sources.advertise, key: "cluster.advertise")
        }
        if let leaseSeconds {
            guard let number = Int(leaseSeconds.trimmingCharacters(in: .whitespaces)) else {
                throw ConfigurationError(source: sources.leaseSeconds, key: "cluster.leaseSeconds",
                                         problem: "\"\(leaseSeconds)\" is not a whole number of seconds")
            }
            configuration.cluster.leaseSeconds = try Self.leaseSeconds(number, source: sources.leaseSeconds,
                                                                       key: "cluster.leaseSeconds")
        }
    }
}
