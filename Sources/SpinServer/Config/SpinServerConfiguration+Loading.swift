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
/// | `limits.gearBacklog` | int > 0 | `10000` | |
/// | `limits.maxStateBytes` | int > 0 | `1048576` | |
/// | `limits.maxSpins` | int > 0 | `1000000` | |
/// | `limits.idleSpinSeconds` | int > 0 | `60` | |
/// | `auth.tokens` | `[{"token": string, "scopes"?: [read\|write\|admin], "subject"?: string, "spin"?: {"read"?, "write"?, "admin"?: [pattern]}, "gear"?: {"read"?: [pattern]}}]` (scopes and/or grants) | `[]` (no auth) | `SPIN_TOKENS="tok:read+write,other:admin"` |
/// | `auth.rules` | `[{"subject": pattern, "spin"?: {..}, "gear"?: {..}}]`: grants for the identities whose subject matches | `[]` | |
/// | `auth.jwt.keys` | `[{"alg": HS256\|RS256\|ES256\|EdDSA, "kid"?: string, "secret"\|"secretEnv"\|"publicKeyFile": string}]` | `[]` | `SPIN_JWT_SECRET` (adds an HS256 key) |
/// | `auth.jwt.jwksFile` | string (JWKS path) | none | `SPIN_JWT_JWKS_FILE` |
/// | `auth.jwt.issuer` | string | none (not checked) | |
/// | `auth.jwt.audience` | string or [string] | none (not checked) | |
/// | `auth.jwt.leewaySeconds` | int 0...300 | `30` | |
/// | `auth.allowedOrigins` | [string] (`https://host[:port]`) | `[]` | |
/// | `storage.backend` | `file` \| `postgres` | `"file"` | `--storage-backend` / `SPIN_STORAGE_BACKEND` |
/// | `storage.directory` | string (created if missing; `file` backend) | `"data"` | `--storage` / `SPIN_STORAGE` |
/// | `storage.url` | libpq connection string (`postgres` backend) | none | `--database-url` / `SPIN_DATABASE_URL` |
/// | `storage.fsync` | `always` \| `batch` \| `none` | `"batch"` | |
/// | `storage.retainEvents` | int >= 0 | `10000` | |
/// | `storage.history` | `{"events": K}` (sets `retainEvents`) \| `{"days": D}` \| `"all"` | `{"events": 10000}` | |
/// | `storage.snapshotEvery` | int 10...1000000 | `1000` | |
/// | `storage.onCorruption` | `refuse` \| `truncate` \| `isolate` | `"refuse"` | `--repair` (truncate) |
/// | `log.level` | trace\|debug\|info\|notice\|warning\|error\|critical | `"info"` | `--log-level` / `SPIN_LOG_LEVEL` |
/// | `log.format` | `text` \| `json` | `"text"` | `--log-format` / `SPIN_LOG_FORMAT` |
/// | `spins` | `[{"name": string, "kind": string, "gear"?: string}]` or `{"name": string, "machine": string}` (a JSON machine file, relative to the config file) | `[]` | |
/// | `kinds` | `[{"name": string, "machine": string \| "kind": string, "names"?: pattern with at most one `*`, "gears"?: {declared: "name-{key}"}, "gear"?: string, "create"?: `explicit`\|`onEvent`}]`: Spins made at run time (`PUT /v1/spins/{name}`) | `[]` | |
/// | `gears` | `[{"name": string}]` | `[]` | |
/// | `testing.echoEndpoint` | bool | `false` | `--echo-endpoint` / `SPIN_ECHO_ENDPOINT` (`true`\|`false`\|`1`\|`0`) |
/// | `cluster.node` | string, 1 to 253 of `[A-Za-z0-9._-]` | the host name | `--node` / `SPIN_NODE` |
/// | `cluster.advertise` | string (`http(s)://host[:port]`) | `http://<listen host>:<port>` (a wildcard host: the node name) | `--advertise` / `SPIN_CLUSTER_ADVERTISE` |
/// | `cluster.leaseSeconds` | int 1...600 | `10` | `--lease-seconds` / `SPIN_CLUSTER_LEASE_SECONDS` |
/// | `cluster.partitions` | int 1...4096, the same on every node | `64` | `SPIN_CLUSTER_PARTITIONS` |
///
/// Relative paths are relative to the working directory, but for the files the config
/// file names for machines and JWT keys (`spins[].machine`, `auth.jwt.keys[].publicKeyFile`,
/// `auth.jwt.jwksFile`): those are relative to its directory. `auth.jwt` is parsed in
/// `+JWT.swift`, its keys read (and checked) by `JWTKeySet`. The "Configuration" section of docs/OPERATIONS.md explains
/// each key. The `limits` keys are the fields of `Limits`, one for one: a new field
/// needs a row in `limitKeys` (a test checks they match).
///
/// `load` runs a `Builder` through the sources, each in its own file:
/// `+ConfigFile.swift` (the JSON file, key by key), `+Environment.swift` (`SPIN_*`
/// variables and flags), `+Validation.swift` (single values, and the checks across
/// sources: TLS files, the storage directory); `+FileSystem.swift` reads the real files.
extension SpinServerConfiguration {
    /// The default config file, relative to the working directory (the repository root
    /// for `swift run spin-server`).
    public static let defaultConfigFile = "Config/spin-server.json"

