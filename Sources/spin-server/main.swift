import Foundation
import Logging
import ServiceLifecycle
import SpinServer

// spin-server: flags + SPIN_* variables + Config/spin-server.json -> a LoopServer hosting
// the configured Spins and Gears; stops gracefully on SIGTERM or SIGINT. Public API only:
// a program hosting its own kinds writes the same lines with its own SpinKindRegistry
// (Examples/TodoServer does).
//
// Exit codes: 0 stopped by a signal (or --check-config passed); 64 (EX_USAGE) bad
// configuration or flags; 1 the server could not start (port in use, certificate, corrupt
// journal, storage directory in use) or could not make every event durable at shutdown.

/// Writes one line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data("spin-server: \(message.replacingOccurrences(of: "\n", with: " "))\n".utf8))
}

let exitConfigurationError: Int32 = 64
let exitStartFailure: Int32 = 1

let command = SpinServerCommand.parseOrExit()

let kinds = SpinKindRegistry.examples
let loaded: SpinServerConfiguration.Loaded
let host: SpinHost
do {
    loaded = try SpinServerConfiguration.load(flags: command.flags, environment: ProcessInfo.processInfo.environment,
                                              kinds: kinds.kinds)
    host = try kinds.makeHost(loaded.configuration)
} catch {
    printError("error: \(error)")
    exit(exitConfigurationError)
}
let configuration = loaded.configuration

let warnings = loaded.warnings

if command.checkConfig {
    for warning in warnings { printError("warning: \(warning)") }
    print("spin-server: configuration OK (\(loaded.configFile)): \(configuration.summary)")
    exit(0)
}

SpinLogging.bootstrap(log: configuration.log)
let logger = Logger(label: "spin-server")
for warning in warnings { logger.warning("\(warning)") }
logger.info("configuration \(loaded.configFile): \(configuration.summary)")

// SIGTERM and SIGINT start a graceful shutdown of the group, which runs the server's.
// swift-metrics made anywhere in the process are served on /metrics beside the server's.
let server = LoopServer(configuration: configuration, host: host, logger: logger,
                        metricsRegistry: LoopServer.bootstrapMetricsSystem())
let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [],
                         logger: logger)
do {
    try await group.run()
} catch LoopServerError.cannotPersist {
    exit(exitStartFailure)  // run() logged it
} catch {
    printError("error: could not start: \(error)")
    exit(exitStartFailure)
}
exit(0)
