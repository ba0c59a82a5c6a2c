import Foundation
import Logging

/// Loading a `SpinServerConfiguration` from the config file, `SPIN_*` variables and flags.
///
/// Precedence, highest first: command-line flags > environment variables > config file >
/// the built-in defaults of `SpinServerConfiguration.init`. Every given value is
/// checked where it comes from, so an error names the file (or variable or flag), the
/// key path and the problem in one line (`Config/x.json: spins[2].kind: unknown kind
/// "countr" (known: counter, feature, levels, router)`).
///
/// Config file (JSON; `--config` / `SPIN_CONFIG`, default `Config/spin-server.json`;
/// every key optional, an absent key or `null` keeps the default; unknown keys are
/// errors so that a typo never passes silently):
///
/// | key | type | default | flag / variable |
/// |---|---|---|---|
/// | `listen.host` | string | `"127.0.0.1"` | `--host` / `SPIN_HOST` |
/// | `listen.port` | int 0...65535 (0: any free port) | `8080` | `--port` / `SPIN_PORT` |
/// | `listen.allowedHosts` | [string] (host names or addresses, or `*`) | `[]` | `SPIN_ALLOWED_HOSTS="a.example,b.example"` |
/// | `tls.certificate` | string (PEM path) | none | `--tls-certificate` / `SPIN_TLS_CERTIFICATE` |
/// | `tls.key` | string (PEM path) | none | `--tls-key` / `SPIN_TLS_KEY` |
/// | `limits.maxBodyBytes` | int > 0 | `1048576` | |
/// | `limits.maxHeaderBytes` | int > 0 | `16384` | |
/// | `limits.maxConnections` | int > 0 | `1024` | |
/// | `limits.inbox` | int > 0 | `1024` | |
/// | `limits.feedbackBudget` | int > 0 | `100000` | |
/// | `limits.maxWebSocketMessageBytes` | int > 0 | `1048576` | |
/// | `limits.streamQueue` | int > 0 | `64` | |
/// | `limits.idleTimeoutSeconds` | int > 0 | `120` | |
/// | `limits.headerTimeoutSeconds` | int > 0 | `10` | |
/// | `limits.pingIntervalSeconds` | int > 0 | `30` | |
/// | `limits.shutdownGraceSeconds` | int > 0 | `5` | |
/// | `auth.tokens` | `[{"token": string, "scopes": [read\|write\|admin]}]` | `[]` (no auth) | `SPIN_TOKENS="tok:read+write,other:admin"` |
/// | `auth.allowedOrigins` | [string] (`https://host[:port]`) | `[]` | |
/// | `storage.directory` | string (created if missing) | `"data"` | `--storage` / `SPIN_STORAGE` |
/// | `storage.fsync` | `always` \| `batch` \| `none` | `"batch"` | |
/// | `storage.retainEvents` | int >= 0 | `10000` | |
/// | `storage.onCorruption` | `refuse` \| `truncate` | `"refuse"` | `--repair` (truncate) |
/// | `log.level` | trace\|debug\|info\|notice\|warning\|error\|critical | `"info"` | `--log-level` / `SPIN_LOG_LEVEL` |
/// | `log.format` | `text` \| `json` | `"text"` | `--log-format` / `SPIN_LOG_FORMAT` |
/// | `spins` | `[{"name": string, "kind": string, "gear"?: string}]` | `[]` | |
/// | `gears` | `[{"name": string}]` | `[]` | |
/// | `testing.echoEndpoint` | bool | `false` | `--echo-endpoint` / `SPIN_ECHO_ENDPOINT` (`true`\|`false`\|`1`\|`0`) |
///
/// Relative paths are relative to the working directory. The "Configuration" section of README.md explains
/// each key. The `limits` keys are the fields of `Limits`, one for one: a new field
/// needs a row in `limitKeys` (a test checks they match).
extension SpinServerConfiguration {
    /// The default config file, relative to the working directory (the repository root
    /// for `swift run spin-server`).
    package static let defaultConfigFile = "Config/spin-server.json"

