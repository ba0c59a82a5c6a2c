import SpinStorage

extension SpinServerConfiguration {
    // MARK: - Derived values

    /// True for addresses only this machine reaches: `127.0.0.0/8`, `::1`, `localhost`.
    public var isLoopbackHost: Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// Whether requests must carry a bearer token: static tokens or JWT are configured.
    public var authenticates: Bool { !tokens.isEmpty || jwt != nil }

    /// `http://HOST:PORT` (or `https`), IPv6 addresses bracketed.
    public func url(port: Int) -> String {
        let scheme = tls == nil ? "http" : "https"
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(hostPart):\(port)"
    }

    /// What would be hosted, in one line: `4 spins (counter, levels, feature@auth,
    /// router@auth), 1 gear (auth), http://127.0.0.1:8080, storage data (fsync batch),
    /// no tokens`.
    public var summary: String {
        let spinList = spins.map { spin in ([spin.name] + spin.attachedGears).joined(separator: "@") }
        let gearList = gears.map(\.name)
        let staticText = "\(tokens.count) token\(tokens.count == 1 ? "" : "s")"
        let tokenText = switch (tokens.isEmpty, jwt) {
        case (true, nil): "no tokens (no authentication)"
        case (false, nil): staticText
        case (true, let jwt?): "JWT (\(jwt.summary))"
        case (false, let jwt?): "\(staticText) and JWT (\(jwt.summary))"
        }
        let kindList = kinds.map { kind in kind.names.map { "\(kind.name) (\($0))" } ?? kind.name }
        return "\(spins.count) spin\(spins.count == 1 ? "" : "s") (\(spinList.joined(separator: ", "))), "
            + (kinds.isEmpty ? "" : "\(kinds.count) kind\(kinds.count == 1 ? "" : "s") (\(kindList.joined(separator: ", "))), ")
            + "\(gears.count) gear\(gears.count == 1 ? "" : "s") (\(gearList.joined(separator: ", "))), "
            + "\(url(port: port)), storage \(storageSummary) (fsync \(storage.fsync.rawValue)), \(tokenText)"
            + (testing.echoEndpoint ? ", WebSocket echo on /v1/echo (testing.echoEndpoint)" : "")
    }

    /// The storage directory, or the database (without its password).
    var storageSummary: String {
        switch storage.backend {
        case .file: storage.directory
        case .postgres: "postgres \(PostgresConnection.describe(connectionString: storage.url ?? ""))"
        }
    }

    /// Warnings for a listener other machines can reach: no tokens (anyone may read and
    /// change every Spin; which `Host` names are then served), or tokens without TLS.
    /// Empty on a loopback address. `load` adds them to `Loaded.warnings`.
    public var exposureWarnings: [String] {
        guard !isLoopbackHost else { return [] }
        guard !authenticates else {
            return tls == nil
                ? ["listening on \(host), which is not a loopback address, without TLS: bearer tokens cross the network in clear text; set tls.certificate and tls.key"]
                : []
        }
        var warnings = ["listening on \(host), which is not a loopback address, with NO auth tokens: anyone who can reach it can read and change every Spin; set auth.tokens or SPIN_TOKENS (or auth.jwt)"]
        if allowedHosts.isEmpty {
            warnings.append("without tokens only requests whose Host is \(host == "0.0.0.0" || host == "::" ? "" : "the listen address, ")localhost or a loopback address are served (others get 421): list the names clients use in listen.allowedHosts or SPIN_ALLOWED_HOSTS")
        }
        return warnings
    }
}
