extension SpinServerConfiguration {
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
        let spinList = spins.map { spin in ([spin.name] + spin.attachedGears).joined(separator: "@") }
        let gearList = gears.map(\.name)
        let tokenText = tokens.isEmpty ? "no tokens (no authentication)" : "\(tokens.count) token\(tokens.count == 1 ? "" : "s")"
        return "\(spins.count) spin\(spins.count == 1 ? "" : "s") (\(spinList.joined(separator: ", "))), "
            + "\(gears.count) gear\(gears.count == 1 ? "" : "s") (\(gearList.joined(separator: ", "))), "
            + "\(url(port: port)), storage \(storage.directory) (fsync \(storage.fsync.rawValue)), \(tokenText)"
            + (testing.echoEndpoint ? ", WebSocket echo on /v1/echo (testing.echoEndpoint)" : "")
    }
}
