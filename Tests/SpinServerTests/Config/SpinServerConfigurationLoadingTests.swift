import Foundation
import Testing
@testable import SpinServer

/// `SpinServerConfiguration+Loading.swift` and its `+ConfigFile`, `+Environment`,
/// `+Validation` and `+FileSystem` files: precedence, validation errors that name
/// source + key + problem, `SPIN_TOKENS`, the storage directory, the shipped config.
@Suite struct SpinServerConfigurationLoadingTests {
    typealias Configuration = SpinServerConfiguration

    static let kinds = Configuration.SpinKinds([
        "counter": .none, "levels": .none, "feature": .required, "router": .required,
    ])

    static let file = Configuration.defaultConfigFile

    /// Loads with `json` as the config file (at `configPath`), other `files` readable,
    /// and directory creation recorded instead of done.
    static func make(
        _ json: String = "{}", configPath: String = file, flags: Configuration.Flags = .init(),
        environment: [String: String] = [:], files: [String: String] = [:]
    ) throws(ConfigurationError) -> Configuration.Loaded {
        try Configuration.load(
            flags: flags, environment: environment, kinds: kinds,
            readFile: { path in
                if path == configPath { return Data(json.utf8) }
                guard let contents = files[path] else { throw Configuration.FileProblem(message: "No such file or directory") }
                return Data(contents.utf8)
            },
            createDirectory: { _ in })
    }

    /// The error `make` throws, or nil (the test then fails on the nil).
    static func error(
        _ json: String = "{}", flags: Configuration.Flags = .init(), environment: [String: String] = [:],
        files: [String: String] = [:]
    ) -> ConfigurationError? {
        do {
            _ = try make(json, flags: flags, environment: environment, files: files)
            return nil
        } catch {
            return error
        }
    }

    static let exampleSpins = """
        "spins": [
          {"name": "counter", "kind": "counter"},
          {"name": "levels", "kind": "levels"},
          {"name": "feature", "kind": "feature", "gear": "auth"},
          {"name": "router", "kind": "router", "gear": "auth"}
        ],
        "gears": [{"name": "auth"}]
        """

    // MARK: Defaults and precedence

    /// The built-in defaults as the executable has them: it persists its Spins.
    static let executableDefaults = SpinServerConfiguration(storage: .init(persists: true))

    @Test func emptyFile_GivesTheBuiltInDefaults() throws {
        let loaded = try Self.make("{}")
        #expect(loaded.configuration == Self.executableDefaults)
        #expect(loaded.configFile == "Config/spin-server.json")
    }