    /// The values given on the command line, as text (nil: not given). `spin-server`
    /// fills it with swift-argument-parser; loading checks them, so that a bad flag value
    /// is reported like any other configuration error, naming the flag.
    package struct Flags: Sendable, Equatable {
        package var config: String?
        package var host: String?
        package var port: String?
        package var storage: String?
        package var logLevel: String?
        package var logFormat: String?
        package var tlsCertificate: String?
        package var tlsKey: String?
        /// `--repair`: `storage.onCorruption` is `truncate` for this start.
        package var repair: Bool
        /// `--echo-endpoint`: a flag only turns it on (false: not given).
        package var echoEndpoint: Bool

        package init(config: String? = nil, host: String? = nil, port: String? = nil, storage: String? = nil,
                     logLevel: String? = nil, logFormat: String? = nil, tlsCertificate: String? = nil,
                     tlsKey: String? = nil, repair: Bool = false, echoEndpoint: Bool = false) {
            self.repair = repair
            self.config = config
            self.host = host
            self.port = port
            self.storage = storage
            self.logLevel = logLevel
            self.logFormat = logFormat
            self.tlsCertificate = tlsCertificate
            self.tlsKey = tlsKey
            self.echoEndpoint = echoEndpoint
        }
    }

    /// What loading must know of the Spin kinds the executable can make (its catalog lives
    /// in `spin-server`, which depends on the examples; this module does not).
    package struct SpinKinds: Sendable, Equatable {
        /// Whether a kind's Spins attach to a Gear.
        package enum GearUse: Sendable, Equatable {
            /// The kind takes no `gear`.
            case none
            /// The kind needs a `gear`, listed in `gears`.
            case required
        }

        package var kinds: [String: GearUse]

        package init(_ kinds: [String: GearUse]) {
            self.kinds = kinds
        }

        var knownList: String { kinds.keys.sorted().joined(separator: ", ") }
    }

    /// A loaded configuration, where it came from, and what is suspicious but not wrong.
    package struct Loaded: Sendable, Equatable {
        package var configuration: SpinServerConfiguration
        /// The config file that was read.
        package var configFile: String
        /// Worth a warning at start-up (an unknown `SPIN_*` variable, no Spins).
        package var warnings: [String]
    }

    /// The `SPIN_*` variables this loader reads.
    package static let environmentVariables = [
        "SPIN_CONFIG", "SPIN_HOST", "SPIN_PORT", "SPIN_STORAGE", "SPIN_LOG_LEVEL", "SPIN_LOG_FORMAT",
        "SPIN_TLS_CERTIFICATE", "SPIN_TLS_KEY", "SPIN_TOKENS", "SPIN_ALLOWED_HOSTS", "SPIN_ECHO_ENDPOINT",
    ]

    /// The `limits` keys: one per field of `Limits` (computed: key paths are not `Sendable`).
    static var limitKeys: [(name: String, path: WritableKeyPath<Limits, Int>)] { [
        ("maxBodyBytes", \.maxBodyBytes),
        ("maxHeaderBytes", \.maxHeaderBytes),
        ("maxConnections", \.maxConnections),
        ("inbox", \.inbox),
        ("feedbackBudget", \.feedbackBudget),
        ("maxWebSocketMessageBytes", \.maxWebSocketMessageBytes),
        ("streamQueue", \.streamQueue),
        ("idleTimeoutSeconds", \.idleTimeoutSeconds),
        ("headerTimeoutSeconds", \.headerTimeoutSeconds),
        ("pingIntervalSeconds", \.pingIntervalSeconds),
        ("shutdownGraceSeconds", \.shutdownGraceSeconds),
    ] }

    /// Loads and checks the configuration.
    ///
    /// - Parameters:
    ///   - flags: what the command line gave.
    ///   - environment: the process environment (`ProcessInfo.processInfo.environment`).
    ///   - kinds: the Spin kinds the executable's catalog can make.
    ///   - readFile: reads the config file and checks the TLS files; tests pass their own.
    ///   - createDirectory: makes the storage directory (and its parents) if missing and
    ///     checks it is writable.
    /// - Throws: the first problem found, naming its source, key and what is wrong.
    package static func load(
        flags: Flags,
        environment: [String: String],
        kinds: SpinKinds,
        readFile: (String) throws -> Data = readFileContents,
        createDirectory: (String) throws -> Void = createWritableDirectory
    ) throws(ConfigurationError) -> Loaded {
        var warnings: [String] = []
        let configFile = flags.config ?? environment["SPIN_CONFIG"] ?? defaultConfigFile
        let configHint = flags.config != nil ? "named by --config"
            : environment["SPIN_CONFIG"] != nil ? "named by SPIN_CONFIG"
            : "(the default; run from the repository root, or pass --config or SPIN_CONFIG)"

        let data: Data
        do {
            data = try readFile(configFile)
        } catch {
            throw ConfigurationError(source: configFile, key: "(file)",
                                     problem: "cannot read the config file \(configHint): \(error)")
        }

        var builder = Builder()
        try builder.apply(file: configFile, data: data, kinds: kinds)
        try builder.apply(environment: environment)
        try builder.apply(flags: flags)
        try builder.checkTLS(readFile: readFile)
        try builder.makeStorage(createDirectory: createDirectory)

        let unknown = environment.keys.filter { $0.hasPrefix("SPIN_") && !environmentVariables.contains($0) }.sorted()
        for name in unknown {
            warnings.append("\(name) is set but spin-server does not read it (it reads \(environmentVariables.joined(separator: ", ")))")
        }
        if builder.configuration.spins.isEmpty {
            warnings.append("\(configFile): spins: no Spins are configured, so the server hosts nothing")
        }
        return Loaded(configuration: builder.configuration, configFile: configFile, warnings: warnings)
    }

