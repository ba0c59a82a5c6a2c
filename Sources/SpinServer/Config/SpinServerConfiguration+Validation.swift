import Foundation
import Logging
import SpinStorage

// MARK: - Checks across sources

extension SpinServerConfiguration.Builder {
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
                    throw ConfigurationError(source: file.source, key: keyPath, problem: "cannot read \"\(file.value)\"", underlying: error)
                }
                guard contents.range(of: Data("-----BEGIN ".utf8)) != nil else {
                    throw ConfigurationError(source: file.source, key: keyPath,
                                             problem: "\"\(file.value)\" is not a PEM file (no -----BEGIN line)")
                }
            }
            configuration.tls = TLSFiles(certificate: certificate.value, key: key.value)
        }
    }

    /// The file backend's directory is created; the postgres backend needs a URL (the
    /// database is reached at start-up, not here).
    func makeStorage(createDirectory: (String) throws -> Void) throws(ConfigurationError) {
        if configuration.storage.backend == .postgres {
            guard configuration.storage.url != nil else {
                throw ConfigurationError(source: backendSource, key: "storage.url",
                                         problem: "storage.backend is postgres but no database is named: set storage.url, SPIN_DATABASE_URL or --database-url to a libpq connection string (postgresql://user:password@host:5432/database)")
            }
            return
        }
        let directory = configuration.storage.directory
        do {
            try createDirectory(directory)
        } catch {
            throw ConfigurationError(source: storageSource, key: "storage.directory",
                                     problem: "cannot use \"\(directory)\" as the storage directory", underlying: error)
        }
    }
}

// MARK: - Single values

extension SpinServerConfiguration.Builder {
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

    static func backend(_ text: String, source: String, key: String) throws(ConfigurationError) -> Storage.Backend {
        guard let backend = Storage.Backend(rawValue: text) else {
            throw ConfigurationError(source: source, key: key, problem: "unknown backend \"\(text)\" (use file or postgres)")
        }
        return backend
    }

    /// A libpq connection string, checked for syntax only (libpq's own parser).
    static func databaseURL(_ text: String, source: String, key: String) throws(ConfigurationError) -> String {
        if let problem = PostgresConnection.problem(inConnectionString: text) {
            throw ConfigurationError(source: source, key: key, problem: "not a libpq connection string: \(problem)")
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
}
