import ArgumentParser
import Foundation
import Logging
import Prometheus
import ServiceLifecycle

/// A program that hosts Spins, from its command line to a stopped server, in the steps
/// `spin-server` takes (it is one too): load the configuration (`SpinServerOptions`, the
/// `SPIN_*` variables, the config file), bootstrap logging and metrics with it, host the
/// configured Spins, and serve until SIGTERM or SIGINT.
///
/// ```swift
/// let program = try SpinServerProgram(options, kinds: kinds, defaultConfigFile: "greeter.json")
/// let host = try program.makeHost()   // the kinds' loggers follow log.format and log.level
/// try await program.serve(host)       // --check-config: prints what would be hosted instead
/// ```
///
/// Logging is bootstrapped before anything is hosted, so every `Logger` a kind makes
/// (``SpinKindContext/logger`` too) writes in the configured format at the configured
/// level. What goes wrong is written to standard error as one line naming the program
/// (`greeter: error: greeter.json: spins[0].kind: unknown kind "gretter" (known: greeter)`)
/// and thrown as the `ExitCode` to exit with (`SpinServerOptions.configurationErrorExitCode`,
/// 64, or `startFailureExitCode`, 1), which an `AsyncParsableCommand`'s `main()` exits
/// with and prints nothing more for.
public struct SpinServerProgram: Sendable {
    /// The name messages give the running program: the last path component of its
    /// `argv[0]` (`spin-server`, `greeter`), or `spin-server` when that is empty.
    public static var runningName: String {
        let name = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? ""
        return name.isEmpty || name == "/" ? "spin-server" : name
    }

    /// The name messages and the program's logger use.
    public let name: String
    /// The configuration, where it came from, and its warnings.
    public let loaded: SpinServerConfiguration.Loaded
    /// `--check-config`: `serve` prints what would be hosted instead of serving.
    public let checkOnly: Bool
    /// `--check-upgrade`: `serve` reports what restarting on the configured definitions
    /// would do to the stored Spins instead of serving (`LoopServer.checkUpgrade`), at most
    /// `upgradeSample` of each kind when set.
    public let checkUpgrade: Bool
    public let upgradeSample: Int?
    /// The program's logger, labelled with its name.
    public let logger: Logger
    /// The registry swift-metrics was bootstrapped with, which `GET /metrics` renders.
    public let metricsRegistry: PrometheusCollectorRegistry
    private let kinds: SpinKindRegistry

