import Foundation
import Logging
import SpinServer

// spin-server: flags + SPIN_* variables + Config/spin-server.json -> a LoopServer hosting
// the configured Spins and Gears; stops gracefully on SIGTERM or SIGINT.
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

let loaded: SpinServerConfiguration.Loaded
let host: SpinHost
do {
    loaded = try SpinServerConfiguration.load(flags: command.flags, environment: ProcessInfo.processInfo.environment,
                                              kinds: SpinCatalog.kinds)
    host = try SpinCatalog.makeHost(loaded.configuration)
} catch {
    printError("error: \(error)")
    exit(exitConfigurationError)
}
let configuration = loaded.configuration

var warnings = loaded.warnings
if !configuration.isLoopbackHost {
    if configuration.tokens.isEmpty {
        warnings.append("listening on \(configuration.host), which is not a loopback address, with NO auth tokens: anyone who can reach it can read and change every Spin; set auth.tokens or SPIN_TOKENS")
        if configuration.allowedHosts.isEmpty {
            warnings.append("without tokens only requests whose Host is \(configuration.host == "0.0.0.0" || configuration.host == "::" ? "" : "the listen address, ")localhost or a loopback address are served (others get 421): list the names clients use in listen.allowedHosts or SPIN_ALLOWED_HOSTS")
        }
    } else if configuration.tls == nil {
        warnings.append("listening on \(configuration.host), which is not a loopback address, without TLS: bearer tokens cross the network in clear text; set tls.certificate and tls.key")
    }
}

if command.checkConfig {
    for warning in warnings { printError("warning: \(warning)") }
    print("spin-server: configuration OK (\(loaded.configFile)): \(configuration.summary)")
    exit(0)
}

LoggingSystem.bootstrap { label in SpinLogging.handler(label: label, log: configuration.log) }
let logger = Logger(label: "spin-server")
for warning in warnings { logger.warning("\(warning)") }
logger.info("configuration \(loaded.configFile): \(configuration.summary)")

// Signals are turned into events before the server starts, so none is lost.
let termination = Termination()
// swift-metrics made anywhere in the process are served on /metrics beside the server's.
let server = LoopServer(configuration: configuration, host: host, logger: logger,
                        metricsRegistry: LoopServer.bootstrapMetricsSystem())
let port: Int
do {
    port = try server.start()
} catch {
    printError("error: could not start: \(error)")
    exit(exitStartFailure)
}
logger.info("listening on \(configuration.url(port: port))")

let received = await termination.wait()
logger.info("\(Termination.name(received)) received: shutting down (up to \(configuration.limits.shutdownGraceSeconds) s)")
if let failure = await server.shutdown() {
    logger.critical("stopped, but \(failure)")
    exit(exitStartFailure)
}
logger.info("stopped")
exit(0)
