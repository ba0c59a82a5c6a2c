import Foundation
import Testing
@testable import SpinServer

/// Keys from a JWKS file: picked by `kid`, all of the token's algorithm without one, and
/// the file re-read when it changes (or on `reload()`), a broken file keeping the keys.
@Suite struct TokenVerifierJWKSTests {
    typealias Keys = JWTTestKeys
    static let now = TokenVerifierTests.now
    static let claims = TokenVerifierTests.claims()

    static func verifier(jwks: String) throws -> (TokenVerifier, file: String) {
        let file = Keys.directory(["jwks.json": jwks]) + "/jwks.json"
        return (try TokenVerifier(JWTConfiguration(jwksFile: file), changeCheckInterval: .zero), file)
    }

    @Test func theKeyNamedByKid_Verifies_AndAnUnknownKidIsRefusedByName() async throws {
        let (verifier, _) = try Self.verifier(jwks: Keys.jwks([("ec-1", .es256), ("ed-1", .eddsa), ("rsa-1", .rs256)]))
        for (kid, algorithm) in [("ec-1", JWTConfiguration.Algorithm.es256), ("ed-1", .eddsa), ("rsa-1", .rs256)] {
            let token = try await Keys.sign(Self.claims, algorithm: algorithm, kid: kid)
            #expect((try? verifier.verify(token, now: Self.now).get())?.subject == "alice", "\(kid)")
        }
        let unknown = try await Keys.sign(Self.claims, algorithm: .es256, kid: "ec-2")
        #expect(verifier.verify(unknown, now: Self.now) == .failure(.unknownKey("ec-2")))
        // A kid of another algorithm's key does not pick it either.
        let crossed = try await Keys.sign(Self.claims, algorithm: .es256, kid: "ed-1")
        #expect(verifier.verify(crossed, now: Self.now) == .failure(.unknownKey("ed-1")))
    }

    @Test func withoutKid_TheKeysOfTheTokensAlgorithmAreTried() async throws {
        let (verifier, _) = try Self.verifier(jwks: Keys.jwks([("ed-1", .eddsa), (nil, .es256)]))
        let token = try await Keys.sign(Self.claims, algorithm: .es256)
        #expect((try? verifier.verify(token, now: Self.now).get()) != nil)
        let hmac = try await Keys.sign(Self.claims, algorithm: .hs256)
        #expect(verifier.verify(hmac, now: Self.now) == .failure(.algorithmNotAllowed("HS256")))
    }

    @Test func aReplacedJWKSFile_IsReadAtTheNextVerify_WithoutARestart() async throws {
        let (verifier, file) = try Self.verifier(jwks: Keys.jwks([("ed-1", .eddsa)]))
        let token = try await Keys.sign(Self.claims, algorithm: .es256, kid: "ec-new")
        #expect(verifier.verify(token, now: Self.now) == .failure(.algorithmNotAllowed("ES256")))
        try Data(Keys.jwks([("ec-new", .es256)]).utf8).write(to: URL(fileURLWithPath: file + ".new"))
        _ = rename(file + ".new", file)
        #expect((try? verifier.verify(token, now: Self.now).get()) != nil)
    }

    @Test func aBrokenJWKSFile_KeepsTheKeysInUse_AndReloadSaysWhy() async throws {
        let (verifier, file) = try Self.verifier(jwks: Keys.jwks([("ec-1", .es256)]))
        let token = try await Keys.sign(Self.claims, algorithm: .es256, kid: "ec-1")
        try Data("{\"keys\": [".utf8).write(to: URL(fileURLWithPath: file))
        #expect((try? verifier.verify(token, now: Self.now).get()) != nil)
        let problem = verifier.reload()
        #expect(problem?.key == "auth.jwt.jwksFile")
        #expect(problem?.problem.contains("not a JWKS") == true)
        #expect((try? verifier.verify(token, now: Self.now).get()) != nil)
        try Data(Keys.jwks([("ec-1", .eddsa)]).utf8).write(to: URL(fileURLWithPath: file))
        #expect(verifier.reload() == nil)
        #expect(verifier.verify(token, now: Self.now) == .failure(.algorithmNotAllowed("ES256")))
    }

    @Test func aJWKSWithoutAUsableKey_IsAConfigurationError() throws {
        let jwks = #"{"keys": [{"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"}, {"kty": "oct", "k": "c2VjcmV0"}]}"#
        let error = #expect(throws: ConfigurationError.self) { try Self.verifier(jwks: jwks) }
        #expect(error?.key == "auth.jwt.jwksFile")
        #expect(error?.problem.contains("no usable key") == true)
    }
}
