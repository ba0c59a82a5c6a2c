import Foundation
import Testing

/// Runs the built `spin-server` binary: `--check-config` on good and bad files (exit code
/// and the one-line message), the shipped config from the repository root, and `--help`.
///
/// The binary is found next to the test bundle (`swift build` or `swift test` builds it
/// into the same directory); a missing binary is a test failure, not a skip.
@Suite struct SpinServerExecutableTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var binary: URL? {
        var candidates: [URL] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
            // macOS-style bundles: .../debug/X.xctest/Contents/MacOS/X
            while directory.path.contains(".xctest") { directory.deleteLastPathComponent() }
            candidates.append(directory.appendingPathComponent("spin-server"))
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("spin-server"))
        candidates.append(packageRoot.appendingPathComponent(".build/debug/spin-server"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    struct Run {
        let status: Int32
        let standardOutput: String
        let standardError: String
    }

    /// Runs the binary with `arguments` in `directory`, with no `SPIN_*` variables.
    static func run(_ arguments: [String], in directory: URL? = nil) throws -> Run? {
        guard let binary else {
            Issue.record("spin-server is not built next to the tests; run `swift build` first")
            return nil
        }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory ?? FileManager.default.temporaryDirectory
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPIN_") }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, standardOutput: String(decoding: outputData, as: UTF8.self),
                   standardError: String(decoding: errorData, as: UTF8.self))
    }

    /// A fresh directory with `config.json` holding `json`.
    static func directory(with json: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spin-exec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(json.utf8).write(to: directory.appendingPathComponent("config.json"))
        return directory
    }

    @Test func checkConfig_OnAGoodFile_PrintsOneOKLineAndExits0() throws {
        let directory = try Self.directory(with: """
            {"listen": {"port": 0}, "storage": {"directory": "store"},
             "spins": [{"name": "c", "kind": "counter"}, {"name": "f", "kind": "feature", "gear": "g"},
                       {"name": "r", "kind": "router", "gear": "g"}],
             "gears": [{"name": "g"}]}
            """)
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let run = try Self.run(["--check-config", "--config", "config.json"], in: directory) else { return }
        #expect(run.status == 0)
        #expect(run.standardError == "")
        #expect(run.standardOutput
            == "spin-server: configuration OK (config.json): 3 spins (c, f@g, r@g), 1 gear (g), http://127.0.0.1:0, storage store (fsync batch), no tokens (no authentication)\n")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("store").path))
    }

    @Test func checkConfig_OnABadFile_PrintsOneErrorLineNamingFileKeyAndProblemAndExits64() throws {
        let directory = try Self.directory(with: """
            {"spins": [{"name": "a", "kind": "counter"}, {"name": "b", "kind": "levels"}, {"name": "c", "kind": "countr"}]}
            """)
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let run = try Self.run(["--check-config", "--config", "config.json"], in: directory) else { return }
        #expect(run.status == 64)
        #expect(run.standardOutput == "")
        #expect(run.standardError
            == "spin-server: error: config.json: spins[2].kind: unknown kind \"countr\" (known: counter, feature, levels, router)\n")
    }

    @Test func checkConfig_OnABadMachine_PrintsTheMachineErrorAndExits64() throws {
        let directory = try Self.directory(with: #"{"spins": [{"name": "door", "machine": "machines/door.json"}]}"#)
        defer { try? FileManager.default.removeItem(at: directory) }
        let machines = directory.appendingPathComponent("machines")
        try FileManager.default.createDirectory(at: machines, withIntermediateDirectories: true)
        try Data(#"{"initial": "closed", "states": {"closed": {"on": {"LOCK": "lockd"}}}}"#.utf8)
            .write(to: machines.appendingPathComponent("door.json"))
        guard let run = try Self.run(["--check-config", "--config", "config.json"], in: directory) else { return }
        #expect(run.status == 64)
        #expect(run.standardError
            == "spin-server: error: config.json: spins[0].machine: machines/door.json: states.closed.on.LOCK: unknown state \"lockd\"\n")
    }

    @Test func noConfigFileInTheWorkingDirectory_IsOneErrorLineSayingWhatToDo_Exit64() throws {
        let directory = try Self.directory(with: "{}")
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let run = try Self.run(["--check-config"], in: directory) else { return }
        #expect(run.status == 64)
        #expect(run.standardError == "spin-server: error: Config/spin-server.json: (file): cannot read the config file "
            + "(the default; run from the repository root, or pass --config or SPIN_CONFIG): No such file or directory\n")
    }

    @Test func badFlagValue_IsOneErrorLineNamingTheFlag_Exit64() throws {
        let directory = try Self.directory(with: "{}")
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let run = try Self.run(["--check-config", "--config", "config.json", "--port", "99999"], in: directory) else { return }
        #expect(run.status == 64)
        #expect(run.standardError == "spin-server: error: --port: listen.port: 99999 is out of range (0 to 65535; 0 picks a free port)\n")
    }

    @Test func checkConfig_FromTheRepositoryRoot_UsesTheShippedConfig() throws {
        let storage = FileManager.default.temporaryDirectory.appendingPathComponent("spin-exec-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: storage) }
        guard let run = try Self.run(["--check-config", "--storage", storage.path], in: Self.packageRoot) else { return }
        #expect(run.status == 0, "stderr: \(run.standardError)")
        #expect(run.standardOutput.hasPrefix(
            "spin-server: configuration OK (Config/spin-server.json): 5 spins (counter, levels, feature@auth, router@auth, session), "
            + "3 kinds (door (door-*), feature (feature-*), router (router-*)), 1 gear (auth), http://127.0.0.1:8080"))
    }

    @Test func nonLoopbackHostWithoutTokens_IsWarnedAboutLoudly() throws {
        let directory = try Self.directory(with: #"{"spins": [{"name": "c", "kind": "counter"}]}"#)
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let run = try Self.run(["--check-config", "--config", "config.json", "--host", "0.0.0.0"], in: directory) else { return }
        #expect(run.status == 0)
        #expect(run.standardError.contains("warning: listening on 0.0.0.0, which is not a loopback address, with NO auth tokens"))
        #expect(run.standardError.contains("warning: without tokens only requests whose Host is localhost or a loopback address are served (others get 421)"))
    }

    @Test func help_NamesSpinAllowedHosts() throws {
        guard let run = try Self.run(["--help"]) else { return }
        #expect(run.standardOutput.contains("SPIN_ALLOWED_HOSTS"))
    }

    @Test func help_ListsEveryFlag() throws {
        guard let run = try Self.run(["--help"]) else { return }
        #expect(run.status == 0)
        for flag in ["--config", "--host", "--port", "--storage", "--log-level", "--log-format", "--tls-certificate",
                     "--tls-key", "--echo-endpoint", "--check-config", "--help"] {
            #expect(run.standardOutput.contains(flag), "--help does not mention \(flag)")
        }
        for variable in ["SPIN_CONFIG", "SPIN_HOST", "SPIN_PORT", "SPIN_STORAGE", "SPIN_LOG_LEVEL", "SPIN_TLS_CERTIFICATE",
                         "SPIN_TLS_KEY", "SPIN_TOKENS", "SPIN_ECHO_ENDPOINT"] {
            #expect(run.standardOutput.contains(variable), "--help does not mention \(variable)")
        }
    }

    @Test func unknownFlag_IsAUsageError_Exit64() throws {
        guard let run = try Self.run(["--prot", "80"]) else { return }
        #expect(run.status == 64)
        #expect(run.standardError.contains("--prot"))
    }
}
