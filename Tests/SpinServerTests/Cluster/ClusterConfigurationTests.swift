import Testing
@testable import SpinServer

/// `cluster.node`, `cluster.advertise`, `cluster.leaseSeconds`: defaults, the
/// precedence of flags, `SPIN_*` variables and the file, and errors naming the source.
@Suite struct ClusterConfigurationTests {
    typealias Loading = SpinServerConfigurationLoadingTests
    typealias Configuration = SpinServerConfiguration

    @Test func defaults_AreTheHostName_TheListenURL_AndTenSeconds() throws {
        let configuration = try Loading.make().configuration
        #expect(configuration.cluster.node == Configuration.Cluster.hostName())
        #expect(!configuration.cluster.node.isEmpty)
        #expect(configuration.cluster.advertise == nil)
        #expect(configuration.cluster.leaseSeconds == 10)
        #expect(configuration.advertiseURL(port: 8080) == "http://127.0.0.1:8080")
    }

    @Test func advertiseURL_OfAWildcardListenAddress_UsesTheNodeName() {
        var configuration = Configuration(host: "0.0.0.0", cluster: .init(node: "node-b"))
        #expect(configuration.advertiseURL(port: 9000) == "http://node-b:9000")
        configuration.cluster.advertise = "https://b.example"
        #expect(configuration.advertiseURL(port: 9000) == "https://b.example")
    }

    @Test func everyKey_FollowsThePrecedence() throws {
        let json = #"{"cluster": {"node": "file-node", "advertise": "http://file:1", "leaseSeconds": 5}}"#
        let environment = ["SPIN_NODE": "env-node", "SPIN_CLUSTER_ADVERTISE": "http://env:2",
                           "SPIN_CLUSTER_LEASE_SECONDS": "6"]
        let flags = Configuration.Flags(node: "flag-node", advertise: "http://flag:3/", leaseSeconds: "7")
        #expect(try Loading.make(json, flags: flags, environment: environment).configuration.cluster
            == .init(node: "flag-node", advertise: "http://flag:3", leaseSeconds: 7))
        #expect(try Loading.make(json, environment: environment).configuration.cluster
            == .init(node: "env-node", advertise: "http://env:2", leaseSeconds: 6))
        #expect(try Loading.make(json).configuration.cluster
            == .init(node: "file-node", advertise: "http://file:1", leaseSeconds: 5))
        // No warning about unknown variables for these.
        #expect(try Loading.make(json, environment: environment).warnings.allSatisfy { !$0.contains("SPIN_NODE") })
    }

    @Test(arguments: [
        (#"{"cluster": {"node": "a b"}}"#, "cluster.node", "not a valid node name"),
        (#"{"cluster": {"node": ""}}"#, "cluster.node", "not a valid node name"),
        (#"{"cluster": {"node": 3}}"#, "cluster.node", "must be a string"),
        (#"{"cluster": {"advertise": "node-a:8080"}}"#, "cluster.advertise", "not a node URL"),
        (#"{"cluster": {"advertise": "http://node-a:8080/spins"}}"#, "cluster.advertise", "not a node URL"),
        (#"{"cluster": {"advertise": "http://node-a:99999"}}"#, "cluster.advertise", "not a node URL"),
        (#"{"cluster": {"advertise": "http://:80"}}"#, "cluster.advertise", "not a node URL"),
        (#"{"cluster": {"leaseSeconds": 0}}"#, "cluster.leaseSeconds", "must be 1 to 600"),
        (#"{"cluster": {"leaseSeconds": 601}}"#, "cluster.leaseSeconds", "must be 1 to 600"),
        (#"{"cluster": {"leaseSeconds": 2.5}}"#, "cluster.leaseSeconds", "must be an integer"),
        (#"{"cluster": {"lease": 5}}"#, "cluster.lease", "unknown key"),
    ])
    func badFileValue_NamesTheFileAndKey(json: String, key: String, problem: String) {
        let error = Loading.error(json)
        #expect(error?.source == Configuration.defaultConfigFile)
        #expect(error?.key == key)
        #expect(error?.problem.contains(problem) == true, "problem was: \(error?.problem ?? "none")")
    }

    @Test(arguments: [
        (["SPIN_NODE": "x/y"], "SPIN_NODE", "cluster.node"),
        (["SPIN_CLUSTER_ADVERTISE": "ftp://a"], "SPIN_CLUSTER_ADVERTISE", "cluster.advertise"),
        (["SPIN_CLUSTER_LEASE_SECONDS": "ten"], "SPIN_CLUSTER_LEASE_SECONDS", "cluster.leaseSeconds"),
    ])
    func badVariable_NamesTheVariable(environment: [String: String], source: String, key: String) {
        let error = Loading.error(environment: environment)
        #expect(error?.source == source)
        #expect(error?.key == key)
    }

    @Test(arguments: [
        (Configuration.Flags(node: "a:b"), "--node", "cluster.node"),
        (Configuration.Flags(advertise: "http://a b"), "--advertise", "cluster.advertise"),
        (Configuration.Flags(leaseSeconds: "-1"), "--lease-seconds", "cluster.leaseSeconds"),
    ])
    func badFlag_NamesTheFlag(flags: Configuration.Flags, source: String, key: String) {
        let error = Loading.error(flags: flags)
        #expect(error?.source == source)
        #expect(error?.key == key)
    }

    @Test func advertise_AcceptsIPv6AndHTTPS() throws {
        let flags = Configuration.Flags(advertise: "https://[fd00::1]:8443")
        #expect(try Loading.make(flags: flags).configuration.cluster.advertise == "https://[fd00::1]:8443")
    }
}