    /// Loads the configuration and bootstraps logging and metrics with it
    /// (`LoopServer.bootstrap(log:)`, once per process), then logs its warnings and what
    /// it configures (with `--check-config`, the warnings go to standard error as lines
    /// of their own).
    /// - Parameters:
    ///   - options: the parsed command line.
    ///   - kinds: the Spin kinds the program hosts; machines need none.
    ///   - name: the name messages give the program (`runningName` by default).
    ///   - defaultConfigFile: read when neither `--config` nor `SPIN_CONFIG` names one.
    ///   - environment: where the `SPIN_*` variables are read.
    /// - Throws: `SpinServerOptions.configurationErrorExitCode` for a bad configuration,
    ///   after writing it to standard error.
    public init(_ options: SpinServerOptions, kinds: SpinKindRegistry, name: String = runningName,
                defaultConfigFile: String = SpinServerConfiguration.defaultConfigFile,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws(ExitCode) {
        try self.init(options, kinds: kinds, name: name, defaultConfigFile: defaultConfigFile,
                      environment: environment, bootstrap: LoopServer.bootstrap(log:))
    }

    /// The same with another bootstrap (tests, which cannot bootstrap the process twice).
    package init(_ options: SpinServerOptions, kinds: SpinKindRegistry, name: String, defaultConfigFile: String,
                 environment: [String: String],
                 bootstrap: (SpinServerConfiguration.Log) -> PrometheusCollectorRegistry) throws(ExitCode) {
        self.name = name
        self.kinds = kinds
        self.checkOnly = options.checkConfig
        self.checkUpgrade = options.checkUpgrade
        var sample: Int?
        if let text = options.sample {
            guard let count = Int(text), count > 0 else {
                Self.printError("\(name): error: --sample: expected a whole number of Spins from 1, got \"\(text)\"")
                throw SpinServerOptions.configurationErrorExitCode
            }
            guard options.checkUpgrade else {
                Self.printError("\(name): error: --sample: only --check-upgrade takes a sample")
                throw SpinServerOptions.configurationErrorExitCode
            }
            sample = count
        }
        self.upgradeSample = sample
        do {
            loaded = try SpinServerConfiguration.load(flags: options.flags, environment: environment,
                                                      kinds: kinds.kinds, program: name,
                                                      defaultConfigFile: defaultConfigFile)
        } catch {
            Self.printError("\(name): error: \(error)")
            throw SpinServerOptions.configurationErrorExitCode
        }
        metricsRegistry = bootstrap(loaded.configuration.log)
        logger = Logger(label: name)
        if checkOnly || checkUpgrade {
            for warning in loaded.warnings { Self.printError("\(name): warning: \(warning)") }
        } else {
            for warning in loaded.warnings { logger.warning("\(warning)") }
            logger.info("configuration \(loaded.configFile): \(loaded.configuration.summary)")
        }
    }

    /// Hosts every configured Spin and Gear (`SpinKindRegistry.makeHost`).
    /// - Throws: `SpinServerOptions.configurationErrorExitCode` when a kind cannot be
    ///   hosted, after writing why to standard error.
    public func makeHost() throws(ExitCode) -> SpinHost {
        do {
            return try kinds.makeHost(loaded.configuration)
        } catch {
            Self.printError("\(name): error: \(error)")
            throw SpinServerOptions.configurationErrorExitCode
        }
    }

    /// Serves `host` with a `LoopServer` in a `ServiceGroup` until SIGTERM or SIGINT,
    /// then shuts down gracefully. With `--check-config`, prints one line saying what
    /// would be hosted (`greeter: configuration OK (greeter.json): 1 spin (greetings), ...`)
    /// and returns instead.
    /// - Throws: `SpinServerOptions.startFailureExitCode` when the server cannot start
    ///   (written to standard error) or cannot make every event durable at shutdown
    ///   (logged).
    public func serve(_ host: SpinHost) async throws(ExitCode) {
        guard !checkOnly else {
            print("\(name): configuration OK (\(loaded.configFile)): \(loaded.configuration.summary)")
            return
        }
        guard !checkUpgrade else { return try reportUpgrade(host) }
        let server = LoopServer(configuration: loaded.configuration, host: host, logger: logger,
                                metricsRegistry: metricsRegistry)
        let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint],
                                 cancellationSignals: [], logger: logger)
        do {
            try await group.run()
        } catch LoopServerError.cannotPersist {
            throw SpinServerOptions.startFailureExitCode   // run() logged it
        } catch {
            Self.printError("\(name): error: could not start: \(error)")
            throw SpinServerOptions.startFailureExitCode
        }
    }

    /// `--check-upgrade`: prints the report, and throws `upgradeFailureExitCode` when some
    /// Spin would be unrecoverable.
    private func reportUpgrade(_ host: SpinHost) throws(ExitCode) {
        let report: UpgradeReport
        do {
            report = try LoopServer.checkUpgrade(configuration: loaded.configuration, host: host, sample: upgradeSample,
                                                 logger: logger)
        } catch {
            Self.printError("\(name): error: cannot check the upgrade: \(error)")
            throw SpinServerOptions.startFailureExitCode
        }
        let text = report.description
        if !text.isEmpty { print(text) }
        guard report.passes else {
            print("\(name): upgrade check FAILED (\(loaded.configFile)): some stored Spins would be unrecoverable")
            throw SpinServerOptions.upgradeFailureExitCode
        }
        print("\(name): upgrade check OK (\(loaded.configFile)): every checked Spin would run")
    }

    /// `makeHost()`, then `serve(_:)`: the whole program after its options are parsed.
    public func run() async throws(ExitCode) {
        try await serve(makeHost())
    }

    /// Writes `message` to standard error as one line.
    static func printError(_ message: String) {
        FileHandle.standardError.write(Data("\(message.replacingOccurrences(of: "\n", with: " "))\n".utf8))
    }
}
