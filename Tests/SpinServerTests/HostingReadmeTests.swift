import Foundation
import Logging
import ServiceLifecycle
import SpinCore
import SpinExamples
import SpinServer
import Testing

// The DocC article Hosting (Sources/SpinServer/SpinServer.docc/Hosting.md): every line of
// its Swift snippets is compiled, here or in the example packages (Examples/Greeter,
// Examples/TodoServer, which CI builds); a user's Spin with Codable state and events,
// hosted next to nothing else, served on a free port with start() and shutdown().
struct Thermostat: Codable, Equatable, Sendable {
    var target: Double
    var heating: Bool
}

enum ThermostatEvent: Codable, Equatable, Sendable {
    case setTarget(Double)
    case heat(Bool)
}

func makeThermostat() -> Spin<Thermostat, ThermostatEvent> {
    Spin(initialState: Thermostat(target: 19, heating: false)) {
        // A feedback decides to heat while the target is above 20 degrees.
        Feedback(effect: { (state: Thermostat) -> ThermostatEvent? in
            state.heating != (state.target > 20) ? .heat(state.target > 20) : nil
        })
        Reducer { (state: Thermostat, event: ThermostatEvent) -> Thermostat in
            switch event {
            case .setTarget(let target): Thermostat(target: target, heating: state.heating)
            case .heat(let on): Thermostat(target: state.target, heating: on)
            }
        }
    }
}

/// Hosting.md's "Step by step", compiled but not run: it bootstraps the process's logging
/// and metrics, which a test process, making many servers, must not.
func hostStepByStep(options: SpinServerOptions, kinds: SpinKindRegistry) async throws {
    let loaded = try SpinServerConfiguration.load(flags: options.flags, environment: ProcessInfo.processInfo.environment,
                                                  kinds: kinds.kinds, defaultConfigFile: "greeter.json")
    let registry = LoopServer.bootstrap(log: loaded.configuration.log)   // before hosting, once per process
    let host = try kinds.makeHost(loaded.configuration)
    let logger = Logger(label: "greeter")
    let server = LoopServer(configuration: loaded.configuration, host: host, logger: logger, metricsRegistry: registry)
    let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [],
                             logger: logger)
    try await group.run()   // logs "listening on http://...", serves, stops on a signal
}

// Serialized: the raw clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct HostingReadmeTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift files whose code Hosting.md may show: this one and the example packages'.
    static func compiledSources() throws -> String {
        var sources = [try String(contentsOfFile: #filePath, encoding: .utf8)]
        for example in ["Examples/Greeter", "Examples/TodoServer"] {
            let root = packageRoot.appendingPathComponent(example)
            sources.append(try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8))
            let files = FileManager.default.enumerator(at: root.appendingPathComponent("Sources"), includingPropertiesForKeys: nil)
            for case let file as URL in files?.allObjects ?? [] where file.pathExtension == "swift" {
                sources.append(try String(contentsOf: file, encoding: .utf8))
            }
        }
        return sources.joined(separator: "\n")
    }

    @Test func everyLineOfHostingsSwiftSnippets_IsCompiledCode() throws {
        let article = try String(contentsOf: Self.packageRoot.appendingPathComponent("Sources/SpinServer/SpinServer.docc/Hosting.md"),
                                 encoding: .utf8)
        let snippets = article.components(separatedBy: "```swift").dropFirst().map { $0.components(separatedBy: "```")[0] }
        #expect(snippets.count >= 6, "Hosting.md's Swift snippets")
        let compiled = Set(try Self.compiledSources().split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        let lines = snippets.flatMap { $0.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } }
        let missing = lines.filter { !$0.isEmpty && !compiled.contains($0) }
        #expect(missing.isEmpty, "Hosting.md lines not in HostingReadmeTests.swift or Examples/: \(missing)")
    }

    @Test func withoutAConfigFile_AHostedExampleIsServed_ThenShutDown() async throws {
        let host = SpinHost()
        try host.host(Counter.spin(), named: "counter")
        let server = LoopServer(configuration: SpinServerConfiguration(port: 0), host: host, logger: Logger(label: "counter"))
        let port = try server.start()      // starts every Spin, binds, serves
        var value = 0
        for _ in 0..<2000 where value != 10 {
            let client = try RawClient(port: port)
            client.send("GET /v1/spins/counter HTTP/1.1\r\nHost: localhost\r\n\r\n")
            value = (client.readResponse()?.body.jsonObject["state"] as? [String: Any])?["value"] as? Int ?? 0
            if value != 10 { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(value == 10, "the counter's feedback counts to 10 once started")
        await server.shutdown()            // stop accepting, close streams with 1001, finish requests
        #expect((try? RawClient(port: port)) == nil, "nothing listens after shutdown")
    }

    @Test func aUsersOwnSpin_IsServed() async throws {
        let host = SpinHost()
        try host.host(makeThermostat(), named: "thermostat")
        let server = LoopServer(configuration: SpinServerConfiguration(port: 0), host: host,
                                logger: Logger(label: "thermostat"))
        let port = try server.start()

        // Swift's synthesized Codable: {"setTarget":{"_0":22}}.
        let post = try LiveServerTests.post(port, "/v1/spins/thermostat/events", #"{"setTarget":{"_0":22}}"#)
        #expect(post.status == 202)
        var heating = false
        for _ in 0..<2000 where !heating {
            let client = try RawClient(port: port)
            client.send("GET /v1/spins/thermostat HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let state = client.readResponse()?.body.jsonObject["state"] as? [String: Any]
            heating = state?["heating"] as? Bool ?? false
            if !heating { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(heating)
        await server.shutdown()
    }
}