    // MARK: - Reading the real file system

    /// Reads a whole file; the error says why in the words of `strerror`.
    package static func readFileContents(_ path: String) throws -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileProblem(errno: errno) }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileProblem(errno: errno)
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    /// Creates `path` and its parents if missing, then checks that it is a writable
    /// directory.
    package static func createWritableDirectory(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw FileProblem(message: "it exists and is not a directory") }
        } else {
            var prefix = path.hasPrefix("/") ? "/" : ""
            for component in path.split(separator: "/") {
                prefix += component
                if mkdir(prefix, 0o755) != 0 && errno != EEXIST { throw FileProblem(errno: errno) }
                prefix += "/"
            }
        }
        guard access(path, W_OK | X_OK) == 0 else { throw FileProblem(errno: errno) }
    }

    /// Why a file or directory could not be used.
    package struct FileProblem: Error, CustomStringConvertible {
        package let description: String

        init(errno code: Int32) { description = String(cString: strerror(code)) }
        init(message: String) { description = message }
    }

    // MARK: - Derived values

    /// True for addresses only this machine reaches: `127.0.0.0/8`, `::1`, `localhost`.
    package var isLoopbackHost: Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// `http://HOST:PORT` (or `https`), IPv6 addresses bracketed.
    package func url(port: Int) -> String {
        let scheme = tls == nil ? "http" : "https"
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(hostPart):\(port)"
    }

    /// What would be hosted, in one line: `4 spins (counter, levels, feature@auth,
    /// router@auth), 1 gear (auth), http://127.0.0.1:8080, storage data (fsync batch),
    /// no tokens`.
    package var summary: String {
        let spinList = spins.map { spin in spin.gear.map { "\(spin.name)@\($0)" } ?? spin.name }
        let gearList = gears.map(\.name)
        let tokenText = tokens.isEmpty ? "no tokens (no authentication)" : "\(tokens.count) token\(tokens.count == 1 ? "" : "s")"
        return "\(spins.count) spin\(spins.count == 1 ? "" : "s") (\(spinList.joined(separator: ", "))), "
            + "\(gears.count) gear\(gears.count == 1 ? "" : "s") (\(gearList.joined(separator: ", "))), "
            + "\(url(port: port)), storage \(storage.directory) (fsync \(storage.fsync.rawValue)), \(tokenText)"
            + (testing.echoEndpoint ? ", WebSocket echo on /v1/echo (testing.echoEndpoint)" : "")
    }
}

// MARK: - Building

