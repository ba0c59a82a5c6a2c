import Foundation
import SpinServer
import Testing

/// Configuration loading as an embedder calls it (the public API, no `@testable`): the
/// file, `SPIN_*` variables and flags, the resolved file and the warnings.
@Suite struct SpinServerConfigurationPublicTests {
    static let kinds = SpinServerConfiguration.SpinKinds(["todo": .none])

    static func load(_ json: String, flags: SpinServerConfiguration.Flags = .init(config: "app.json"),
                     environment: [String: String] = [:]) throws -> SpinServerConfiguration.Loaded {
        try SpinServerConfiguration.load(
            flags: flags, environment: environment, kinds: kinds,
            readFile: { path in
                guard path == "app.json" else { throw CocoaError(.fileNoSuchFile) }
                return Data(json.utf8)
            },
            createDirectory: { _ in })
    }

    @Test func flagsBeatVariables_WhichBeatTheFile() throws {
        let json = #"{"listen": {"host": "127.0.0.1", "port": 7000}, "spins": [{"name": "list", "kind": "todo"}]}"#
        let loaded = try Self.load(json, flags: .init(config: "app.json", port: "7002"), environment: ["SPIN_PORT": "7001"])
        #expect(loaded.configFile == "app.json")
        #expect(loaded.configuration.port == 7002)
        #expect(try Self.load(json, environment: ["SPIN_PORT": "7001"]).configuration.port == 7001)
        #expect(loaded.configuration.spins == [.init(name: "list", kind: "todo")])
        #expect(loaded.warnings.isEmpty)
    }

    @Test func anUnknownKind_IsAnErrorNamingFileKeyAndKinds() {
        #expect(throws: ConfigurationError(source: "app.json", key: "spins[0].kind", problem: #"unknown kind "tdo" (known: todo)"#)) {
            try Self.load(#"{"spins": [{"name": "list", "kind": "tdo"}]}"#)
        }
    }

    @Test func aListenerOthersReach_WithoutTokens_IsAWarning() throws {
        let loaded = try Self.load(#"{"listen": {"host": "0.0.0.0"}, "spins": [{"name": "list", "kind": "todo"}]}"#)
        #expect(loaded.warnings.count == 2)
        #expect(loaded.warnings.first?.contains("with NO auth tokens") == true)
        #expect(loaded.configuration.exposureWarnings == loaded.warnings)
    }
}
