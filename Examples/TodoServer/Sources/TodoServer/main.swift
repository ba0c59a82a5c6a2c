import Foundation
import Logging
import ServiceLifecycle
import SpinServer
import TodoKinds

// todo-server: todo-server.json (or --config PATH) + SPIN_* variables + --port/--storage
// -> the todo kinds hosted by a LoopServer, stopped gracefully by SIGTERM or SIGINT.
// Exit codes: 0 after a signal, 64 bad configuration, 1 could not start or persist.

/// The value after `name` on the command line, if any.
func flag(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    return arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

let kinds = todoKinds()
let loaded: SpinServerConfiguration.Loaded
let host: SpinHost
do {
    let flags = SpinServerConfiguration.Flags(config: flag("--config") ?? "todo-server.json", port: flag("--port"),
                                              storage: flag("--storage"))
    loaded = try SpinServerConfiguration.load(flags: flags, environment: ProcessInfo.processInfo.environment,
                                              kinds: kinds.kinds)
    host = try kinds.makeHost(loaded.configuration)
} catch {
    FileHandle.standardError.write(Data("todo-server: \(error)\n".utf8))
    exit(64)
}

SpinLogging.bootstrap(log: loaded.configuration.log)
let logger = Logger(label: "todo-server")
for warning in loaded.warnings { logger.warning("\(warning)") }
let server = LoopServer(configuration: loaded.configuration, host: host, logger: logger)
let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [],
                         logger: logger)
do {
    try await group.run()   // logs "listening on http://...", serves, stops on a signal
} catch {
    logger.critical("\(error)")
    exit(1)
}
