import Foundation
import JWTKit

/// One verification of a compact JWS against a key set, in the order that refuses the
/// cheapest way first and trusts nothing unsigned: size, shape, header (`alg`, `kid`),
/// signature (jwt-kit), then the claims.
struct TokenVerification {
    let configuration: JWTConfiguration
    let keys: JWTKeySet

    func verify(_ token: String, now: Date) -> Result<VerifiedToken, TokenRefusal> {
        Result { () throws(TokenRefusal) -> VerifiedToken in
            let bytes = Array(token.utf8)
            guard bytes.count <= TokenVerifier.maximumTokenBytes else { throw .tooLarge(bytes: bytes.count) }
            let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard parts.count == 3 else {
                throw .malformed("a JWT has three dot-separated parts, this one has \(parts.count)")
            }
            let header = try Header(json: try Self.decode(parts[0], part: "header"))
            if let critical = header.critical {
                throw .malformed("the header lists extensions the server must understand (crit: \(critical.joined(separator: ", "))), and it knows none")
            }
            let candidates = try keys.candidates(algorithm: header.algorithm, kid: header.kid).get()
            let payload = try Self.decode(parts[1], part: "payload")
            let signature = try Self.decode(parts[2], part: "signature")
            let signingInput = bytes[..<(parts[0].count + 1 + parts[1].count)]
            let verified = candidates.contains { entry in
                (try? entry.verifier.verify(signature, signs: signingInput)) == true
            }
            guard verified else { throw .badSignature }
            // The payload's JSON is parsed only once the signature vouches for it.
            let claims = try Claims(json: payload)
            try check(claims, now: now)
            return VerifiedToken(subject: claims.subject, expires: claims.expires, scopes: claims.scopes,
                                 spin: claims.spin, gear: claims.gear)
        }
    }

    /// `exp` and `nbf` with the leeway, then `iss` and `aud` when configured.
    private func check(_ claims: Claims, now: Date) throws(TokenRefusal) {
        let leeway = TimeInterval(configuration.leewaySeconds)
        if let expires = claims.expires, now.timeIntervalSince(expires) > leeway {
            throw .expired(at: expires)
        }
        if let notBefore = claims.notBefore, notBefore.timeIntervalSince(now) > leeway {
            throw .notYetValid(until: notBefore)
        }
        if let issuer = configuration.issuer, claims.issuer != issuer {
            throw .wrongIssuer(claims.issuer)
        }
        if !configuration.audience.isEmpty, !claims.audience.contains(where: configuration.audience.contains) {
            throw .wrongAudience(claims.audience)
        }
    }

    /// A base64url part (RFC 7515 §2: no padding) as bytes.
    private static func decode(_ part: ArraySlice<UInt8>, part name: String) throws(TokenRefusal) -> Data {
        var text = String(decoding: part, as: UTF8.self)
        guard !text.isEmpty, !text.contains(where: { $0 == "+" || $0 == "/" || $0 == "=" }) else {
            throw .malformed("the \(name) is \(text.isEmpty ? "empty" : "not base64url")")
        }
        text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text) else { throw .malformed("the \(name) is not base64url") }
        return data
    }
}

// MARK: - Header and claims

extension TokenVerification {
    /// The JOSE header fields the server reads.
    struct Header {
        var algorithm: String
        var kid: String?
        var critical: [String]?

        init(json: Data) throws(TokenRefusal) {
            let object = try JSONObject(json, part: "header")
            guard let algorithm = object["alg"] as? String else {
                throw .malformed("the header has no \"alg\" string")
            }
            self.algorithm = algorithm
            kid = try object.string("kid")
            critical = object["crit"].map { ($0 as? [String]) ?? ["?"] }
        }
    }

    /// The payload's claims the server reads; a claim of the wrong type or shape makes the
    /// token malformed rather than being ignored (a misspelt permission must not pass).
    struct Claims {
        var subject: String?
        var expires: Date?
        var notBefore: Date?
        var issuer: String?
        var audience: [String]
        var scopes: [Scope]
        var spin: SpinClaim
        var gear: GearClaim

        init(json: Data) throws(TokenRefusal) {
            let object = try JSONObject(json, part: "payload")
            subject = try object.string("sub")
            expires = try object.date("exp")
            notBefore = try object.date("nbf")
            issuer = try object.string("iss")
            audience = try object.strings("aud", splittingSpaces: false) ?? []
            scopes = (try object.strings("scope", splittingSpaces: true) ?? []).compactMap(Scope.init(rawValue:))
            let spinGlobs = try object.globs("spin", known: ["read", "write", "admin"])
            spin = SpinClaim(read: spinGlobs["read"] ?? [], write: spinGlobs["write"] ?? [], admin: spinGlobs["admin"] ?? [])
            gear = GearClaim(read: try object.globs("gear", known: ["read"])["read"] ?? [])
        }
    }

    /// A decoded JSON object with typed reads that refuse the wrong type by name.
    struct JSONObject {
        let members: [String: Any]

        init(_ json: Data, part: String) throws(TokenRefusal) {
            guard let members = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
                throw .malformed("the \(part) is not a JSON object")
            }
            self.members = members
        }

        subscript(name: String) -> Any? {
            members[name].flatMap { $0 is NSNull ? nil : $0 }
        }

        func string(_ name: String) throws(TokenRefusal) -> String? {
            guard let value = self[name] else { return nil }
            guard let text = value as? String else { throw .malformed("the claim \"\(name)\" must be a string") }
            return text
        }

        /// A NumericDate (RFC 7519 §2): seconds since the epoch, maybe fractional.
        func date(_ name: String) throws(TokenRefusal) -> Date? {
            guard let value = self[name] else { return nil }
            // JSONSerialization gives true and false as Bool: not a date.
            guard type(of: value) != Bool.self, let number = value as? NSNumber, number.doubleValue.isFinite else {
                throw .malformed("the claim \"\(name)\" must be a number of seconds since 1970")
            }
            return Date(timeIntervalSince1970: number.doubleValue)
        }

        /// A string or an array of strings (`aud`; `scope`, whose string is space-separated).
        func strings(_ name: String, splittingSpaces: Bool) throws(TokenRefusal) -> [String]? {
            guard let value = self[name] else { return nil }
            if let text = value as? String {
                return splittingSpaces ? text.split(separator: " ").map(String.init) : [text]
            }
            guard let items = value as? [Any], let texts = items as? [String], items.count == texts.count else {
                throw .malformed("the claim \"\(name)\" must be a string or an array of strings")
            }
            return texts
        }

        /// `{"read": [globs], ...}` with only `known` keys, each an array of strings.
        func globs(_ name: String, known: [String]) throws(TokenRefusal) -> [String: [String]] {
            guard let value = self[name] else { return [:] }
            let shape = "{\(known.map { "\"\($0)\": [globs]" }.joined(separator: ", "))}"
            guard let object = value as? [String: Any] else {
                throw .malformed("the claim \"\(name)\" must be an object \(shape)")
            }
            var globs: [String: [String]] = [:]
            for (key, item) in object {
                guard known.contains(key) else {
                    throw .malformed("the claim \"\(name)\" has an unknown key \"\(key)\" (known: \(known.joined(separator: ", ")))")
                }
                guard let list = item as? [Any], let texts = list as? [String], list.count == texts.count else {
                    throw .malformed("\"\(name)\".\"\(key)\" must be an array of strings (globs)")
                }
                globs[key] = texts
            }
            return globs
        }
    }
}
