@testable import SpinServer
import Testing

struct GlobTests {
    @Test(arguments: [
        ("counter", "counter", true), ("counter", "counter2", false), ("counter", "counte", false),
        ("*", "", true), ("*", "anything", true),
        ("tenant-42-*", "tenant-42-", true), ("tenant-42-*", "tenant-42-door", true), ("tenant-42-*", "tenant-4-door", false),
        ("*-door", "front-door", true), ("*-door", "front-doors", false),
        ("a*b*c", "abc", true), ("a*b*c", "aXbYc", true), ("a*b*c", "acb", false), ("a*b*c", "abcbc", true),
        ("a*a", "a", false), ("a*a", "aa", true), ("**", "x", true), ("a**b", "ab", true),
    ])
    func glob_MatchesAnyRunWhereAStarIs(pattern: String, name: String, matches: Bool) {
        #expect(Glob(pattern).matches(name) == matches, "\(pattern) ~ \(name)")
    }
}

struct PermissionsTests {
    @Test func globalScopes_CoverEverySpinAndGear_StrongerImplyingWeaker() {
        let writer = Permissions(scopes: [.write])
        #expect(writer.allows(.read, spin: "any") && writer.allows(.write, spin: "any"))
        #expect(!writer.allows(.admin, spin: "any"))
        #expect(writer.allowsReading(gear: "auth"))
        #expect(writer.allowsEverywhere(.read) && !writer.allowsEverywhere(.admin))
        #expect(Permissions.everything.allows(.admin, spin: "x"))
    }

    @Test func grants_WriteImpliesRead_AdminImpliesBoth_OnlyOnMatchingNames() {
        let permissions = Permissions(scopes: [], grants: Grants(spinRead: ["counter"], spinWrite: ["tenant-42-*"],
                                                                 spinAdmin: ["ops-*"], gearRead: ["auth"]))
        #expect(permissions.allows(.read, spin: "counter") && !permissions.allows(.write, spin: "counter"))
        #expect(permissions.allows(.read, spin: "tenant-42-a") && permissions.allows(.write, spin: "tenant-42-a"))
        #expect(!permissions.allows(.admin, spin: "tenant-42-a"))
        #expect(permissions.allows(.read, spin: "ops-1") && permissions.allows(.write, spin: "ops-1")
                && permissions.allows(.admin, spin: "ops-1"))
        #expect(!permissions.allows(.read, spin: "levels"))
        #expect(permissions.allowsReading(gear: "auth") && !permissions.allowsReading(gear: "doors"))
        // Grants on some Spins are not a global scope.
        #expect(!permissions.allowsEverywhere(.read))
    }
}

struct AccessControlTests {
    @Test func aToken_IsItsScopesAndGrants_PlusTheRulesOfItsSubject() throws {
        let access = AccessControl(tokens: [
            AccessToken(token: "device", scopes: [], subject: "device-7", grants: Grants(spinWrite: ["device-7"])),
            AccessToken(token: "anonymous", scopes: [.read]),
        ], rules: [
            AccessRule(subject: "device-*", grants: Grants(gearRead: ["alarms"])),
            AccessRule(subject: "ops", grants: Grants(spinAdmin: ["*"])),
        ])
        let device = try access.authenticate(authorization: "Bearer device").get()
        #expect(device.subject == "device-7")
        #expect(device.permissions.allows(.write, spin: "device-7") && !device.permissions.allows(.read, spin: "device-8"))
        #expect(device.permissions.allowsReading(gear: "alarms"))
        #expect(!device.permissions.allows(.admin, spin: "device-7"))
        let anonymous = try access.authenticate(token: "anonymous").get()
        // A global read scope reads every Gear; no subject, so no rule applies.
        #expect(anonymous.subject == nil && anonymous.permissions.allowsReading(gear: "alarms"))
        #expect(!anonymous.permissions.allows(.write, spin: "x"))
    }

    @Test func badCredentials_Are401NamingWhy_AndNoAuthenticationIsAnyone() throws {
        let access = AccessControl(tokens: [AccessToken(token: "t", scopes: [.read])])
        #expect(access.authenticate(authorization: nil).failure?.message.contains("needs a bearer token") == true)
        #expect(access.authenticate(authorization: "Basic t").failure?.message.contains("Bearer <token>") == true)
        #expect(access.authenticate(authorization: "Bearer u").failure?.message == "the bearer token is not valid")
        #expect(access.authenticate(authorization: "Bearer u").failure?.status == 401)
        #expect(try AccessControl(tokens: []).authenticate(authorization: nil).get() == .anyone)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
