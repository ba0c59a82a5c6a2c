import Dispatch
import Logging
import SpinExamples
import SpinServer
#if canImport(Glibc)
import Glibc
#endif

// Minimal start-up: the default example Spins on 127.0.0.1 (port from the first argument).
// Flags, environment and the config file come with the configuration loader.
LoggingSystem.bootstrap(StreamLogHandler.standardError)
var logger = Logger(label: "spin-server")
logger.logLevel = .info
let port = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 8080 : 8080
let host = SpinHost()
let example = AuthRouting()
do {
    try host.host(Counter.spin(), named: "counter", kind: "counter")
    try host.host(Levels.spin(), named: "levels", kind: "levels")
    try host.host(example.feature, named: "feature", kind: "feature")
    try host.host(example.router, named: "router", kind: "router")
    try host.host(example.gear, named: "auth", attachedTo: ["feature", "router"])
} catch {
    print("spin-server: \(error)")
    exit(64)
}
let server = LoopServer(configuration: SpinServerConfiguration(port: port), host: host, logger: logger)
do {
    let bound = try server.start()
    logger.info("listening on http://127.0.0.1:\(bound)")
} catch {
    print("spin-server: \(error)")
    exit(1)
}
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let signals = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: .main) }
for source in signals {
    source.setEventHandler {
        Task {
            await server.shutdown()
            logger.info("stopped")
            exit(0)
        }
    }
    source.resume()
}
dispatchMain()
