/// What a bearer token may do (docs/PROTOCOL.md, Security).
public enum Scope: String, Sendable, Codable, CaseIterable, Comparable {
    /// Read Spins, Gears, streams and metrics.
    case read
    /// `read`, and send events (POST, and client events on a stream).
    case write
    /// Everything.
    case admin

    /// Whether a token with this scope may do what `needed` allows.
    func grants(_ needed: Scope) -> Bool { self >= needed }

    public static func < (lhs: Scope, rhs: Scope) -> Bool {
        let order: [Scope] = [.read, .write, .admin]
        return order.firstIndex(of: lhs)! < order.firstIndex(of: rhs)!
    }
}

/// A configured bearer token.
public struct AccessToken: Sendable, Equatable, Codable {
    public var token: String
    public var scopes: [Scope]

    public init(token: String, scopes: [Scope]) {
        self.token = token
        self.scopes = scopes
    }
}

/// Checks `Authorization: Bearer <token>` against the configured tokens, and bearer JWTs
/// with the `TokenVerifier` when JWT is configured.
///
/// No configured token and no JWT means no authentication (the server warns when it binds
/// a non-loopback address that way). Tokens are compared in constant time: every
/// configured token is compared in full, whatever matched, so the time taken does not
/// tell how much of a guess was right. A token that matches no static token and is shaped
/// as a JWT is verified; a refused JWT is 401 with the reason.
package struct AccessControl: Sendable {
    package let tokens: [AccessToken]
    package let verifier: TokenVerifier?

    package init(tokens: [AccessToken], verifier: TokenVerifier? = nil) {
        self.tokens = tokens
        self.verifier = verifier
    }

    package var isEnabled: Bool { !tokens.isEmpty || verifier != nil }

    /// Nil when `authorization` (the header value) grants `needed`, else the error.
    package func check(authorization: String?, needs needed: Scope) -> APIError? {
        guard isEnabled else { return nil }
        guard let authorization else {
            return .unauthorized("this route needs a bearer token (Authorization: Bearer <token>)")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, String(parts[0]).caseInsensitiveEquals("Bearer") else {
            return .unauthorized("the Authorization header must be \"Bearer <token>\"")
        }
        let presented = Array(parts[1].utf8)
        var granted: [Scope] = []
        for candidate in tokens where Self.constantTimeEquals(Array(candidate.token.utf8), presented) {
            granted = candidate.scopes
        }
        if granted.isEmpty, let verifier, TokenVerifier.looksLikeJWT(parts[1]) {
            switch verifier.verify(String(parts[1])) {
            case .failure(let refusal): return .unauthorized(refusal.message)
            case .success(let token): granted = token.scopes
            }
            // Until per-Spin permissions: a verified JWT's `scope` claim is its global scopes.
            guard !granted.isEmpty else {
                return .forbidden("the token's scope claim grants none of read, write or admin")
            }
        }
        if granted.isEmpty { return .unauthorized("the bearer token is not valid") }
        guard granted.contains(where: { $0.grants(needed) }) else {
            return .forbidden("the token's scopes (\(granted.map(\.rawValue).joined(separator: ", "))) do not include \(needed.rawValue)")
        }
        return nil
    }

    /// Compares every byte of the longer input whatever differs, so the time depends on
    /// the lengths only.
    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count) | (a.count == b.count ? 0 : 1)
        let length = max(a.count, b.count)
        for index in 0..<length {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            difference |= x ^ y
        }
        return difference == 0
    }

    /// Parses `SPIN_TOKENS`: comma-separated `token:scope+scope` entries.
    package static func parseEnvironment(_ value: String) throws(ConfigurationError) -> [AccessToken] {
        try value.split(separator: ",").map { entry throws(ConfigurationError) -> AccessToken in
            let parts = entry.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty else {
                throw ConfigurationError(source: "SPIN_TOKENS", key: "SPIN_TOKENS",
                                         problem: "each entry must be token:scope[+scope], got \"\(entry.prefix(4))…\"")
            }
            let scopes = try parts[1].split(separator: "+").map { name throws(ConfigurationError) -> Scope in
                guard let scope = Scope(rawValue: String(name)) else {
                    throw ConfigurationError(source: "SPIN_TOKENS", key: "SPIN_TOKENS",
                                             problem: "unknown scope \"\(name)\" (use read, write or admin)")
                }
                return scope
            }
            return AccessToken(token: String(parts[0]), scopes: scopes)
        }
    }
}
