/// Which browser pages may open streams (docs/PROTOCOL.md, Security).
///
/// Browsers send `Origin` with every WebSocket handshake; other clients usually send
/// none, and are not what the check is for (they can forge it anyway). A request
/// without `Origin` passes; one from the server's own origin (the `Origin` authority
/// equals the `Host` header) passes; any other must be listed, exactly
/// (`https://dash.example.com`), or the list must hold `*`.
package struct OriginPolicy: Sendable {
    package let allowed: [String]

    package init(allowed: [String]) {
        self.allowed = allowed
    }

    package func allows(origin: String?, host: String?) -> Bool {
        guard let origin else { return true }
        if allowed.contains("*") || allowed.contains(where: { $0.equalsIgnoringASCIICase(origin) }) { return true }
        guard let host, let schemeEnd = origin.range(of: "://") else { return false }
        let authority = origin[schemeEnd.upperBound...]
        return String(authority).equalsIgnoringASCIICase(host)
    }
}