extension SpinServerConfiguration {
    /// Applies the sources one after the other, remembering which source set each
    /// overridable value (for the errors of the checks that span several keys).
    fileprivate struct Builder {
        /// The executable journals its Spins (`storage.persists`).
        var configuration = SpinServerConfiguration(storage: Storage(persists: true))
        var certificate: (value: String, source: String)?
        var key: (value: String, source: String)?
        var storageSource = "the built-in default"

        // MARK: File

        mutating func apply(file: String, data: Data, kinds: SpinKinds) throws(ConfigurationError) {
            let root: JSONValue
            do {
                root = try JSONDecoder().decode(JSONValue.self, from: data)
            } catch {
                throw ConfigurationError(source: file, key: "(file)", problem: "not valid JSON: \(Self.describeSyntaxError(in: data, error))")
            }
            let reader = FileReader(source: file)
            let top = try reader.object(root, at: "", known: ["listen", "tls", "limits", "auth", "storage", "log", "spins", "gears",
                                                                          "testing"])

            if let listen = try reader.optionalObject(top["listen"], at: "listen", known: ["host", "port", "allowedHosts"]) {
                if let value = listen["host"], value != .null {
                    configuration.host = try Self.host(try reader.string(value, at: "listen.host"), source: file, key: "listen.host")
                }
                if let value = listen["port"], value != .null {
                    configuration.port = try Self.port(try reader.int(value, at: "listen.port"), source: file, key: "listen.port")
                }
                if let names = try reader.optionalArray(listen["allowedHosts"], at: "listen.allowedHosts") {
                    configuration.allowedHosts = try names.enumerated().map { index, value throws(ConfigurationError) in
                        let path = "listen.allowedHosts[\(index)]"
                        return try Self.allowedHost(try reader.string(value, at: path), source: file, key: path)
                    }
                }
            }
            if let tls = try reader.optionalObject(top["tls"], at: "tls", known: ["certificate", "key"]) {
                if let value = tls["certificate"], value != .null {
                    certificate = (try Self.path(try reader.string(value, at: "tls.certificate"), source: file, key: "tls.certificate"), file)
                }
                if let value = tls["key"], value != .null {
                    key = (try Self.path(try reader.string(value, at: "tls.key"), source: file, key: "tls.key"), file)
                }
            }
            let limitNames = SpinServerConfiguration.limitKeys.map(\.name)
            if let limits = try reader.optionalObject(top["limits"], at: "limits", known: limitNames) {
                for (name, path) in SpinServerConfiguration.limitKeys {
                    guard let value = limits[name], value != .null else { continue }
                    let number = try reader.int(value, at: "limits.\(name)")
                    guard number > 0 else {
                        throw reader.error("limits.\(name)", "must be a positive integer, got \(number)")
                    }
                    configuration.limits[keyPath: path] = number
                }
            }
            if let auth = try reader.optionalObject(top["auth"], at: "auth", known: ["tokens", "allowedOrigins"]) {
                if let tokens = try reader.optionalArray(auth["tokens"], at: "auth.tokens") {
                    configuration.tokens = try Self.tokens(tokens, reader: reader)
                }
                if let origins = try reader.optionalArray(auth["allowedOrigins"], at: "auth.allowedOrigins") {
                    configuration.allowedOrigins = try origins.enumerated().map { index, value throws(ConfigurationError) in
                        let path = "auth.allowedOrigins[\(index)]"
                        return try Self.origin(try reader.string(value, at: path), reader: reader, at: path)
                    }
                }
            }
            if let storage = try reader.optionalObject(top["storage"], at: "storage", known: ["directory", "fsync", "retainEvents", "onCorruption"]) {
                if let value = storage["directory"], value != .null {
                    configuration.storage.directory = try Self.path(try reader.string(value, at: "storage.directory"),
                                                                    source: file, key: "storage.directory")
                    storageSource = file
                }
                if let value = storage["fsync"], value != .null {
                    let text = try reader.string(value, at: "storage.fsync")
                    guard let fsync = Storage.Fsync(rawValue: text) else {
                        throw reader.error("storage.fsync", "unknown policy \"\(text)\" (use always, batch or none)")
                    }
                    configuration.storage.fsync = fsync
                }
                if let value = storage["retainEvents"], value != .null {
                    let count = try reader.int(value, at: "storage.retainEvents")
                    guard count >= 0, count <= 10_000_000 else {
                        throw reader.error("storage.retainEvents", "must be 0 to 10000000, got \(count)")
                    }
                    configuration.storage.retainEvents = count
                }
                if let value = storage["onCorruption"], value != .null {
                    let text = try reader.string(value, at: "storage.onCorruption")
                    guard let choice = Storage.OnCorruption(rawValue: text) else {
                        throw reader.error("storage.onCorruption", "unknown choice \"\(text)\" (use refuse or truncate)")
                    }
                    configuration.storage.onCorruption = choice
                }
            }
            if let log = try reader.optionalObject(top["log"], at: "log", known: ["level", "format"]) {
                if let value = log["level"], value != .null {
                    configuration.log.level = try Self.logLevel(try reader.string(value, at: "log.level"), source: file, key: "log.level")
                }
                if let value = log["format"], value != .null {
                    configuration.log.format = try Self.logFormat(try reader.string(value, at: "log.format"), source: file, key: "log.format")
                }
            }
            if let testing = try reader.optionalObject(top["testing"], at: "testing", known: ["echoEndpoint"]),
               let value = testing["echoEndpoint"], value != .null {
                configuration.testing.echoEndpoint = try reader.bool(value, at: "testing.echoEndpoint")
            }
            if let gears = try reader.optionalArray(top["gears"], at: "gears") {
                configuration.gears = try Self.gears(gears, reader: reader)
            }
            if let spins = try reader.optionalArray(top["spins"], at: "spins") {
                configuration.spins = try Self.spins(spins, gears: configuration.gears, kinds: kinds, reader: reader)
            }
            // A Gear no Spin attaches to is most likely a typo in a Spin's `gear`.
            for (index, gear) in configuration.gears.enumerated()
            where !configuration.spins.contains(where: { $0.gear == gear.name }) {
                throw reader.error("gears[\(index)].name", "no Spin attaches to Gear \"\(gear.name)\" (set \"gear\": \"\(gear.name)\" on a Spin, or remove it)")
            }
        }

        static func tokens(_ values: [JSONValue], reader: FileReader) throws(ConfigurationError) -> [AccessToken] {
            var tokens: [AccessToken] = []
            for (index, value) in values.enumerated() {
                let path = "auth.tokens[\(index)]"
                let entry = try reader.object(value, at: path, known: ["token", "scopes"])
                let token = try reader.string(try reader.required(entry["token"], at: "\(path).token"), at: "\(path).token")
                guard !token.isEmpty, !token.contains(where: \.isWhitespace) else {
                    throw reader.error("\(path).token", "must be non-empty with no spaces")
                }
                // The token itself never goes into a message: it is a secret.
                if let first = tokens.firstIndex(where: { $0.token == token }) {
                    throw reader.error("\(path).token", "the same token as auth.tokens[\(first)]")
                }
                let scopeValues = try reader.array(try reader.required(entry["scopes"], at: "\(path).scopes"), at: "\(path).scopes")
                guard !scopeValues.isEmpty else {
                    throw reader.error("\(path).scopes", "must list at least one scope (read, write or admin)")
                }
                var scopes: [Scope] = []
                for (scopeIndex, scopeValue) in scopeValues.enumerated() {
                    let scopePath = "\(path).scopes[\(scopeIndex)]"
                    let name = try reader.string(scopeValue, at: scopePath)
                    guard let scope = Scope(rawValue: name) else {
                        throw reader.error(scopePath, "unknown scope \"\(name)\" (use read, write or admin)")
                    }
                    scopes.append(scope)
                }
                tokens.append(AccessToken(token: token, scopes: scopes))
            }
            return tokens
        }

        /// A host name, IPv4 address or IPv6 address (bracketed or not) as `Host` names it,
        /// without scheme or port; or `*` (any).
        static func allowedHost(_ text: String, source: String, key: String) throws(ConfigurationError) -> String {
            let name = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
            let isName = name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            }
            let isIPv6 = name.contains(":") && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
                    || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".")
            }
            guard text == "*" || (!name.isEmpty && name.utf8.count <= 253 && (isName || isIPv6)) else {
                throw ConfigurationError(source: source, key: key,
                                         problem: "\"\(text)\" is not a host name: write a name or address without scheme or port, e.g. spin.example.com, 192.0.2.7 or *")
            }
            return text
        }

        /// An origin as browsers send it (RFC 6454 §6.1): scheme, host, optional port;
        /// no path, no trailing slash.
        static func origin(_ text: String, reader: FileReader, at path: String) throws(ConfigurationError) -> String {
            let lower = text.lowercased()
            let rest = lower.hasPrefix("https://") ? lower.dropFirst(8) : lower.hasPrefix("http://") ? lower.dropFirst(7) : nil
            guard let rest, !rest.isEmpty, !rest.contains(where: { "/?#@ ".contains($0) }) else {
                throw reader.error(path, "\"\(text)\" is not an origin: write scheme://host[:port], e.g. https://dash.example")
            }
            return text
        }

        static func gears(_ values: [JSONValue], reader: FileReader) throws(ConfigurationError) -> [GearEntry] {
            var gears: [GearEntry] = []
            for (index, value) in values.enumerated() {
                let path = "gears[\(index)]"
                let entry = try reader.object(value, at: path, known: ["name"])
                let name = try reader.string(try reader.required(entry["name"], at: "\(path).name"), at: "\(path).name")
                try Self.name(name, reader: reader, at: "\(path).name")
                if let first = gears.firstIndex(where: { $0.name == name }) {
                    throw reader.error("\(path).name", "Gear \"\(name)\" is already listed at gears[\(first)]")
                }
                gears.append(GearEntry(name: name))
            }
            return gears
        }

        static func spins(_ values: [JSONValue], gears: [GearEntry], kinds: SpinKinds,
                          reader: FileReader) throws(ConfigurationError) -> [SpinEntry] {
            var spins: [SpinEntry] = []
            for (index, value) in values.enumerated() {
                let path = "spins[\(index)]"
                let entry = try reader.object(value, at: path, known: ["name", "kind", "gear"])
                let name = try reader.string(try reader.required(entry["name"], at: "\(path).name"), at: "\(path).name")
                try Self.name(name, reader: reader, at: "\(path).name")
                if let first = spins.firstIndex(where: { $0.name == name }) {
                    throw reader.error("\(path).name", "Spin \"\(name)\" is already listed at spins[\(first)]")
                }
                let kind = try reader.string(try reader.required(entry["kind"], at: "\(path).kind"), at: "\(path).kind")
                guard let gearUse = kinds.kinds[kind] else {
                    throw reader.error("\(path).kind", "unknown kind \"\(kind)\" (known: \(kinds.knownList))")
                }
                var gear: String?
                if let value = entry["gear"], value != .null {
                    gear = try reader.string(value, at: "\(path).gear")
                }
                switch (gearUse, gear) {
                case (.none, .some):
                    throw reader.error("\(path).gear", "kind \"\(kind)\" does not attach to a Gear: remove \"gear\"")
                case (.required, .none):
                    throw reader.error("\(path).gear", "missing: kind \"\(kind)\" attaches to a Gear; name one listed in gears")
                case (.required, .some(let gearName)) where !gears.contains(where: { $0.name == gearName }):
                    let listed = gears.isEmpty ? "gears is empty" : "listed: \(gears.map(\.name).joined(separator: ", "))"
                    throw reader.error("\(path).gear", "Gear \"\(gearName)\" is not listed in gears (\(listed))")
                default:
                    break
                }
                spins.append(SpinEntry(name: name, kind: kind, gear: gear))
            }
            return spins
        }

        /// Names appear in URL paths (`/v1/spins/{name}`): 1 to 64 of `[A-Za-z0-9._-]`.
        static func name(_ name: String, reader: FileReader, at path: String) throws(ConfigurationError) {
            let allowed = name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            }
            guard !name.isEmpty, name.utf8.count <= 64, allowed else {
                throw reader.error(path, "\"\(name)\" is not a valid name: use 1 to 64 letters, digits, '.', '_' or '-'")
            }
        }

        // MARK: Environment and flags

        mutating func apply(environment: [String: String]) throws(ConfigurationError) {
            try apply(host: environment["SPIN_HOST"], port: environment["SPIN_PORT"],
                      storage: environment["SPIN_STORAGE"], logLevel: environment["SPIN_LOG_LEVEL"],
                      logFormat: environment["SPIN_LOG_FORMAT"], certificate: environment["SPIN_TLS_CERTIFICATE"],
                      key: environment["SPIN_TLS_KEY"],
                      sources: ("SPIN_HOST", "SPIN_PORT", "SPIN_STORAGE", "SPIN_LOG_LEVEL", "SPIN_LOG_FORMAT",
                                "SPIN_TLS_CERTIFICATE", "SPIN_TLS_KEY"))
            if let names = environment["SPIN_ALLOWED_HOSTS"] {
                let entries = names.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                configuration.allowedHosts = try entries.map { name throws(ConfigurationError) in
                    try Self.allowedHost(name, source: "SPIN_ALLOWED_HOSTS", key: "listen.allowedHosts")
                }
            }
            if let tokens = environment["SPIN_TOKENS"] {
                do {
                    configuration.tokens = try AccessControl.parseEnvironment(tokens)
                } catch {
                    throw ConfigurationError(source: error.source, key: "auth.tokens", problem: error.problem)
                }
            }
            if let text = environment["SPIN_ECHO_ENDPOINT"] {
                switch text.trimmingCharacters(in: .whitespaces).lowercased() {
                case "true", "1": configuration.testing.echoEndpoint = true
                case "false", "0", "": configuration.testing.echoEndpoint = false
                default:
                    throw ConfigurationError(source: "SPIN_ECHO_ENDPOINT", key: "testing.echoEndpoint",
                                             problem: "\"\(text)\" is not a boolean (true, false, 1 or 0)")
                }
            }
        }

        mutating func apply(flags: Flags) throws(ConfigurationError) {
            if flags.repair { configuration.storage.onCorruption = .truncate }
            try apply(host: flags.host, port: flags.port, storage: flags.storage, logLevel: flags.logLevel,
                      logFormat: flags.logFormat, certificate: flags.tlsCertificate, key: flags.tlsKey,
                      sources: ("--host", "--port", "--storage", "--log-level", "--log-format",
                                "--tls-certificate", "--tls-key"))
            if flags.echoEndpoint { configuration.testing.echoEndpoint = true }
        }

        private mutating func apply(
            host: String?, port: String?, storage: String?, logLevel: String?, logFormat: String?,
            certificate: String?, key: String?,
            sources: (host: String, port: String, storage: String, logLevel: String, logFormat: String,
                      certificate: String, key: String)
        ) throws(ConfigurationError) {
            if let host {
                configuration.host = try Self.host(host, source: sources.host, key: "listen.host")
            }
            if let port {
                guard let number = Int(port.trimmingCharacters(in: .whitespaces)) else {
                    throw ConfigurationError(source: sources.port, key: "listen.port",
                                             problem: "\"\(port)\" is not a port number (0 to 65535)")
                }
                configuration.port = try Self.port(number, source: sources.port, key: "listen.port")
            }
            if let storage {
                configuration.storage.directory = try Self.path(storage, source: sources.storage, key: "storage.directory")
                storageSource = sources.storage
            }
            if let logLevel {
                configuration.log.level = try Self.logLevel(logLevel, source: sources.logLevel, key: "log.level")
            }
            if let logFormat {
                configuration.log.format = try Self.logFormat(logFormat, source: sources.logFormat, key: "log.format")
            }
            if let certificate {
                self.certificate = (try Self.path(certificate, source: sources.certificate, key: "tls.certificate"),
                                    sources.certificate)
            }
            if let key {
                self.key = (try Self.path(key, source: sources.key, key: "tls.key"), sources.key)
            }
        }

        // MARK: Checks across sources

        /// TLS: both files or neither; each readable and PEM.
        mutating func checkTLS(readFile: (String) throws -> Data) throws(ConfigurationError) {
            switch (certificate, key) {
            case (nil, nil):
                configuration.tls = nil
            case (let certificate?, nil):
                throw ConfigurationError(source: certificate.source, key: "tls.key",
                                         problem: "a TLS certificate is set but no key: set both (tls.key, --tls-key or SPIN_TLS_KEY) or neither")
            case (nil, let key?):
                throw ConfigurationError(source: key.source, key: "tls.certificate",
                                         problem: "a TLS key is set but no certificate: set both (tls.certificate, --tls-certificate or SPIN_TLS_CERTIFICATE) or neither")
            case (let certificate?, let key?):
                for (file, keyPath) in [(certificate, "tls.certificate"), (key, "tls.key")] {
                    let contents: Data
                    do {
                        contents = try readFile(file.value)
                    } catch {
                        throw ConfigurationError(source: file.source, key: keyPath, problem: "cannot read \"\(file.value)\": \(error)")
                    }
                    guard contents.range(of: Data("-----BEGIN ".utf8)) != nil else {
                        throw ConfigurationError(source: file.source, key: keyPath,
                                                 problem: "\"\(file.value)\" is not a PEM file (no -----BEGIN line)")
                    }
                }
                configuration.tls = TLSFiles(certificate: certificate.value, key: key.value)
            }
        }

        func makeStorage(createDirectory: (String) throws -> Void) throws(ConfigurationError) {
            let directory = configuration.storage.directory
            do {
                try createDirectory(directory)
            } catch {
                throw ConfigurationError(source: storageSource, key: "storage.directory",
                                         problem: "cannot use \"\(directory)\" as the storage directory: \(error)")
            }
        }

        // MARK: Single values

        static func host(_ text: String, source: String, key: String) throws(ConfigurationError) -> String {
            guard !text.isEmpty, !text.contains(where: \.isWhitespace) else {
                throw ConfigurationError(source: source, key: key, problem: "must be a non-empty address or host name with no spaces")
            }
            return text
        }

        static func port(_ number: Int, source: String, key: String) throws(ConfigurationError) -> Int {
            guard (0...65535).contains(number) else {
                throw ConfigurationError(source: source, key: key, problem: "\(number) is out of range (0 to 65535; 0 picks a free port)")
            }
            return number
        }

        static func path(_ text: String, source: String, key: String) throws(ConfigurationError) -> String {
            guard !text.isEmpty else {
                throw ConfigurationError(source: source, key: key, problem: "must be a non-empty path")
            }
            return text
        }

        static func logLevel(_ text: String, source: String, key: String) throws(ConfigurationError) -> String {
            guard Logger.Level(rawValue: text) != nil else {
                let known = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError(source: source, key: key, problem: "unknown level \"\(text)\" (use \(known))")
            }
            return text
        }

        static func logFormat(_ text: String, source: String, key: String) throws(ConfigurationError) -> Log.Format {
            guard let format = Log.Format(rawValue: text) else {
                throw ConfigurationError(source: source, key: key, problem: "unknown format \"\(text)\" (use text or json)")
            }
            return format
        }

        /// A JSON syntax error in one line, with the line and column where the parser
        /// stopped (JSONDecoder does not say; JSONSerialization gives a character offset).
        static func describeSyntaxError(in data: Data, _ error: any Error) -> String {
            do {
                _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            } catch {
                let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
                guard let range = detail.range(of: #"character \d+"#, options: .regularExpression),
                      let offset = Int(detail[range].dropFirst("character ".count)) else { return detail }
                let before = data.prefix(offset)
                let line = before.count(where: { $0 == UInt8(ascii: "\n") }) + 1
                let column = offset - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
                return detail.replacingCharacters(in: range, with: "line \(line), column \(column)")
                    .replacingOccurrences(of: "\n", with: " ")
            }
            return "\(error)".replacingOccurrences(of: "\n", with: " ")
        }
    }
}

