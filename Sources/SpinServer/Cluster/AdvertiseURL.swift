/// A node's `cluster.advertise` URL taken apart: `http(s)://host[:port]`, no path,
/// an IPv6 host in brackets; the port defaults to the scheme's (80, 443).
package struct AdvertiseURL: Sendable, Equatable {
    /// `https`: connect with TLS.
    package var tls: Bool
    /// The host as written (an IPv6 address keeps its brackets, as `Host` writes it).
    package var host: String
    package var port: Int

    /// Nil unless `text` is `http://` or `https://`, a non-empty host, an optional port
    /// 1...65535 and at most a trailing `/`.
    package init?(_ text: String) {
        let trimmed = text.hasSuffix("/") ? text.dropLast() : Substring(text)
        let lower = trimmed.lowercased()
        let tls: Bool
        if lower.hasPrefix("https://") { tls = true } else if lower.hasPrefix("http://") { tls = false } else { return nil }
        let authority = trimmed.dropFirst(tls ? 8 : 7)
        guard !authority.contains(where: { "/?#@ \t".contains($0) }) else { return nil }
        var host = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[...close]
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            }
        } else {
            let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            host = parts[0]
            portText = parts.count == 2 ? parts[1] : nil
        }
        guard !host.isEmpty, host != "[]" else { return nil }
        let port: Int
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else { return nil }
            port = number
        } else {
            port = tls ? 443 : 80
        }
        self.tls = tls
        self.host = String(host)
        self.port = port
    }

    /// What a request to this node puts in `Host`: the host, and the port unless it is
    /// the scheme's default.
    package var hostHeader: String {
        port == (tls ? 443 : 80) ? host : "\(host):\(port)"
    }

    /// The host as a socket connects to it (an IPv6 address without brackets).
    package var connectHost: String {
        host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
    }
}
