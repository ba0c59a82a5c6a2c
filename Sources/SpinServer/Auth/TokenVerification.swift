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

    /// A base64url part (RFC 7515 §2: no padding) as bytes: translated to base64 byte by
    /// byte (no String work: this runs for every request).
    private static func decode(_ part: ArraySlice<UInt8>, part name: String) throws(TokenRefusal) -> Data {
        guard !part.isEmpty else { throw .malformed("the \(name) is empty") }
        var base64 = [UInt8]()
        base64.reserveCapacity(part.count + 3)
        for byte in part {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                throw .malformed("the \(name) is not base64url")
            default: base64.append(byte)
            }
        }
        base64 += repeatElement(UInt8(ascii: "="), count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: Data(base64)) else { throw .malformed("the \(name) is not base64url") }
        return data
    }
}

// MARK: - Header and claims

extension TokenVerification {
    /// The JOSE header fields the server reads.
    struct Header: Decodable {
        var algorithm: String
        var kid: String?
        var critical: [String]?

        init(json: Data) throws(TokenRefusal) {
            self = try Self.decoded(json, part: "header")
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: ClaimKey.self)
            guard let algorithm = try? container.decodeIfPresent(String.self, forKey: "alg") else {
                throw TokenRefusal.malformed("the header has no \"alg\" string")
            }
            self.algorithm = algorithm
            kid = try container.claim(String.self, "kid")
            critical = try container.claim([String].self, "crit")
        }
    }

    /// The payload's claims the server reads; a claim of the wrong type or shape makes the
    /// token malformed rather than being ignored (a misspelt permission must not pass).
    struct Claims: Decodable {
        var subject: String?
        var expires: Date?
        var notBefore: Date?
        var issuer: String?
        var audience: [String]
        var scopes: [Scope]
        var spin: SpinClaim
        var gear: GearClaim

        init(json: Data) throws(TokenRefusal) {
            self = try Self.decoded(json, part: "payload")
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: ClaimKey.self)
            subject = try container.claim(String.self, "sub")
            expires = try container.date("exp")
            notBefore = try container.date("nbf")
            issuer = try container.claim(String.self, "iss")
            audience = try container.strings("aud") ?? []
            scopes = (try container.strings("scope")?.flatMap { $0.split(separator: " ") } ?? [])
                .compactMap { Scope(rawValue: String($0)) }
            let spinGlobs = try container.globs("spin", known: ["read", "write", "admin"])
            spin = SpinClaim(read: spinGlobs["read"] ?? [], write: spinGlobs["write"] ?? [], admin: spinGlobs["admin"] ?? [])
            gear = GearClaim(read: try container.globs("gear", known: ["read"])["read"] ?? [])
        }
    }

    /// Any member name of a JSON object.
    struct ClaimKey: CodingKey, ExpressibleByStringLiteral {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
        init(stringLiteral value: String) { stringValue = value }
    }
}

extension Decodable {
    /// Decodes a token part (Foundation's JSONDecoder); a claim's own refusal passes
    /// through, anything else is "not a JSON object".
    fileprivate static func decoded(_ json: Data, part: String) throws(TokenRefusal) -> Self {
        do {
            return try JSONDecoder().decode(Self.self, from: json)
        } catch let refusal as TokenRefusal {
            throw refusal
        } catch {
            throw .malformed("the \(part) is not a JSON object")
        }
    }
}

/// Typed reads of claims that refuse the wrong type by name (null counts as absent).
extension KeyedDecodingContainer where Key == TokenVerification.ClaimKey {
    fileprivate func claim<T: Decodable>(_ type: T.Type, _ name: Key) throws -> T? {
        guard contains(name), !((try? decodeNil(forKey: name)) ?? false) else { return nil }
        guard let value = try? decode(type, forKey: name) else {
            let what = type == String.self ? "a string" : "an array of strings"
            throw TokenRefusal.malformed("the claim \"\(name.stringValue)\" must be \(what)")
        }
        return value
    }

    /// A NumericDate (RFC 7519 §2): seconds since the epoch, maybe fractional.
    fileprivate func date(_ name: Key) throws -> Date? {
        guard contains(name), !((try? decodeNil(forKey: name)) ?? false) else { return nil }
        // Beyond the year 9999 (or before 1970) a date is no date a token means; refused
        // here, it can never reach arithmetic that would overflow (a stream's expiry).
        guard let seconds = try? decode(Double.self, forKey: name), seconds.isFinite,
              seconds >= 0, seconds < 253_402_300_800 else {
            throw TokenRefusal.malformed("the claim \"\(name.stringValue)\" must be a number of seconds since 1970, before the year 10000")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// A string or an array of strings (`aud`, `scope`).
    fileprivate func strings(_ name: Key) throws -> [String]? {
        guard contains(name), !((try? decodeNil(forKey: name)) ?? false) else { return nil }
        if let text = try? decode(String.self, forKey: name) { return [text] }
        guard let texts = try? decode([String].self, forKey: name) else {
            throw TokenRefusal.malformed("the claim \"\(name.stringValue)\" must be a string or an array of strings")
        }
        return texts
    }

    /// `{"read": [globs], ...}` with only `known` keys, each an array of strings.
    fileprivate func globs(_ name: Key, known: [String]) throws -> [String: [String]] {
        guard contains(name), !((try? decodeNil(forKey: name)) ?? false) else { return [:] }
        let shape = "{\(known.map { "\"\($0)\": [globs]" }.joined(separator: ", "))}"
        guard let object = try? nestedContainer(keyedBy: Key.self, forKey: name) else {
            throw TokenRefusal.malformed("the claim \"\(name.stringValue)\" must be an object \(shape)")
        }
        var globs: [String: [String]] = [:]
        for key in object.allKeys {
            guard known.contains(key.stringValue) else {
                throw TokenRefusal.malformed("the claim \"\(name.stringValue)\" has an unknown key \"\(key.stringValue)\" (known: \(known.joined(separator: ", ")))")
            }
            guard let texts = try? object.decode([String].self, forKey: key) else {
                throw TokenRefusal.malformed("\"\(name.stringValue)\".\"\(key.stringValue)\" must be an array of strings (globs)")
            }
            globs[key.stringValue] = texts
        }
        return globs
    }
}
