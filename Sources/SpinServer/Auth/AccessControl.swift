import Foundation
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

/// A configured bearer token (`auth.tokens`, `SPIN_TOKENS`).
public struct AccessToken: Sendable, Equatable, Codable {
    public var token: String
    /// Global scopes: on every Spin and Gear.
    public var scopes: [Scope]
    /// Who holds it, for the log and the journal (`sub`); `auth.rules` match it too.
    public var subject: String?
    /// Permissions on some Spins and Gears only.
    public var grants: Grants

    public init(token: String, scopes: [Scope], subject: String? = nil, grants: Grants = .none) {
        self.token = token
        self.scopes = scopes
        self.subject = subject
        self.grants = grants
    }
}

/// Checks a request's credentials and says who it comes from (`Identity`): a
/// configured token (`Authorization: Bearer <token>`) with its scopes and grants, or a
/// bearer JWT that the `TokenVerifier` accepts, with its `scope`, `spin` and `gear`
/// claims; either way plus the grants of every `auth.rules` entry whose pattern matches
/// its subject.
///
/// No configured token and no JWT means no authentication (the server warns when it binds
/// a non-loopback address that way): every request is `Identity.anyone`. Tokens are
/// compared in constant time: every configured token is compared in full, whatever
/// matched, so the time taken does not tell how much of a guess was right. A token that
/// matches no static token and is shaped as a JWT is verified; a refused JWT is 401 with
/// the reason.
package struct AccessControl: Sendable {
    package let tokens: [AccessToken]
    package let rules: [AccessRule]
    package let verifier: TokenVerifier?
    /// The identities of the configured tokens, in their order, made once.
    private let identities: [Identity]

    package init(tokens: [AccessToken], rules: [AccessRule] = [], verifier: TokenVerifier? = nil) {
        self.tokens = tokens
        self.rules = rules
        self.verifier = verifier
        identities = tokens.map { token in
            Identity(subject: token.subject,
                     permissions: Permissions(scopes: token.scopes, grants: Self.grants(token.grants, of: token.subject, rules: rules)))
        }
    }

    package var isEnabled: Bool { !tokens.isEmpty || verifier != nil }

    /// `own` and the grants of every rule whose subject pattern matches `subject`.
    package static func grants(_ own: Grants, of subject: String?, rules: [AccessRule]) -> Grants {
        guard let subject else { return own }
        return rules.reduce(own) { grants, rule in Glob(rule.subject).matches(subject) ? grants + rule.grants : grants }
    }

    /// The identity `authorization` (the header value) proves, or 401 `unauthorized`
    /// saying what is wrong with it. Without authentication, `Identity.anyone`.
    package func authenticate(authorization: String?) -> Result<Identity, APIError> {
        guard isEnabled else { return .success(.anyone) }
        guard let authorization else {
            return .failure(.unauthorized("this route needs a bearer token (Authorization: Bearer <token>)"))
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, String(parts[0]).equalsIgnoringASCIICase("Bearer") else {
            return .failure(.unauthorized("the Authorization header must be \"Bearer <token>\""))
        }
        return authenticate(token: parts[1])
    }

    /// The identity of a bearer token (also a stream's `refresh` message), or 401.
    package func authenticate(token: some StringProtocol) -> Result<Identity, APIError> {
        guard isEnabled else { return .success(.anyone) }
        let presented = Array(token.utf8)
        var matched: Int?
        for (index, candidate) in tokens.enumerated() where Self.constantTimeEquals(Array(candidate.token.utf8), presented) {
            matched = index
        }
        if let matched { return .success(identities[matched]) }
        if let verifier, TokenVerifier.looksLikeJWT(token) {
            switch verifier.verify(String(token)) {
            case .failure(let refusal): return .failure(.unauthorized(refusal.message))
            case .success(let verified): return .success(identity(of: verified, leeway: verifier.configuration.leewaySeconds))
            }
        }
        return .failure(.unauthorized("the bearer token is not valid"))
    }

    /// A verified JWT's identity: its `sub`, its `scope` claim as global scopes, its
    /// `spin` and `gear` claims as grants (plus the rules of its subject), valid until its
    /// `exp` plus the leeway, as verification accepts it.
    private func identity(of token: VerifiedToken, leeway: Int) -> Identity {
        let claimed = Grants(spinRead: token.spin.read, spinWrite: token.spin.write, spinAdmin: token.spin.admin,
                             gearRead: token.gear.read)
        let expiresAt = token.expires?.timeIntervalSince1970
        return Identity(subject: token.subject,
                        permissions: Permissions(scopes: token.scopes, grants: Self.grants(claimed, of: token.subject, rules: rules)),
                        expiresAt: expiresAt, validUntil: expiresAt.map { $0 + Double(leeway) })
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
