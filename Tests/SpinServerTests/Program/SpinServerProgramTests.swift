import ArgumentParser
import Foundation
import Prometheus
import SpinCore
import SpinExamples
import SpinServer
import Testing
@testable import SpinConcurrency

/// `SpinServerOptions` and `SpinServerProgram` as an embedding program uses them: flags
/// parsed into what loading takes, the exit codes, messages naming the program, its own
/// default config file, and logging bootstrapped before any kind runs. (The bootstrap
/// itself is replaced: a test process cannot bootstrap swift-log twice.)
@Suite struct SpinServerProgramTests {
    /// A fresh directory holding `greeter.json` with `json`.
    static func directory(with json: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spin-program-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(json.utf8).write(to: directory.appendingPathComponent("greeter.json"))
        return directory
    }

    static func program(_ arguments: [String], kinds: SpinKindRegistry, environment: [String: String] = [:],
                        bootstrap: (SpinServerConfiguration.Log) -> PrometheusCollectorRegistry = { _ in .init() })
    throws -> SpinServerProgram {
        try SpinServerProgram(SpinServerOptions.parse(arguments), kinds: kinds, name: "greeter",
                              defaultConfigFile: "greeter.json", environment: environment, bootstrap: bootstrap)
    }

    static var counters: SpinKindRegistry {
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        return kinds
    }

    @Test func aCommandLine_IsParsedIntoTheFlagsLoadingTakes() throws {
        let options = try SpinServerOptions.parse(["--config", "app.json", "--port", "0", "--log-format", "json",
                                                   "--storage-backend", "postgres", "--repair", "--check-config"])
        #expect(options.flags == SpinServerConfiguration.Flags(config: "app.json", port: "0", logFormat: "json",
                                                               storageBackend: "postgres", repair: true))
        #expect(options.checkConfig)
        #expect(try SpinServerOptions.parse([]).flags == SpinServerConfiguration.Flags())
    }

    @Test func anUnknownFlag_ExitsWithTheConfigurationErrorsCode64() {
        #expect(SpinServerOptions.configurationErrorExitCode.rawValue == 64)
        #expect(SpinServerOptions.startFailureExitCode.rawValue == 1)
        do {
            _ = try SpinServerOptions.parse(["--prot", "80"])
            Issue.record("--prot parsed")
        } catch {
            #expect(SpinServerOptions.exitCode(for: error) == SpinServerOptions.configurationErrorExitCode)
        }
    }

    struct Missing: Error, CustomStringConvertible {
        var description: String { "missing" }
    }

    @Test func theProgramsOwnDefaultConfigFile_IsReadWhenNoneIsNamed_AndItsHintSaysHowToNameAnother() throws {
        let json = #"{"spins": [{"name": "c", "kind": "counter"}]}"#
        let loaded = try SpinServerConfiguration.load(
            flags: .init(), environment: [:], kinds: Self.counters.kinds, defaultConfigFile: "greeter.json",
            readFile: { path in guard path == "greeter.json" else { throw Missing() }; return Data(json.utf8) },
            createDirectory: { _ in })
        #expect(loaded.configFile == "greeter.json")
        #expect(loaded.configuration.spins.map(\.name) == ["c"])
        #expect(throws: ConfigurationError(source: "greeter.json", key: "(file)",
                                           problem: "cannot read the config file (the default; pass --config or SPIN_CONFIG): missing")) {
            try SpinServerConfiguration.load(flags: .init(), environment: [:], kinds: Self.counters.kinds,
                                             defaultConfigFile: "greeter.json", readFile: { _ in throw Missing() })
        }
    }

    @Test func aBadConfiguration_Throws64() throws {
        let directory = try Self.directory(with: #"{"spins": [{"name": "c", "kind": "countr"}]}"#)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(throws: SpinServerOptions.configurationErrorExitCode) {
            try Self.program(["--config", directory.appendingPathComponent("greeter.json").path], kinds: Self.counters)
        }
    }

    @Test func warnings_NameTheRunningProgram_NotSpinServer() throws {
        let directory = try Self.directory(with: #"{"spins": [{"name": "c", "kind": "counter"}]}"#)
        defer { try? FileManager.default.removeItem(at: directory) }
        let program = try Self.program(["--config", directory.appendingPathComponent("greeter.json").path,
                                        "--storage", directory.appendingPathComponent("store").path],
                                       kinds: Self.counters, environment: ["SPIN_PROT": "80"])
        #expect(program.loaded.warnings.first?.hasPrefix("SPIN_PROT is set but greeter does not read it") == true)
        #expect(program.logger.label == "greeter")
    }

    @Test func loggingAndMetrics_AreBootstrappedWithTheConfiguredLog_BeforeAnyKindIsHosted() throws {
        let directory = try Self.directory(with: #"{"log": {"format": "json", "level": "debug"}, "spins": [{"name": "c", "kind": "counter"}]}"#)
        defer { try? FileManager.default.removeItem(at: directory) }
        let steps = Protected<[String]>([])
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in
            steps.withLock { $0.append("hosting \(context.logger.label)") }
            try context.host(Counter.spin())
        }
        let registry = PrometheusCollectorRegistry()
        let program = try Self.program(["--config", directory.appendingPathComponent("greeter.json").path,
                                        "--storage", directory.appendingPathComponent("store").path], kinds: kinds,
                                       bootstrap: { log in
                                           steps.withLock { $0.append("bootstrap \(log.format) \(log.level)") }
                                           return registry
                                       })
        let host = try program.makeHost()
        #expect(steps.withLock { $0 } == ["bootstrap json debug", "hosting c"])
        #expect(host.spins.map(\.name) == ["c"])
        #expect(program.metricsRegistry === registry)
    }

    @Test func aKindThatCannotBeHosted_Throws64() throws {
        let directory = try Self.directory(with: #"{"spins": [{"name": "c", "kind": "counter"}, {"name": "c2", "kind": "counter"}]}"#)
        defer { try? FileManager.default.removeItem(at: directory) }
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in
            guard context.name == "c" else { throw HostingError.noGear(spin: context.name) }
            try context.host(Counter.spin())
        }
        let program = try Self.program(["--config", directory.appendingPathComponent("greeter.json").path,
                                        "--storage", directory.appendingPathComponent("store").path], kinds: kinds)
        #expect(throws: SpinServerOptions.configurationErrorExitCode) { try program.makeHost() }
    }
}
