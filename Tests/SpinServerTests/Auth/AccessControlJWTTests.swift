import Foundation
import Testing
@testable import SpinServer

/// `AccessControl` with a `TokenVerifier`: static tokens as before, JWTs verified into
/// identities (subject, scopes, grants from their claims and the rules, expiry), a refused
/// JWT a 401 that says why.
@Suite struct AccessControlJWTTests {
    typealias Keys = JWTTestKeys

    static func access(leeway: Int = 30) throws -> AccessControl {
        let verifier = try TokenVerifier(JWTConfiguration(keys: [.init(algorithm: .hs256, material: .secret(Keys.secret))],
                                                          leewaySeconds: leeway))
        return AccessControl(tokens: [AccessToken(token: "static-admin", scopes: [.admin])],
                             rules: [AccessRule(subject: "device-*", grants: Grants(gearRead: ["alarms"]))], verifier: verifier)
    }

    static func jwt(_ claims: [String: Keys.Claim]) async throws -> String {
        try await Keys.sign(["exp": .number(Date().timeIntervalSince1970 + 600)].merging(claims) { $1 }, algorithm: .hs256)
    }

    @Test func aStaticToken_StillWorks_BesideJWT() throws {
        #expect(try Self.access().authenticate(authorization: "Bearer static-admin").get().permissions.allowsEverywhere(.admin))
        #expect(try Self.access().authenticate(authorization: "Bearer other").failure?.message == "the bearer token is not valid")
    }

    @Test func aVerifiedJWT_IsItsSubject_ScopeClaim_AndSpinAndGearClaims_PlusTheRulesOfItsSubject() async throws {
        let access = try Self.access()
        let reader = try access.authenticate(token: try await Self.jwt(["scope": .string("read")])).get()
        #expect(reader.permissions.allowsEverywhere(.read) && !reader.permissions.allowsEverywhere(.write))
        let device = try access.authenticate(token: try await Self.jwt([
            "sub": .string("device-7"),
            "spin": .object(["write": ["device-7"]]),
        ])).get()
        #expect(device.subject == "device-7")
        #expect(device.permissions.allows(.write, spin: "device-7") && !device.permissions.allows(.read, spin: "device-8"))
        #expect(device.permissions.allowsReading(gear: "alarms"))
        let nothing = try access.authenticate(token: try await Self.jwt([:])).get()
        #expect(!nothing.permissions.allows(.read, spin: "counter"))
    }

    @Test func aJWTsIdentity_ExpiresAtItsExp_AcceptedUntilTheLeewayHasPassed() async throws {
        let exp = (Date().timeIntervalSince1970 + 600).rounded()
        let identity = try Self.access(leeway: 7).authenticate(token: try await Self.jwt(["exp": .number(exp)])).get()
        #expect(identity.expiresAt == exp)
        #expect(identity.validUntil == exp + 7)
    }

    @Test func aRefusedJWT_Is401_WithTheReason() async throws {
        let expired = try await Keys.sign(["exp": .number(Date().timeIntervalSince1970 - 3600), "scope": .string("admin")],
                                          algorithm: .hs256)
        let error = try #require(try Self.access().authenticate(authorization: "Bearer \(expired)").failure)
        #expect(error.status == 401)
        #expect(error.code == "unauthorized")
        #expect(error.message.hasPrefix("the token expired at "))
    }

    @Test func withOnlyJWTConfigured_AuthenticationIsOn() throws {
        let verifier = try TokenVerifier(JWTConfiguration(keys: [.init(algorithm: .hs256, material: .secret(Keys.secret))]))
        let access = AccessControl(tokens: [], verifier: verifier)
        #expect(access.isEnabled)
        #expect(access.authenticate(authorization: nil).failure?.status == 401)
    }
}