    @Test func nullValues_KeepTheDefaults() throws {
        let loaded = try Self.make(#"{"listen": {"port": null}, "tls": null, "spins": null}"#)
        #expect(loaded.configuration == Self.executableDefaults)
    }

    @Test func port_FlagBeatsEnvironmentBeatsFileBeatsDefault() throws {
        let json = #"{"listen": {"port": 1001}}"#
        let environment = ["SPIN_PORT": "2002"]
        #expect(try Self.make(json, flags: .init(port: "3003"), environment: environment).configuration.port == 3003)
        #expect(try Self.make(json, environment: environment).configuration.port == 2002)
        #expect(try Self.make(json).configuration.port == 1001)
        #expect(try Self.make("{}").configuration.port == 8080)
    }

    @Test func everyOverridableKey_FollowsThePrecedence() throws {
        let json = """
            {"listen": {"host": "10.0.0.1"}, "storage": {"directory": "file-data"},
             "log": {"level": "debug", "format": "json"}}
            """
        let environment = ["SPIN_HOST": "10.0.0.2", "SPIN_STORAGE": "env-data", "SPIN_LOG_LEVEL": "notice",
                           "SPIN_LOG_FORMAT": "text"]
        let flags = Configuration.Flags(host: "10.0.0.3", storage: "flag-data", logLevel: "error", logFormat: "json")

        let fromFlags = try Self.make(json, flags: flags, environment: environment).configuration
        #expect(fromFlags.host == "10.0.0.3")
        #expect(fromFlags.storage.directory == "flag-data")
        #expect(fromFlags.log == .init(level: "error", format: .json))

        let fromEnvironment = try Self.make(json, environment: environment).configuration
        #expect(fromEnvironment.host == "10.0.0.2")
        #expect(fromEnvironment.storage.directory == "env-data")
        #expect(fromEnvironment.log == .init(level: "notice", format: .text))

        let fromFile = try Self.make(json).configuration
        #expect(fromFile.host == "10.0.0.1")
        #expect(fromFile.storage.directory == "file-data")
        #expect(fromFile.log == .init(level: "debug", format: .json))
    }

    @Test func tlsFiles_FlagsBeatTheFile() throws {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        let files = ["file.crt": pem, "file.key": pem, "flag.crt": pem, "env.key": pem]
        let json = #"{"tls": {"certificate": "file.crt", "key": "file.key"}}"#
        let loaded = try Self.make(json, flags: .init(tlsCertificate: "flag.crt"),
                                   environment: ["SPIN_TLS_KEY": "env.key"], files: files)
        #expect(loaded.configuration.tls == .init(certificate: "flag.crt", key: "env.key"))
        #expect(try Self.make(json, files: files).configuration.tls == .init(certificate: "file.crt", key: "file.key"))
    }

    @Test func configFile_ComesFromTheFlagThenSPIN_CONFIG() throws {
        let fromVariable = try Self.make(#"{"listen": {"port": 1}}"#, configPath: "env.json",
                                         environment: ["SPIN_CONFIG": "env.json"])
        #expect(fromVariable.configFile == "env.json")
        #expect(fromVariable.configuration.port == 1)
        let fromFlag = try Self.make(#"{"listen": {"port": 2}}"#, configPath: "flag.json",
                                     flags: .init(config: "flag.json"), environment: ["SPIN_CONFIG": "env.json"])
        #expect(fromFlag.configFile == "flag.json")
        #expect(fromFlag.configuration.port == 2)
    }

    @Test func everyFileKey_IsRead() throws {
        let pem = "-----BEGIN X-----\n"
        let json = """
            {
              "listen": {"host": "0.0.0.0", "port": 0, "allowedHosts": ["spin.example.com", "[fd00::7]", "*"]},
              "tls": {"certificate": "c.pem", "key": "k.pem"},
              "limits": {"maxBodyBytes": 1, "maxHeaderBytes": 2, "maxConnections": 3, "inbox": 4,
                         "feedbackBudget": 11, "maxWebSocketMessageBytes": 5, "streamQueue": 6, "idleTimeoutSeconds": 7,
                         "headerTimeoutSeconds": 8, "pingIntervalSeconds": 9, "shutdownGraceSeconds": 10},
              "auth": {"tokens": [{"token": "t1", "scopes": ["read"]}, {"token": "t2", "scopes": ["write", "admin"]},
                                  {"token": "t3", "subject": "device-7", "spin": {"read": ["a"], "write": ["d-*"], "admin": ["o"]},
                                   "gear": {"read": ["auth"]}}],
                       "rules": [{"subject": "device-*", "gear": {"read": ["alarms"]}}],
                       "allowedOrigins": ["https://dash.example", "http://localhost:3000"]},
              "storage": {"directory": "/var/lib/spin", "fsync": "always"},
              "log": {"level": "trace", "format": "json"},
              \(Self.exampleSpins)
            }
            """
        let configuration = try Self.make(json, files: ["c.pem": pem, "k.pem": pem]).configuration
        let expected = SpinServerConfiguration(
            host: "0.0.0.0", port: 0, allowedHosts: ["spin.example.com", "[fd00::7]", "*"],
            tls: .init(certificate: "c.pem", key: "k.pem"),
            limits: .init(maxBodyBytes: 1, maxHeaderBytes: 2, maxConnections: 3, inbox: 4, feedbackBudget: 11,
                          maxWebSocketMessageBytes: 5,
                          streamQueue: 6, idleTimeoutSeconds: 7, headerTimeoutSeconds: 8, pingIntervalSeconds: 9,
                          shutdownGraceSeconds: 10),
            tokens: [AccessToken(token: "t1", scopes: [.read]), AccessToken(token: "t2", scopes: [.write, .admin]),
                     AccessToken(token: "t3", scopes: [], subject: "device-7",
                                 grants: Grants(spinRead: ["a"], spinWrite: ["d-*"], spinAdmin: ["o"], gearRead: ["auth"]))],
            accessRules: [AccessRule(subject: "device-*", grants: Grants(gearRead: ["alarms"]))],
            allowedOrigins: ["https://dash.example", "http://localhost:3000"],
            storage: .init(directory: "/var/lib/spin", fsync: .always, persists: true), log: .init(level: "trace", format: .json),
            spins: [.init(name: "counter", kind: "counter"), .init(name: "levels", kind: "levels"),
                    .init(name: "feature", kind: "feature", gear: "auth"), .init(name: "router", kind: "router", gear: "auth")],
            gears: [.init(name: "auth")])
        #expect(configuration == expected)
    }

    @Test func limitKeys_CoverEveryFieldOfLimits() {
        let fields = Mirror(reflecting: SpinServerConfiguration.Limits()).children.compactMap(\.label)
        #expect(SpinServerConfiguration.limitKeys.map(\.name) == fields)
    }

    // MARK: File errors: source, key path, problem

    struct Case: CustomTestStringConvertible, Sendable {
        let json: String
        let key: String
        let problem: String
        var testDescription: String { "\(key): \(problem)" }
    }

    static let fileCases: [Case] = [
        Case(json: "{", key: "(file)", problem: "not valid JSON"),
        Case(json: "[]", key: "(root)", problem: "must be an object, got an array"),
        Case(json: #"{"spinz": []}"#, key: "spinz", problem: "unknown key"),
        Case(json: #"{"listen": {"prot": 80}}"#, key: "listen.prot", problem: "unknown key (known here: host, port, allowedHosts)"),
        Case(json: #"{"listen": {"allowedHosts": "a.example"}}"#, key: "listen.allowedHosts", problem: "must be an array"),
        Case(json: #"{"listen": {"allowedHosts": ["a.example:8080"]}}"#, key: "listen.allowedHosts[0]", problem: "is not a host name"),
        Case(json: #"{"listen": {"allowedHosts": ["ok.example", "https://a.example"]}}"#, key: "listen.allowedHosts[1]", problem: "without scheme or port"),
        Case(json: #"{"listen": {"allowedHosts": [""]}}"#, key: "listen.allowedHosts[0]", problem: "is not a host name"),
        Case(json: #"{"limits": {"maxBody": 1}}"#, key: "limits.maxBody", problem: "unknown key"),
        Case(json: #"{"spins": [{"name": "c", "kind": "counter", "gaer": "x"}]}"#, key: "spins[0].gaer", problem: "unknown key"),
        Case(json: #"{"listen": {"port": 70000}}"#, key: "listen.port", problem: "70000 is out of range (0 to 65535"),
        Case(json: #"{"listen": {"port": -1}}"#, key: "listen.port", problem: "out of range"),
        Case(json: #"{"listen": {"port": "80"}}"#, key: "listen.port", problem: "must be an integer, got a string"),
        Case(json: #"{"listen": {"port": 80.5}}"#, key: "listen.port", problem: "must be an integer, got 80.5"),
        Case(json: #"{"listen": {"host": ""}}"#, key: "listen.host", problem: "must be a non-empty address"),
        Case(json: #"{"listen": "127.0.0.1"}"#, key: "listen", problem: "must be an object, got a string"),
        Case(json: #"{"limits": {"inbox": 0}}"#, key: "limits.inbox", problem: "must be a positive integer, got 0"),
        Case(json: #"{"limits": {"feedbackBudget": 0}}"#, key: "limits.feedbackBudget", problem: "must be a positive integer, got 0"),
        Case(json: #"{"limits": {"feedbackBudget": "lots"}}"#, key: "limits.feedbackBudget", problem: "integer"),
        Case(json: #"{"limits": {"idleTimeoutSeconds": -5}}"#, key: "limits.idleTimeoutSeconds", problem: "positive"),
        Case(json: #"{"auth": {"tokens": [{"token": "a", "scopes": ["read", "reed"]}]}}"#,
             key: "auth.tokens[0].scopes[1]", problem: "unknown scope \"reed\" (use read, write or admin)"),
        Case(json: #"{"auth": {"tokens": [{"token": "a", "scopes": []}]}}"#, key: "auth.tokens[0].scopes", problem: "at least one scope"),
        Case(json: #"{"auth": {"tokens": [{"token": "a"}]}}"#, key: "auth.tokens[0]", problem: "at least one scope (read, write or admin) or grant"),
        Case(json: #"{"auth": {"tokens": [{"token": "a", "spin": {"write": ["x y"]}}]}}"#, key: "auth.tokens[0].spin.write[0]",
             problem: "a name pattern must be non-empty with no spaces"),
        Case(json: #"{"auth": {"tokens": [{"token": "a", "spin": {"delete": ["x"]}}]}}"#, key: "auth.tokens[0].spin.delete",
             problem: "unknown key"),
        Case(json: #"{"auth": {"tokens": [{"token": "a", "gear": {"write": ["x"]}}]}}"#, key: "auth.tokens[0].gear.write",
             problem: "unknown key"),
        Case(json: #"{"auth": {"tokens": [{"token": "a", "subject": "", "scopes": ["read"]}]}}"#, key: "auth.tokens[0].subject",
             problem: "must not be empty"),
        Case(json: #"{"auth": {"rules": [{"spin": {"read": ["x"]}}]}}"#, key: "auth.rules[0].subject", problem: "missing (required)"),
        Case(json: #"{"auth": {"rules": [{"subject": "d-*"}]}}"#, key: "auth.rules[0]", problem: "grants nothing"),
        Case(json: #"{"auth": {"tokens": [{"scopes": ["read"]}]}}"#, key: "auth.tokens[0].token", problem: "missing (required)"),
        Case(json: #"{"auth": {"tokens": [{"token": "a", "scopes": ["read"]}, {"token": "a", "scopes": ["admin"]}]}}"#,
             key: "auth.tokens[1].token", problem: "the same token as auth.tokens[0]"),
        Case(json: #"{"auth": {"allowedOrigins": ["dash.example"]}}"#, key: "auth.allowedOrigins[0]", problem: "is not an origin"),
        Case(json: #"{"auth": {"allowedOrigins": ["https://dash.example/"]}}"#, key: "auth.allowedOrigins[0]", problem: "is not an origin"),
        Case(json: #"{"storage": {"fsync": "sometimes"}}"#, key: "storage.fsync", problem: "unknown policy \"sometimes\" (use always, batch or none)"),
        Case(json: #"{"storage": {"directory": ""}}"#, key: "storage.directory", problem: "non-empty path"),
        Case(json: #"{"testing": {"echo": true}}"#, key: "testing.echo", problem: "unknown key (known here: echoEndpoint)"),
        Case(json: #"{"testing": {"echoEndpoint": "yes"}}"#, key: "testing.echoEndpoint", problem: "must be true or false, got a string"),
        Case(json: #"{"log": {"level": "verbose"}}"#, key: "log.level", problem: "unknown level \"verbose\" (use trace, debug, info, notice, warning, error, critical)"),
        Case(json: #"{"log": {"format": "xml"}}"#, key: "log.format", problem: "unknown format \"xml\" (use text or json)"),
        Case(json: #"{"tls": {"certificate": "c.pem"}}"#, key: "tls.key", problem: "a TLS certificate is set but no key"),
        Case(json: #"{"tls": {"key": "k.pem"}}"#, key: "tls.certificate", problem: "a TLS key is set but no certificate"),
        Case(json: #"{"tls": {"certificate": "missing.pem", "key": "k.pem"}}"#, key: "tls.certificate", problem: "cannot read \"missing.pem\": No such file"),
        Case(json: #"{"tls": {"certificate": "c.pem", "key": "plain.txt"}}"#, key: "tls.key", problem: "is not a PEM file"),
        Case(json: #"{"spins": [{"name": "a", "kind": "counter"}, {"name": "b", "kind": "levels"}, {"name": "c", "kind": "countr"}]}"#,
             key: "spins[2].kind", problem: "unknown kind \"countr\" (known: counter, feature, levels, router)"),
        Case(json: #"{"spins": [{"name": "a"}]}"#, key: "spins[0].kind", problem: "missing (required)"),
        Case(json: #"{"spins": [{"name": "a", "kind": "counter"}, {"name": "a", "kind": "levels"}]}"#,
             key: "spins[1].name", problem: "Spin \"a\" is already listed at spins[0]"),
        Case(json: #"{"spins": [{"name": "bad name", "kind": "counter"}]}"#, key: "spins[0].name", problem: "is not a valid name"),
        Case(json: #"{"spins": [{"name": "", "kind": "counter"}]}"#, key: "spins[0].name", problem: "is not a valid name"),
        Case(json: #"{"spins": [{"name": "\#(String(repeating: "x", count: 65))", "kind": "counter"}]}"#,
             key: "spins[0].name", problem: "1 to 64"),
        Case(json: #"{"spins": [{"name": "f", "kind": "feature"}], "gears": [{"name": "auth"}]}"#,
             key: "spins[0].gear", problem: "missing: kind \"feature\" attaches to a Gear"),
        Case(json: #"{"spins": [{"name": "r", "kind": "router", "gear": "auht"}], "gears": [{"name": "auth"}]}"#,
             key: "spins[0].gear", problem: "Gear \"auht\" is not listed in gears (listed: auth)"),
        Case(json: #"{"spins": [{"name": "c", "kind": "counter", "gear": "auth"}], "gears": [{"name": "auth"}]}"#,
             key: "spins[0].gear", problem: "kind \"counter\" does not attach to a Gear"),
        Case(json: #"{"spins": [{"name": "f", "kind": "feature", "gear": "auth"}], "gears": [{"name": "auth"}, {"name": "auth"}]}"#,
             key: "gears[1].name", problem: "Gear \"auth\" is already listed at gears[0]"),
        Case(json: #"{"spins": [{"name": "f", "kind": "feature", "gear": "auth"}], "gears": [{"name": "auth"}, {"name": "spare"}]}"#,
             key: "gears[1].name", problem: "no Spin attaches to Gear \"spare\""),
        Case(json: #"{"gears": [{"name": "a/b"}]}"#, key: "gears[0].name", problem: "is not a valid name"),
    ]

    @Test(arguments: fileCases)
    func badFile_IsRejectedNamingTheFileTheKeyAndTheProblem(_ bad: Case) {
        let files = ["c.pem": "-----BEGIN CERTIFICATE-----\n", "k.pem": "-----BEGIN PRIVATE KEY-----\n", "plain.txt": "hello"]
        let error = Self.error(bad.json, files: files)
        #expect(error?.source == "Config/spin-server.json")
        #expect(error?.key == bad.key)
        #expect(error?.problem.contains(bad.problem) == true, "problem was: \(error?.problem ?? "none")")
        #expect(error.map { !$0.description.contains("\n") } == true, "the message is one line")
    }

    @Test func jsonSyntaxError_SaysWhereInTheFile() {
        let error = Self.error("{\n  \"listen\": {\"port\": 80},\n  \"log\": x\n}")
        #expect(error?.key == "(file)")
        #expect(error?.problem.contains("line 3, column 10") == true, "problem was: \(error?.problem ?? "none")")
    }

    @Test func jsonSyntaxError_SaysWhatIsWrong_ColumnsCountingCharacters() {
        let error = Self.error("{\n  \"listen\": {\"host\": \"ü\" \"port\": 80}\n}")
        #expect(error?.description == "Config/spin-server.json: (file): not valid JSON: line 2, column 26: expected ',' or '}' after an object member")
    }

    @Test func aKeyTwiceInOneObject_IsRefused() {
        let error = Self.error(#"{"listen": {"port": 80, "port": 81}}"#)
        #expect(error?.description == #"Config/spin-server.json: (file): the key "port" appears twice in one object (at listen.port); each key may appear once"#)
    }

    @Test func errorDescription_IsSourceKeyProblem() {
        let error = Self.error(#"{"spins": [{"name": "a", "kind": "nope"}]}"#)
        #expect(error?.description == #"Config/spin-server.json: spins[0].kind: unknown kind "nope" (known: counter, feature, levels, router)"#)
    }

    @Test func missingConfigFile_IsAnErrorNamingIt() {
        #expect(throws: ConfigurationError.self) {
            _ = try Self.make("{}", configPath: "elsewhere.json", flags: .init(config: "missing.json"))
        }
        do {
            _ = try Self.make("{}", configPath: "elsewhere.json", flags: .init(config: "missing.json"))
        } catch {
            #expect(error.source == "missing.json")
            #expect(error.key == "(file)")
            #expect(error.problem.contains("--config"))
            #expect(error.problem.contains("No such file"))
        }
    }

    // MARK: Variable and flag errors name the variable or flag

    @Test(arguments: [
        (["SPIN_PORT": "eighty"], "SPIN_PORT", "listen.port", "\"eighty\" is not a port number"),
        (["SPIN_PORT": "65536"], "SPIN_PORT", "listen.port", "out of range"),
        (["SPIN_HOST": ""], "SPIN_HOST", "listen.host", "non-empty"),
        (["SPIN_LOG_LEVEL": "loud"], "SPIN_LOG_LEVEL", "log.level", "unknown level \"loud\""),
        (["SPIN_LOG_FORMAT": "yaml"], "SPIN_LOG_FORMAT", "log.format", "unknown format"),
        (["SPIN_STORAGE": ""], "SPIN_STORAGE", "storage.directory", "non-empty path"),
        (["SPIN_TLS_CERTIFICATE": "c.pem"], "SPIN_TLS_CERTIFICATE", "tls.key", "no key"),
        (["SPIN_TOKENS": "secret"], "SPIN_TOKENS", "auth.tokens", "token:scope"),
        (["SPIN_TOKENS": "secret:root"], "SPIN_TOKENS", "auth.tokens", "unknown scope \"root\""),
        (["SPIN_ALLOWED_HOSTS": "a.example,b.example/x"], "SPIN_ALLOWED_HOSTS", "listen.allowedHosts", "\"b.example/x\" is not a host name"),
        (["SPIN_ECHO_ENDPOINT": "yes"], "SPIN_ECHO_ENDPOINT", "testing.echoEndpoint", "\"yes\" is not a boolean"),
    ])
    func badVariable_IsRejectedNamingTheVariable(_ environment: [String: String], source: String, key: String, problem: String) {
        let error = Self.error(environment: environment, files: ["c.pem": "-----BEGIN X-----"])
        #expect(error?.source == source)
        #expect(error?.key == key)
        #expect(error?.problem.contains(problem) == true, "problem was: \(error?.problem ?? "none")")
    }

    @Test(arguments: [
        (Configuration.Flags(port: "x"), "--port", "listen.port", "\"x\" is not a port number"),
        (Configuration.Flags(port: "-2"), "--port", "listen.port", "out of range"),
        (Configuration.Flags(host: " "), "--host", "listen.host", "non-empty"),
        (Configuration.Flags(logLevel: "verbose"), "--log-level", "log.level", "unknown level"),
        (Configuration.Flags(logFormat: "xml"), "--log-format", "log.format", "unknown format"),
        (Configuration.Flags(tlsKey: "k.pem"), "--tls-key", "tls.certificate", "no certificate"),
        (Configuration.Flags(tlsCertificate: "missing.pem", tlsKey: "k.pem"), "--tls-certificate", "tls.certificate", "cannot read"),
    ])
    func badFlag_IsRejectedNamingTheFlag(_ flags: Configuration.Flags, source: String, key: String, problem: String) {
        let error = Self.error(flags: flags, files: ["k.pem": "-----BEGIN X-----"])
        #expect(error?.source == source)
        #expect(error?.key == key)
        #expect(error?.problem.contains(problem) == true, "problem was: \(error?.problem ?? "none")")
    }

    @Test func echoEndpoint_IsOffByDefault_AndTurnedOnByTheFileTheVariableOrTheFlag() throws {
        #expect(try Self.make().configuration.testing.echoEndpoint == false)
        #expect(try Self.make(#"{"testing": {"echoEndpoint": true}}"#).configuration.testing.echoEndpoint)
        #expect(try Self.make(environment: ["SPIN_ECHO_ENDPOINT": "1"]).configuration.testing.echoEndpoint)
        #expect(try Self.make(flags: .init(echoEndpoint: true)).configuration.testing.echoEndpoint)
        // The variable beats the file; the flag can only turn it on.
        let fileOn = #"{"testing": {"echoEndpoint": true}}"#
        #expect(try Self.make(fileOn, environment: ["SPIN_ECHO_ENDPOINT": "false"]).configuration.testing.echoEndpoint == false)
        #expect(try Self.make(fileOn, flags: .init(echoEndpoint: true), environment: ["SPIN_ECHO_ENDPOINT": "0"])
            .configuration.testing.echoEndpoint)
        #expect(try Self.make(flags: .init(echoEndpoint: true)).configuration.summary.contains("/v1/echo"))
    }

    @Test func port0_IsAccepted() throws {
        #expect(try Self.make(flags: .init(port: "0")).configuration.port == 0)
    }

    // MARK: SPIN_ALLOWED_HOSTS

    @Test func spinAllowedHosts_ReplaceTheFileList_CommaSeparated() throws {
        let json = #"{"listen": {"allowedHosts": ["from-file.example"]}}"#
        #expect(try Self.make(json).configuration.allowedHosts == ["from-file.example"])
        let loaded = try Self.make(json, environment: ["SPIN_ALLOWED_HOSTS": " a.example, 10.0.0.5 ,,[::2]"])
        #expect(loaded.configuration.allowedHosts == ["a.example", "10.0.0.5", "[::2]"])
        #expect(!loaded.warnings.contains { $0.contains("SPIN_ALLOWED_HOSTS") })
    }

    // MARK: SPIN_TOKENS

    @Test func spinTokens_AreParsedIntoTokensWithScopes() throws {
        let loaded = try Self.make(environment: ["SPIN_TOKENS": "tok:read+write,other:admin"])
        #expect(loaded.configuration.tokens == [
            AccessToken(token: "tok", scopes: [.read, .write]), AccessToken(token: "other", scopes: [.admin]),
        ])
    }

    @Test func spinTokens_ReplaceTheFileTokens() throws {
        let json = #"{"auth": {"tokens": [{"token": "from-file", "scopes": ["admin"]}]}}"#
        #expect(try Self.make(json).configuration.tokens == [AccessToken(token: "from-file", scopes: [.admin])])
        let loaded = try Self.make(json, environment: ["SPIN_TOKENS": "from-env:read"])
        #expect(loaded.configuration.tokens == [AccessToken(token: "from-env", scopes: [.read])])
    }

    @Test func tokenErrors_DoNotRepeatTheToken() {
        let json = #"{"auth": {"tokens": [{"token": "s3cret", "scopes": ["read"]}, {"token": "s3cret", "scopes": ["read"]}]}}"#
        let error = Self.error(json)
        #expect(error != nil)
        #expect(error?.description.contains("s3cret") == false)
    }

    // MARK: Warnings

    @Test func unknownSpinVariable_IsAWarningNotAnError() throws {
        let loaded = try Self.make("{\(Self.exampleSpins)}", environment: ["SPIN_PROT": "9000", "HOME": "/root"])
        #expect(loaded.warnings.count == 1)
        #expect(loaded.warnings.first?.contains("SPIN_PROT") == true)
    }

    @Test func noSpins_IsAWarning() throws {
        let loaded = try Self.make("{}")
        #expect(loaded.warnings.contains { $0.contains("no Spins") })
        #expect(try Self.make("{\(Self.exampleSpins)}").warnings.isEmpty)
    }

    // MARK: Storage directory

    @Test func storageFlag_CreatesTheDirectory() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("spin-config-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        let directory = base + "/nested/data"
        #expect(!FileManager.default.fileExists(atPath: directory))
        _ = try Configuration.load(flags: .init(storage: directory), environment: [:], kinds: Self.kinds,
                                   readFile: { _ in Data("{}".utf8) })
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) && isDirectory.boolValue)
    }

    @Test func uncreatableStorage_IsAnErrorNamingTheFlag() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("spin-config-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(FileManager.default.createFile(atPath: base, contents: Data("a file".utf8)))
        #expect {
            _ = try Configuration.load(flags: .init(storage: base + "/data"), environment: [:], kinds: Self.kinds,
                                       readFile: { _ in Data("{}".utf8) })
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.source == "--storage" && error.key == "storage.directory" && error.problem.contains("/data")
        }
        #expect {
            _ = try Configuration.load(flags: .init(), environment: [:], kinds: Self.kinds,
                                       readFile: { _ in Data(#"{"storage": {"directory": "\#(base)"}}"#.utf8) })
        } throws: { error in
            (error as? ConfigurationError).map { $0.source == Self.file && $0.problem.contains("not a directory") } ?? false
        }
    }

    // MARK: The shipped config

    static var shippedConfigFile: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Config/spin-server.json").path
    }

    @Test func shippedConfig_HostsTheFourExamplesTheSessionMachineAndGearAuthOnLoopback() throws {
        let loaded = try Configuration.load(flags: .init(config: Self.shippedConfigFile), environment: [:],
                                            kinds: Self.kinds, createDirectory: { _ in })
        let configuration = loaded.configuration
        #expect(configuration.spins.prefix(4) == [
            .init(name: "counter", kind: "counter"), .init(name: "levels", kind: "levels"),
            .init(name: "feature", kind: "feature", gear: "auth"), .init(name: "router", kind: "router", gear: "auth"),
        ])
        let session = try #require(configuration.spins.last)
        #expect(configuration.spins.count == 5)
        #expect(session.name == "session" && session.kind == "machine" && session.gear == nil)
        #expect(session.machine?.path == "machines/session.json")
        #expect(session.machine?.definition.initialState.value == ["loggedOut"])
        #expect(configuration.gears == [.init(name: "auth")])
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.tls == nil)
        #expect(configuration.tokens.isEmpty)
        #expect(configuration.storage == .init(directory: "data", fsync: .batch, persists: true))
        #expect(configuration.limits == SpinServerConfiguration.Limits())
        #expect(!loaded.warnings.contains { $0.contains("SPIN_ALLOWED_HOSTS") })
    }

    // MARK: Derived values

    @Test func url_UsesHttpsWithTLSAndBracketsIPv6() {
        #expect(SpinServerConfiguration().url(port: 8080) == "http://127.0.0.1:8080")
        #expect(SpinServerConfiguration(host: "::1", tls: .init(certificate: "c", key: "k")).url(port: 443) == "https://[::1]:443")
    }

    @Test(arguments: [("127.0.0.1", true), ("127.1.2.3", true), ("::1", true), ("localhost", true),
                      ("0.0.0.0", false), ("::", false), ("192.168.1.2", false), ("example.com", false)])
    func loopback_IsRecognised(_ host: String, _ loopback: Bool) {
        #expect(SpinServerConfiguration(host: host).isLoopbackHost == loopback)
    }

    @Test func summary_SaysWhatWouldBeHosted() throws {
        let configuration = try Self.make("{\(Self.exampleSpins)}").configuration
        #expect(configuration.summary
            == "4 spins (counter, levels, feature@auth, router@auth), 1 gear (auth), http://127.0.0.1:8080, storage data (fsync batch), no tokens (no authentication)")
    }
}
