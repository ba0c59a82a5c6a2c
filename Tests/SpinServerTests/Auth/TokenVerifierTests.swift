import Foundation
import Testing
@testable import SpinServer

/// `TokenVerifier`: each algorithm, each refusal with its reason, the leeway, JWKS keys by
/// `kid`, and reloads. Tokens are signed by jwt-kit (or written by hand for what no
/// library signs).
@Suite struct TokenVerifierTests {
    typealias Keys = JWTTestKeys
    typealias Key = JWTConfiguration.Key

    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    static func claims(_ extra: [String: Keys.Claim] = [:]) -> [String: Keys.Claim] {
        ["sub": .string("alice"), "exp": .number(now.timeIntervalSince1970 + 600), "scope": .string("read write")]
            .merging(extra) { $1 }
    }

    /// A verifier of `keys`, public keys written as PEM files into a directory of their own.
    static func verifier(_ algorithms: [JWTConfiguration.Algorithm], issuer: String? = nil, audience: [String] = [],
                         leeway: Int = 30) throws -> TokenVerifier {
        let directory = Keys.directory([
            "rs.pem": Keys.rs256PublicPEM, "es.pem": Keys.es256.publicKey.pemRepresentation,
            "ed.pem": Keys.eddsa.publicKey.pemRepresentation,
        ])
        let keys = algorithms.map { algorithm -> Key in
            switch algorithm {
            case .hs256: Key(algorithm: .hs256, material: .secret(Keys.secret))
            case .rs256: Key(algorithm: .rs256, material: .publicKeyFile("\(directory)/rs.pem"))
            case .es256: Key(algorithm: .es256, material: .publicKeyFile("\(directory)/es.pem"))
            case .eddsa: Key(algorithm: .eddsa, material: .publicKeyFile("\(directory)/ed.pem"))
            }
        }
        return try TokenVerifier(JWTConfiguration(keys: keys, issuer: issuer, audience: audience, leewaySeconds: leeway))
    }

    static let all = JWTConfiguration.Algorithm.allCases

    @Test(arguments: JWTConfiguration.Algorithm.allCases)
    func aTokenOfEachAlgorithm_Verifies_WithItsSubjectScopesAndExpiry(algorithm: JWTConfiguration.Algorithm) async throws {
        let token = try await Keys.sign(Self.claims(["spin": .object(["read": ["counter*"], "admin": ["lab-*"]])]),
                                        algorithm: algorithm)
        let verified = try Self.verifier(Self.all).verify(token, now: Self.now).get()
        #expect(verified.subject == "alice")
        #expect(verified.scopes == [.read, .write])
        #expect(verified.expires == Date(timeIntervalSince1970: Self.now.timeIntervalSince1970 + 600))
        #expect(verified.spin == SpinClaim(read: ["counter*"], admin: ["lab-*"]))
    }