    /// The values given on the command line, as text (nil: not given). `spin-server`
    /// fills it with swift-argument-parser (an embedder may fill it any way); loading checks them, so that a bad flag value
    /// is reported like any other configuration error, naming the flag.
    public struct Flags: Sendable, Equatable {
        public var config: String?
        public var host: String?
        public var port: String?
        public var storage: String?
        public var logLevel: String?
        public var logFormat: String?
        public var tlsCertificate: String?
        public var tlsKey: String?
        /// `--storage-backend`: `file` or `postgres`.
        public var storageBackend: String?
        /// `--database-url`: the postgres backend's connection string.
        public var databaseURL: String?
        /// `--repair`: `storage.onCorruption` is `truncate` for this start.
        public var repair: Bool
        /// `--echo-endpoint`: a flag only turns it on (false: not given).
        public var echoEndpoint: Bool
        /// `--node`: `cluster.node`.
        public var node: String?
        /// `--advertise`: `cluster.advertise`.
        public var advertise: String?
        /// `--lease-seconds`: `cluster.leaseSeconds`.
        public var leaseSeconds: String?

        /// Every flag not given, unless passed.
        public init(config: String? = nil, host: String? = nil, port: String? = nil, storage: String? = nil,
                     logLevel: String? = nil, logFormat: String? = nil, tlsCertificate: String? = nil,
                     tlsKey: String? = nil, storageBackend: String? = nil, databaseURL: String? = nil,
                     repair: Bool = false, echoEndpoint: Bool = false,
                     node: String? = nil, advertise: String? = nil, leaseSeconds: String? = nil) {
            self.storageBackend = storageBackend
            self.databaseURL = databaseURL
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
            self.node = node
            self.advertise = advertise
            self.leaseSeconds = leaseSeconds
        }
    }

    /// What loading must know of the Spin kinds that can be hosted: their names, and
    /// whether each attaches to a Gear (`SpinKindRegistry.kinds`).
    public struct SpinKinds: Sendable, Equatable {
        /// Whether a kind's Spins attach to a Gear.
        public enum GearUse: Sendable, Equatable {
            /// The kind takes no `gear`.
            case none
            /// The kind needs a `gear`, listed in `gears`.
            case required
        }

        /// Each kind's name and Gear use.
        public var kinds: [String: GearUse]

        /// The kinds by name (`SpinKindRegistry.kinds` makes this from its registrations).
        public init(_ kinds: [String: GearUse]) {
            self.kinds = kinds
        }

        var knownList: String { kinds.keys.sorted().joined(separator: ", ") }
    }

    /// A loaded configuration, where it came from, and what is suspicious but not wrong.
    public struct Loaded: Sendable, Equatable {
        /// A loaded configuration as given (tests and embedders that build one).
        public init(configuration: SpinServerConfiguration, configFile: String, warnings: [String]) {
            self.configuration = configuration
            self.configFile = configFile
            self.warnings = warnings
        }


        /// The configuration, every source applied and checked.
        public var configuration: SpinServerConfiguration
        /// The config file that was read.
        public var configFile: String
        /// Worth a warning at start-up (an unknown `SPIN_*` variable, no Spins, a server
        /// open to the network without tokens or TLS: `exposureWarnings`).
        public var warnings: [String]
    }