// MARK: - JSON with key paths

/// A parsed JSON value, so that unknown keys and wrong types are found with the exact
/// path rather than by a `Decodable` that ignores extra keys.
private enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// What a message calls the value's type.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Reads values out of the config file, naming `source` and the key path in errors.
private struct FileReader {
    let source: String

    func error(_ key: String, _ problem: String) -> ConfigurationError {
        ConfigurationError(source: source, key: key.isEmpty ? "(root)" : key, problem: problem)
    }

    /// An object whose keys are all in `known`.
    func object(_ value: JSONValue, at path: String, known: [String]) throws(ConfigurationError) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            throw error(path, "must be an object, got \(value.typeName)")
        }
        if let unknown = members.keys.filter({ !known.contains($0) }).sorted().first {
            let child = path.isEmpty ? unknown : "\(path).\(unknown)"
            throw error(child, "unknown key (known here: \(known.joined(separator: ", ")))")
        }
        return members
    }

    func optionalObject(_ value: JSONValue?, at path: String, known: [String]) throws(ConfigurationError) -> [String: JSONValue]? {
        guard let value, value != .null else { return nil }
        return try object(value, at: path, known: known)
    }

    func array(_ value: JSONValue, at path: String) throws(ConfigurationError) -> [JSONValue] {
        guard case .array(let items) = value else { throw error(path, "must be an array, got \(value.typeName)") }
        return items
    }

    func optionalArray(_ value: JSONValue?, at path: String) throws(ConfigurationError) -> [JSONValue]? {
        guard let value, value != .null else { return nil }
        return try array(value, at: path)
    }

    func required(_ value: JSONValue?, at path: String) throws(ConfigurationError) -> JSONValue {
        guard let value, value != .null else { throw error(path, "missing (required)") }
        return value
    }

    func string(_ value: JSONValue, at path: String) throws(ConfigurationError) -> String {
        guard case .string(let text) = value else { throw error(path, "must be a string, got \(value.typeName)") }
        return text
    }

    func bool(_ value: JSONValue, at path: String) throws(ConfigurationError) -> Bool {
        guard case .bool(let flag) = value else { throw error(path, "must be true or false, got \(value.typeName)") }
        return flag
    }

    func int(_ value: JSONValue, at path: String) throws(ConfigurationError) -> Int {
        switch value {
        case .int(let number): return number
        case .double(let number): throw error(path, "must be an integer, got \(number)")
        default: throw error(path, "must be an integer, got \(value.typeName)")
        }
    }
}
