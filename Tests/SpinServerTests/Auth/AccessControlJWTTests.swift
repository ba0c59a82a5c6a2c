import Foundation
import Testing
@testable import SpinServer

/// `AccessControl` with a `TokenVerifier`: static tokens as before, JWTs verified, a
/// refused JWT a 401 that says why.
@Suite struct AccessControlJWTTests {
    typealias Keys = JWTTestKeys

    static func access() throws -> AccessControl {
        let verifier = try TokenVerifier(JWTConfiguration(keys: [.init(algorithm: .hs256, material: .secret(Keys.secret))]))
        return AccessControl(tokens: [AccessToken(token: "static-admin", scopes: [.admin])], verifier: verifier)
    }

    static func jwt(_ claims: [String: Keys.Claim]) async throws -> String {
        try await Keys.sign(["exp": .number(Date().timeIntervalSince1970 + 600)].merging(claims) { $1 }, algorithm: .hs256)
    }

    @Test func aStaticToken_StillWorks_BesideJWT() throws {
        #expect(try Self.access().check(authorization: "Bearer static-admin", needs: .admin) == nil)
        #expect(try Self.access().check(authorization: "Bearer other", needs: .read)?.message == "the bearer token is not valid")
    }

    @Test func aVerifiedJWT_GrantsItsScopeClaim() async throws {
        let access = try Self.access()
        let reader = try await Self.jwt(["scope": .string("read")])
        #expect(access.check(authorization: "Bearer \(reader)", needs: .read) == nil)
        #expect(access.check(authorization: "Bearer \(reader)", needs: .write)?.status == 403)
        let noScope = try await Self.jwt([:])
        #expect(access.check(authorization: "Bearer \(noScope)", needs: .read)?.status == 403)
    }

    @Test func aRefusedJWT_Is401_WithTheReason() async throws {
        let expired = try await Keys.sign(["exp": .number(Date().timeIntervalSince1970 - 3600), "scope": .string("admin")],
                                          algorithm: .hs256)
        let error = try #require(try Self.access().check(authorization: "Bearer \(expired)", needs: .read))
        #expect(error.status == 401)
        #expect(error.code == "unauthorized")
        #expect(error.message.hasPrefix("the token expired at "))
    }

    @Test func withOnlyJWTConfigured_AuthenticationIsOn() throws {
        let verifier = try TokenVerifier(JWTConfiguration(keys: [.init(algorithm: .hs256, material: .secret(Keys.secret))]))
        let access = AccessControl(tokens: [], verifier: verifier)
        #expect(access.isEnabled)
        #expect(access.check(authorization: nil, needs: .read)?.status == 401)
    }
}