    /// The `SPIN_*` variables this loader reads.
    public static let environmentVariables = [
        "SPIN_CONFIG", "SPIN_HOST", "SPIN_PORT", "SPIN_STORAGE", "SPIN_LOG_LEVEL", "SPIN_LOG_FORMAT",
        "SPIN_TLS_CERTIFICATE", "SPIN_TLS_KEY", "SPIN_TOKENS", "SPIN_ALLOWED_HOSTS", "SPIN_ECHO_ENDPOINT",
        "SPIN_STORAGE_BACKEND", "SPIN_DATABASE_URL",
        "SPIN_NODE", "SPIN_CLUSTER_ADVERTISE", "SPIN_CLUSTER_LEASE_SECONDS", "SPIN_CLUSTER_PARTITIONS",
        "SPIN_JWT_SECRET", "SPIN_JWT_JWKS_FILE",
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
        ("gearBacklog", \.gearBacklog),
        ("maxStateBytes", \.maxStateBytes),
        ("maxSpins", \.maxSpins),
        ("idleSpinSeconds", \.idleSpinSeconds),
    ] }

    /// Loads and checks the configuration.
    ///
    /// - Parameters:
    ///   - flags: what the command line gave.
    ///   - environment: the process environment (`ProcessInfo.processInfo.environment`).
    ///   - kinds: the Spin kinds the executable's catalog can make.
    ///   - program: the name warnings give the running program (`SpinServerProgram.runningName`:
    ///     the last path component of its `argv[0]`).
    ///   - defaultConfigFile: the config file read when neither `--config` nor
    ///     `SPIN_CONFIG` names one.
    ///   - readFile: reads the config file and the machine files, and checks the TLS
    ///     files; tests pass their own.
    ///   - createDirectory: makes the storage directory (and its parents) if missing and
    ///     checks it is writable.
    /// - Throws: the first problem found, naming its source, key and what is wrong.
    public static func load(
        flags: Flags,
        environment: [String: String],
        kinds: SpinKinds,
        program: String = SpinServerProgram.runningName,
        defaultConfigFile: String = SpinServerConfiguration.defaultConfigFile,
        readFile: (String) throws -> Data = readFileContents,
        createDirectory: (String) throws -> Void = createWritableDirectory
    ) throws(ConfigurationError) -> Loaded {
        var warnings: [String] = []
        let configFile = flags.config ?? environment["SPIN_CONFIG"] ?? defaultConfigFile
        let configHint = flags.config != nil ? "named by --config"
            : environment["SPIN_CONFIG"] != nil ? "named by SPIN_CONFIG"
            : defaultConfigFile == Self.defaultConfigFile
            ? "(the default; run from the repository root, or pass --config or SPIN_CONFIG)"
            : "(the default; pass --config or SPIN_CONFIG)"

        let data: Data
        do {
            data = try readFile(configFile)
        } catch {
            throw ConfigurationError(source: configFile, key: "(file)",
                                     problem: "cannot read the config file \(configHint)", underlying: error)
        }

        var builder = Builder()
        try builder.apply(file: configFile, data: data, kinds: kinds, readFile: readFile)
        try builder.apply(environment: environment)
        try builder.apply(flags: flags)
        try builder.checkTLS(readFile: readFile)
        try builder.checkJWT(readFile: readFile)
        try builder.makeStorage(createDirectory: createDirectory)

        let unknown = environment.keys.filter { $0.hasPrefix("SPIN_") && !environmentVariables.contains($0) }.sorted()
        for name in unknown {
            warnings.append("\(name) is set but \(program) does not read it (it reads \(environmentVariables.joined(separator: ", ")))")
        }
        if builder.configuration.spins.isEmpty, builder.configuration.kinds.isEmpty {
            warnings.append("\(configFile): spins: no Spins are configured, so the server hosts nothing")
        }
        if builder.configuration.storage.backend == .file, builder.configuration.storage.url != nil {
            warnings.append("\(builder.urlSource): storage.url is set but storage.backend is file, so the database is not used (set storage.backend, SPIN_STORAGE_BACKEND or --storage-backend to postgres)")
        }
        warnings += builder.configuration.exposureWarnings
        return Loaded(configuration: builder.configuration, configFile: configFile, warnings: warnings)
    }
}

// MARK: - Building

extension SpinServerConfiguration {
    /// Applies the sources one after the other, remembering which source set each
    /// overridable value (for the errors of the checks that span several keys).
    struct Builder {
        /// The executable journals its Spins (`storage.persists`).
        var configuration = SpinServerConfiguration(storage: Storage(persists: true))
        var certificate: (value: String, source: String)?
        var key: (value: String, source: String)?
        var storageSource = "the built-in default"
        var backendSource = "the built-in default"
        var urlSource = "the built-in default"
        /// `auth.jwt.keys` entries whose secret is an environment variable (`secretEnv`),
        /// read when the environment is applied.
        var jwtSecretVariables: [(keyIndex: Int, variable: String)] = []

        // The configuration's own types, by the names the Builder's extensions in the other
        // SpinServerConfiguration+*.swift files use (an extension of a nested type does
        // not see its parent's members).
        typealias Flags = SpinServerConfiguration.Flags
        typealias SpinKinds = SpinServerConfiguration.SpinKinds
        typealias SpinEntry = SpinServerConfiguration.SpinEntry
        typealias GearEntry = SpinServerConfiguration.GearEntry
        typealias TLSFiles = SpinServerConfiguration.TLSFiles
        typealias Log = SpinServerConfiguration.Log
        typealias Storage = SpinServerConfiguration.Storage
    }
}
