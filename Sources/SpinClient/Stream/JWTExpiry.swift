import Foundation

/// When a client's stream refreshes its token: read from the token's own `exp` claim
/// (not verified: the server does that; the client only needs to know when to ask its
/// provider for a new one).
enum JWTExpiry {
    /// The `exp` of a compact JWS (`header.payload.signature`), seconds since 1970; nil
    /// for a token that is no JWT or has no numeric `exp`.
    static func seconds(_ token: String) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        // base64url (RFC 7515 §2) to base64, padded.
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
              let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let exp = claims["exp"] as? NSNumber else { return nil }
        return exp.doubleValue
    }

    /// When to refresh a token that expires at `expiry`, got at `now`: a minute before it
    /// expires, or a quarter of its remaining life before for a short-lived one, so that
    /// the refresh is sent while the token is still valid even if the stream only wakes
    /// at the server's pings.
    static func refreshTime(expiry: Double, now: Double = Date().timeIntervalSince1970) -> Double {
        expiry - min(60, max(expiry - now, 0) / 4)
    }
}
