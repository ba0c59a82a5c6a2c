import Foundation

// MARK: - Environment variables and command-line flags

extension SpinServerConfiguration.Builder {
    mutating func apply(environment: [String: String]) throws(ConfigurationError) {
        try apply(host: environment["SPIN_HOST"], port: environment["SPIN_PORT"],
                  storage: environment["SPIN_STORAGE"], logLevel: environment["SPIN_LOG_LEVEL"],
                  logFormat: environment["SPIN_LOG_FORMAT"], certificate: environment["SPIN_TLS_CERTIFICATE"],
                  key: environment["SPIN_TLS_KEY"],
                  sources: ("SPIN_HOST", "SPIN_PORT", "SPIN_STORAGE", "SPIN_LOG_LEVEL", "SPIN_LOG_FORMAT",
                            "SPIN_TLS_CERTIFICATE", "SPIN_TLS_KEY"))
        try apply(backend: environment["SPIN_STORAGE_BACKEND"], databaseURL: environment["SPIN_DATABASE_URL"],
                  sources: ("SPIN_STORAGE_BACKEND", "SPIN_DATABASE_URL"))
        try apply(node: environment["SPIN_NODE"], advertise: environment["SPIN_CLUSTER_ADVERTISE"],
                  leaseSeconds: environment["SPIN_CLUSTER_LEASE_SECONDS"], partitions: environment["SPIN_CLUSTER_PARTITIONS"],
                  sources: ("SPIN_NODE", "SPIN_CLUSTER_ADVERTISE", "SPIN_CLUSTER_LEASE_SECONDS"),
                  partitionsSource: "SPIN_CLUSTER_PARTITIONS")
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
        try apply(jwtEnvironment: environment)
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
        try apply(backend: flags.storageBackend, databaseURL: flags.databaseURL,
                  sources: ("--storage-backend", "--database-url"))
        if flags.echoEndpoint { configuration.testing.echoEndpoint = true }
        try apply(node: flags.node, advertise: flags.advertise, leaseSeconds: flags.leaseSeconds,
                  sources: ("--node", "--advertise", "--lease-seconds"))
    }

    private mutating func apply(backend: String?, databaseURL: String?,
                                sources: (backend: String, url: String)) throws(ConfigurationError) {
        if let backend {
            configuration.storage.backend = try Self.backend(backend, source: sources.backend, key: "storage.backend")
            backendSource = sources.backend
        }
        if let databaseURL {
            configuration.storage.url = try Self.databaseURL(databaseURL, source: sources.url, key: "storage.url")
            urlSource = sources.url
        }
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
}
