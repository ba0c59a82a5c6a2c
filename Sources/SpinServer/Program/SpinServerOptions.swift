import ArgumentParser

/// `spin-server`'s command line, for any program that hosts Spins: the flags, the
/// `SPIN_*` variables and the config file they override, and the exit codes. Parsing
/// only: `SpinServerConfiguration.load` checks the values, so that a bad one names its
/// flag like any other configuration error.
///
/// A program takes them as an option group of its own command, and hands them to
/// `SpinServerProgram`:
///
/// ```swift
/// @main struct Greeter: AsyncParsableCommand {
///     static let configuration = CommandConfiguration(discussion: SpinServerOptions.discussion)
///     @OptionGroup var options: SpinServerOptions
///
///     func run() async throws {
///         try await SpinServerProgram(options, kinds: kinds, defaultConfigFile: "greeter.json").run()
///     }
/// }
/// ```
public struct SpinServerOptions: ParsableArguments {
    /// The exit status for a bad configuration or bad flags (64, `EX_USAGE`: what
    /// ArgumentParser exits with for an unknown flag too).
    public static let configurationErrorExitCode = ExitCode.validationFailure
    /// The exit status for a server that could not start (port in use, unreadable
    /// certificate, a corrupt journal, a storage directory another server uses) or could
    /// not make everything durable at shutdown.
    public static let startFailureExitCode = ExitCode.failure
    /// The exit status of `--check-upgrade` when some stored Spin would be unrecoverable
    /// under the configured definitions (65, `EX_DATAERR`).
    public static let upgradeFailureExitCode = ExitCode(65)

    /// What `--help` says of precedence, variables and exit codes, for a command's
    /// `CommandConfiguration(discussion:)`.
    public static let discussion = """
        Precedence: flags > environment variables > config file > built-in defaults. \
        Every config file key is described in spin-server's docs/OPERATIONS.md ("Keys").

        Variables: SPIN_CONFIG, SPIN_HOST, SPIN_PORT, SPIN_STORAGE, SPIN_LOG_LEVEL, \
        SPIN_LOG_FORMAT, SPIN_TLS_CERTIFICATE, SPIN_TLS_KEY, \
        SPIN_TOKENS ("token:read+write,other:admin"), SPIN_ALLOWED_HOSTS ("a.example,b.example"), \
        SPIN_ECHO_ENDPOINT (true or false), SPIN_STORAGE_BACKEND (file or postgres), \
        SPIN_DATABASE_URL, SPIN_NODE, SPIN_CLUSTER_ADVERTISE, SPIN_CLUSTER_LEASE_SECONDS, \
        SPIN_JWT_SECRET (an HS256 key), SPIN_JWT_JWKS_FILE.

        Exit codes: 0 stopped by SIGTERM or SIGINT (or --check-config or --check-upgrade passed); \
        64 bad configuration or flags; 1 could not start (port in use, unreadable certificate, \
        a corrupt journal, a storage directory another server uses) or could not make \
        everything durable at shutdown; 65 --check-upgrade found Spins the upgrade would \
        leave unrecoverable.
        """

    @Option(help: ArgumentHelp("The JSON config file (env SPIN_CONFIG; default Config/spin-server.json, or the program's own).", valueName: "path"))
    public var config: String?

    @Option(help: ArgumentHelp("Address to listen on (env SPIN_HOST; config listen.host; default 127.0.0.1).", valueName: "address"))
    public var host: String?

    @Option(help: ArgumentHelp("TCP port, 0 picks a free one (env SPIN_PORT; config listen.port; default 8080).", valueName: "port"))
    public var port: String?

    @Option(help: ArgumentHelp("Storage directory, created if missing (env SPIN_STORAGE; config storage.directory; default data).", valueName: "directory"))
    public var storage: String?

    @Option(help: ArgumentHelp("Storage backend: file (the storage directory) or postgres (env SPIN_STORAGE_BACKEND; config storage.backend; default file).", valueName: "backend"))
    public var storageBackend: String?

    @Option(help: ArgumentHelp("libpq connection string of the postgres backend, postgresql://user:password@host:5432/db (env SPIN_DATABASE_URL; config storage.url).", valueName: "url"))
    public var databaseURL: String?

    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical (env SPIN_LOG_LEVEL; config log.level; default info).", valueName: "level"))
    public var logLevel: String?

    @Option(help: ArgumentHelp("text or json: one JSON object per line (env SPIN_LOG_FORMAT; config log.format; default text).", valueName: "format"))
    public var logFormat: String?

    @Option(help: ArgumentHelp("PEM certificate chain; with --tls-key the server speaks TLS 1.2+ (env SPIN_TLS_CERTIFICATE; config tls.certificate).", valueName: "path"))
    public var tlsCertificate: String?

    @Option(help: ArgumentHelp("PEM private key for --tls-certificate (env SPIN_TLS_KEY; config tls.key).", valueName: "path"))
    public var tlsKey: String?

    @Flag(help: "Cut a corrupt journal at its first bad record instead of refusing to start, losing the events after it (config storage.onCorruption: truncate).")
    public var repair = false

    @Flag(help: "Mount a WebSocket echo at /v1/echo for conformance tests such as Autobahn (env SPIN_ECHO_ENDPOINT; config testing.echoEndpoint; default off).")
    public var echoEndpoint = false

    @Option(help: ArgumentHelp("This server's node name in a cluster (env SPIN_NODE; config cluster.node; default the host name).", valueName: "name"))
    public var node: String?

    @Option(help: ArgumentHelp("The URL other nodes reach this one at (env SPIN_CLUSTER_ADVERTISE; config cluster.advertise; default http://<host>:<port>).", valueName: "url"))
    public var advertise: String?

    @Option(help: ArgumentHelp("Seconds a Spin's lease and a node's heartbeat last, 1 to 600 (env SPIN_CLUSTER_LEASE_SECONDS; config cluster.leaseSeconds; default 10).", valueName: "seconds"))
    public var leaseSeconds: String?

    @Flag(help: "Check the configuration, print one line saying what would be hosted, and exit (0 if valid, 64 if not).")
    public var checkConfig = false

    @Flag(help: "Replay the stored Spins through the configured machine files and their migrations, changing nothing; report per definition what a restart would do, and exit (0, or 65 if some Spin would be unrecoverable). The storage directory must not be in use by a running server (check a copy).")
    public var checkUpgrade = false

    @Option(help: ArgumentHelp("With --check-upgrade: check at most this many Spins of each kind, chosen at random.", valueName: "count"))
    public var sample: String?

    /// No flag given (ArgumentParser fills the values in when it parses).
    public init() {}

    /// The flags as `SpinServerConfiguration.load` takes them.
    public var flags: SpinServerConfiguration.Flags {
        SpinServerConfiguration.Flags(
            config: config, host: host, port: port, storage: storage, logLevel: logLevel,
            logFormat: logFormat, tlsCertificate: tlsCertificate, tlsKey: tlsKey,
            storageBackend: storageBackend, databaseURL: databaseURL, repair: repair,
            echoEndpoint: echoEndpoint, node: node, advertise: advertise, leaseSeconds: leaseSeconds)
    }
}
