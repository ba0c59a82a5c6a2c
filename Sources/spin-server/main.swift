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

// Signals are turned into events before the server starts, so none is lost.
let termination = Termination()
let server = LoopServer(configuration: configuration, host: host, logger: logger)
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
