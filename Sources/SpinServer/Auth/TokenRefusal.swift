import Foundation

/// Why a bearer JWT is refused (401 `unauthorized`, with `message`). One case per reason,
/// so that a client (and its operator) can tell a clock problem from a key problem.
package enum TokenRefusal: Error, Sendable, Equatable {
    /// Not a compact JWS, undecodable, or a claim of the wrong type or shape.
    case malformed(String)
    /// Longer than `TokenVerifier.maximumTokenBytes` (checked before any parsing).
    case tooLarge(bytes: Int)
    /// `alg` is `none`, not one the server verifies, or one no configured key has.
    case algorithmNotAllowed(String)
    /// `kid` names no configured key of the token's algorithm.
    case unknownKey(String)
    /// No configured key of the token's algorithm (and `kid`) verifies the signature.
    case badSignature
    /// `exp` plus the leeway has passed.
    case expired(at: Date)
    /// `nbf` minus the leeway has not come yet.
    case notYetValid(until: Date)
    /// `iss` is not the configured issuer (nil: the token has none).
    case wrongIssuer(String?)
    /// `aud` names none of the configured audiences (empty: the token has none).
    case wrongAudience([String])

    /// The 401's message: what is wrong with the token, never a key or a secret.
    package var message: String {
        switch self {
        case .malformed(let reason):
            "the bearer token is not a valid JWT: \(reason)"
        case .tooLarge(let bytes):
            "the bearer token is \(bytes) bytes, more than the \(TokenVerifier.maximumTokenBytes) accepted"
        case .algorithmNotAllowed(let algorithm) where algorithm.equalsIgnoringASCIICase("none"):
            "the token is unsigned (alg \"none\"), which is never accepted"
        case .algorithmNotAllowed(let algorithm):
            "the token's algorithm \"\(algorithm)\" is not accepted: no key of that algorithm is configured"
        case .unknownKey(let kid):
            "the token's key id (kid) \"\(kid)\" names no configured key"
        case .badSignature:
            "the token's signature does not verify with the configured keys"
        case .expired(let date):
            "the token expired at \(Self.format(date))"
        case .notYetValid(let date):
            "the token is not valid before \(Self.format(date)) (nbf)"
        case .wrongIssuer(nil):
            "the token has no issuer (iss), and this server accepts only tokens of a configured issuer"
        case .wrongIssuer(let issuer?):
            "the token's issuer (iss) \"\(issuer)\" is not the one this server accepts"
        case .wrongAudience(let audience) where audience.isEmpty:
            "the token has no audience (aud), and this server accepts only tokens for its configured audience"
        case .wrongAudience(let audience):
            "the token's audience (aud) \(audience.map { "\"\($0)\"" }.joined(separator: ", ")) does not include this server's"
        }
    }

    /// ISO 8601 in UTC, to the second.
    private static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
