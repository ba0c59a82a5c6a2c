import Foundation
import Testing
@testable import SpinServer

/// The config's `kinds`: templates of Spins made at run time, checked at load with the
/// key path of what is wrong.
@Suite struct SpinServerConfigurationKindsTests {
    typealias Loading = SpinServerConfigurationLoadingTests
    typealias Pattern = SpinServerConfiguration.NamePattern

    static let files = ["Config/machines/door.json": SpinServerConfigurationMachineTests.door]

    @Test func kinds_OfAMachineAndOfASwiftKind_Load() throws {
        let loaded = try Loading.make(#"""
            { "kinds": [
                { "name": "door", "machine": "machines/door.json", "names": "door-*", "gears": { "doors": "doors-{key}" },
                  "create": "onEvent" },
                { "name": "feature", "kind": "feature", "names": "feature-*", "gear": "auth-{key}" } ] }
            """#, files: Self.files)
        let kinds = loaded.configuration.kinds
        #expect(kinds.map(\.name) == ["door", "feature"])
        #expect(kinds[0].create == .onEvent && kinds[1].create == .explicit)
        #expect(kinds[0].gears(of: "door-42") == ["doors": "doors-42"])
        #expect(kinds[1].gears(of: "feature-42") == ["gear": "auth-42"])
        #expect(kinds[0].gears(of: "window-1") == nil)
        // No `spins` but kinds: not the "hosts nothing" warning.
        #expect(!loaded.warnings.contains { $0.contains("hosts nothing") })
    }

    @Test func aMachineGearWithoutTemplate_IsOneGearForEveryInstance_AndNeedsNoLineInGears() throws {
        let loaded = try Loading.make(#"""
            { "kinds": [ { "name": "door", "machine": "machines/door.json" } ] }
            """#, files: Self.files)
        let door = try #require(loaded.configuration.kinds.first)
        #expect(door.fixedGears == ["doors"])
        #expect(door.gears(of: "front") == ["doors": "doors"])
        #expect(door.key(of: "anything") == "")
    }

    @Test(arguments: [
        (#"{ "name": "door", "machine": "machines/door.json", "create": "onEvent" }"#,
         #"kinds[0].create: "onEvent" makes a Spin for any name "names" matches: give "names" a '*' ("door-*")"#),
        (#"{ "name": "door", "machine": "machines/door.json", "gears": { "doors": "doors-{key}" } }"#,
         #"kinds[0].gears.doors: {key} is what the '*' of "names" matched: give the kind "names" with a '*'"#),
        (#"{ "name": "door", "machine": "machines/door.json", "names": "door-*", "gears": { "windows": "w-{key}" } }"#,
         #"kinds[0].gears.windows: machine machines/door.json declares no Gear "windows" (it declares: doors)"#),
        (#"{ "name": "door", "machine": "machines/door.json", "names": "a*b*" }"#,
         #"kinds[0].names: "a*b*" is not a name pattern: use letters, digits, '.', '_' or '-' with at most one '*' ("door-*")"#),
        (#"{ "name": "door", "machine": "machines/door.json", "names": "d-*", "gears": { "doors": "doors {key}" } }"#,
         #"kinds[0].gears.doors: "doors {key}" is not a Gear name: use letters, digits, '.', '_' or '-', and {key} for the instance's key"#),
        (#"{ "name": "f", "kind": "feature" }"#,
         #"kinds[0].gear: missing: kind "feature" attaches to a Gear; name it ("gear": "auth-{key}")"#),
        (#"{ "name": "c", "kind": "counter", "gear": "x" }"#,
         #"kinds[0].gear: kind "counter" does not attach to a Gear: remove it"#),
        (#"{ "name": "c", "kind": "countr" }"#,
         #"kinds[0].kind: unknown kind "countr" (known: counter, feature, levels, router, or give "machine")"#),
        (#"{ "name": "c", "kind": "counter", "create": "always" }"#,
         #"kinds[0].create: unknown choice "always" (use explicit or onEvent)"#),
        (#"{ "name": "c", "kind": "counter", "color": "red" }"#,
         #"kinds[0].color: unknown key (known here: name, machine, kind, names, gears, gear, create)"#),
    ])
    func aBadKind_IsRefusedNamingItsKey(entry: String, message: String) {
        let error = Loading.error(#"{ "kinds": [ \#(entry) ] }"#, files: Self.files)
        #expect(error?.description == "Config/spin-server.json: \(message)")
    }

    @Test func twoOnEventKinds_WhoseNamesOverlap_AreRefused() {
        let error = Loading.error(#"""
            { "kinds": [ { "name": "a", "kind": "counter", "names": "user-*", "create": "onEvent" },
                         { "name": "b", "kind": "levels", "names": "*-admin", "create": "onEvent" } ] }
            """#)
        #expect(error?.description.contains(#"kinds[1].names: "*-admin" and kinds[0].names "user-*" both match some names"#) == true)
        // Explicit kinds may overlap: PUT names the kind.
        #expect(Loading.error(#"""
            { "kinds": [ { "name": "a", "kind": "counter", "names": "user-*" }, { "name": "b", "kind": "levels", "names": "user-*" } ] }
            """#) == nil)
    }

    @Test func aGearListedForAKind_IsNotAnUnusedGear() {
        #expect(Loading.error(#"""
            { "kinds": [ { "name": "door", "machine": "machines/door.json" } ], "gears": [ { "name": "doors" } ] }
            """#, files: Self.files) == nil)
    }

    @Test func namePattern_GivesTheKeyTheStarMatched() {
        let pattern = Pattern("door-*")
        #expect(pattern?.key(of: "door-42") == "42")
        #expect(pattern?.key(of: "door-") == "")
        #expect(pattern?.key(of: "doo") == nil)
        #expect(Pattern("*-door")?.key(of: "front-door") == "front")
        #expect(Pattern("a*z")?.key(of: "az") == "")
        #expect(Pattern("a*z")?.key(of: "a") == nil)
        #expect(Pattern("exact")?.key(of: "exact") == "")
        #expect(Pattern("exact")?.key(of: "exactly") == nil)
        #expect(Pattern("a*b*") == nil && Pattern("") == nil && Pattern("a/b*") == nil)
    }

    @Test func namePattern_OverlapsWhenSomeNameMatchesBoth() {
        func overlaps(_ a: String, _ b: String) -> Bool { Pattern(a)!.overlaps(Pattern(b)!) }
        #expect(overlaps("user-*", "*-admin"))       // user-x-admin
        #expect(overlaps("user-*", "us*"))
        #expect(!overlaps("user-*", "order-*"))
        #expect(!overlaps("*-a", "*-b"))
        #expect(overlaps("door", "d*"))
        #expect(!overlaps("door", "w*"))
        #expect(overlaps("door", "door") && !overlaps("door", "doors"))
    }
}