    @Test func anUnsignedToken_AlgNone_IsRefused_EvenWithEveryKeyConfigured() throws {
        let token = Keys.handMade(header: #"{"alg":"none","typ":"JWT"}"#, payload: #"{"sub":"mallory","scope":"admin"}"#)
        let refusal = try Self.verifier(Self.all).verify(token, now: Self.now)
        #expect(refusal == .failure(.algorithmNotAllowed("none")))
        #expect(TokenRefusal.algorithmNotAllowed("none").message.contains("unsigned"))
    }

    @Test func anRS256PublicKey_UsedAsAnHS256Secret_DoesNotVerify() async throws {
        let forged = try await Keys.sign(Self.claims(["scope": .string("admin")]), algorithm: .hs256,
                                         secret: Keys.rs256PublicPEM)
        // Only the RS256 key configured: no HS256 key to verify with.
        #expect(try Self.verifier([.rs256]).verify(forged, now: Self.now) == .failure(.algorithmNotAllowed("HS256")))
        // With an HS256 secret too, the forgery still fails: the PEM is not that secret.
        #expect(try Self.verifier([.rs256, .hs256]).verify(forged, now: Self.now) == .failure(.badSignature))
    }

    @Test func aChangedPayload_OrAnotherKeysSignature_IsABadSignature() async throws {
        let verifier = try Self.verifier(Self.all)
        let token = try await Keys.sign(Self.claims(), algorithm: .es256)
        let parts = token.split(separator: ".")
        let tampered = "\(parts[0]).\(Keys.base64URL(Data(#"{"sub":"alice","scope":"admin"}"#.utf8))).\(parts[2])"
        #expect(verifier.verify(tampered, now: Self.now) == .failure(.badSignature))
        let otherKey = try await Keys.sign(Self.claims(), algorithm: .hs256, secret: Keys.otherSecret)
        #expect(verifier.verify(otherKey, now: Self.now) == .failure(.badSignature))
    }

    @Test func expiry_AndNotBefore_AllowTheLeeway_AndNoMore() async throws {
        let verifier = try Self.verifier([.hs256], leeway: 30)
        let at = Self.now.timeIntervalSince1970
        let justExpired = try await Keys.sign(Self.claims(["exp": .number(at - 20)]), algorithm: .hs256)
        #expect((try? verifier.verify(justExpired, now: Self.now).get()) != nil)
        let expired = try await Keys.sign(Self.claims(["exp": .number(at - 31)]), algorithm: .hs256)
        #expect(verifier.verify(expired, now: Self.now) == .failure(.expired(at: Date(timeIntervalSince1970: at - 31))))
        #expect(TokenRefusal.expired(at: Date(timeIntervalSince1970: at - 31)).message == "the token expired at 2030-03-17T17:46:09Z")
        let soon = try await Keys.sign(Self.claims(["nbf": .number(at + 20)]), algorithm: .hs256)
        #expect((try? verifier.verify(soon, now: Self.now).get()) != nil)
        let later = try await Keys.sign(Self.claims(["nbf": .number(at + 31)]), algorithm: .hs256)
        #expect(verifier.verify(later, now: Self.now) == .failure(.notYetValid(until: Date(timeIntervalSince1970: at + 31))))
    }

    @Test func theIssuer_AndTheAudience_AreChecked_WhenConfigured() async throws {
        let verifier = try Self.verifier([.hs256], issuer: "https://id.example", audience: ["spin", "spin-staging"])
        let good = try await Keys.sign(Self.claims(["iss": .string("https://id.example"), "aud": .strings(["other", "spin"])]),
                                       algorithm: .hs256)
        #expect((try? verifier.verify(good, now: Self.now).get()) != nil)
        let wrongIssuer = try await Keys.sign(Self.claims(["iss": .string("https://evil.example"), "aud": .string("spin")]),
                                              algorithm: .hs256)
        #expect(verifier.verify(wrongIssuer, now: Self.now) == .failure(.wrongIssuer("https://evil.example")))
        let noIssuer = try await Keys.sign(Self.claims(["aud": .string("spin")]), algorithm: .hs256)
        #expect(verifier.verify(noIssuer, now: Self.now) == .failure(.wrongIssuer(nil)))
        let wrongAudience = try await Keys.sign(Self.claims(["iss": .string("https://id.example"), "aud": .string("billing")]),
                                                algorithm: .hs256)
        #expect(verifier.verify(wrongAudience, now: Self.now) == .failure(.wrongAudience(["billing"])))
        #expect(TokenRefusal.wrongAudience(["billing"]).message.contains("\"billing\""))
    }

    @Test func anOversizedToken_IsRefused_BeforeParsing() throws {
        let token = "eyJ" + String(repeating: "A", count: 9000) + ".e30.sig"
        #expect(try Self.verifier([.hs256]).verify(token, now: Self.now) == .failure(.tooLarge(bytes: 9011)))
    }

    @Test(arguments: [
        ("eyJhbGciOiJIUzI1NiJ9.e30", "three dot-separated parts"),
        ("eyJhbGciOiJIUzI1NiJ9..c2ln", "the payload is empty"),
        ("eyJhbGciOiJIUzI1NiJ9.e30.c2l+ZQ", "the signature is not base64url"),
        ("eyJub3QganNvbg.e30.c2ln", "the header is not a JSON object"),
        ("eyJ0eXAiOiJKV1QifQ.e30.c2ln", "no \"alg\""),
    ])
    func aMalformedToken_IsRefused_SayingWhatIsWrong(token: String, reason: String) throws {
        guard case .failure(.malformed(let message)) = try Self.verifier([.hs256]).verify(token, now: Self.now) else {
            Issue.record("not refused as malformed: \(token)")
            return
        }
        #expect(message.contains(reason))
    }

    @Test(arguments: [
        (Keys.Claim.string("counter"), "spin", "must be an object"),
        (.object(["delete": ["x"]]), "spin", "unknown key \"delete\""),
        (.strings(["x"]), "gear", "must be an object"),
        (.string("soon"), "exp", "must be a number"),
        (.strings(["a"]), "sub", "must be a string"),
    ])
    func aClaimOfTheWrongShape_MakesTheTokenMalformed(value: Keys.Claim, claim: String, reason: String) async throws {
        let token = try await Keys.sign(Self.claims([claim: value]), algorithm: .hs256)
        guard case .failure(.malformed(let message)) = try Self.verifier([.hs256]).verify(token, now: Self.now) else {
            Issue.record("not refused as malformed: \(claim)")
            return
        }
        #expect(message.contains(reason), "\(message)")
    }

    @Test func unknownScopeNames_AreIgnored_AndAnArrayScopeIsRead() async throws {
        let token = try await Keys.sign(Self.claims(["scope": .strings(["openid", "admin"])]), algorithm: .hs256)
        #expect(try Self.verifier([.hs256]).verify(token, now: Self.now).get().scopes == [.admin])
    }

    @Test func onlyJWTShapedTokens_AreCheckedAsJWTs() {
        #expect(TokenVerifier.looksLikeJWT("eyJhbGciOiJIUzI1NiJ9.e30.c2ln"))
        #expect(!TokenVerifier.looksLikeJWT("s3cret-static-token"))
        #expect(!TokenVerifier.looksLikeJWT("a.b.c"))
        #expect(!TokenVerifier.looksLikeJWT("eyJhbGciOiJIUzI1NiJ9.e30"))
    }
}
