import SpinMachines
import Testing

/// `"version"` and `"migrations"`: what a file may say, and how a state of an older
/// version becomes one of the newer (`MachineDefinition.migrate`, `upgrade`).
@Suite struct MachineVersionTests {
    static let light = #"""
        { "id": "light", "initial": "green", "context": { "cycles": 0, "legacy": true },
          "states": { "green": { "on": { "NEXT": "yellow" } }, "yellow": { "on": { "NEXT": "red" } },
                      "red": { "on": { "NEXT": "green" } } } }
        """#

    /// Version 2: `green` became `lit.go` (inside a compound), `yellow` the compound `slow`
    /// (entered through its initial `amber`), a context key renamed, one removed, one set
    /// and one new with its initial value.
    static let lightV2 = #"""
        { "id": "light", "version": 2, "initial": "lit", "context": { "rounds": 0, "honks": 5, "mode": "day" },
          "states": {
            "lit": { "initial": "go", "states": { "go": { "on": { "NEXT": "#light.slow" } } } },
            "slow": { "initial": "amber", "states": { "amber": { "on": { "NEXT": "#light.red", "FLASH": "flash" } }, "flash": {} } },
            "red": { "on": { "NEXT": "lit" } } },
          "migrations": { "1": { "states": { "green": "lit.go", "yellow": "slow" },
                                 "context": { "rename": { "cycles": "rounds" }, "remove": ["legacy"],
                                              "set": { "mode": "night" } } } } }
        """#

    @Test func aFileWithoutVersion_IsVersionOne() throws {
        let machine = try makeMachine(Self.light)
        #expect(machine.version == 1)
        #expect(machine.migrations.isEmpty)
    }

    @Test func aMigration_MapsStatesByTheirLongestPrefix_AndChangesTheContext() throws {
        let v2 = try makeMachine(Self.lightV2)
        #expect(v2.version == 2)
        let green = MachineState(value: ["green"], context: ["cycles": .number(3), "legacy": .bool(true)])
        let migrated = try v2.migrate(green, fromVersion: 1)
        #expect(migrated.value == ["lit", "go"])
        #expect(migrated.context == ["rounds": .number(3), "mode": .string("night"), "honks": .number(5)])
        // A compound state mapped to is entered through its initial state.
        let yellow = try v2.migrate(MachineState(value: ["yellow"], context: [:]), fromVersion: 1)
        #expect(yellow.value == ["slow", "amber"])
        // A state whose path is the same in both versions needs no entry.
        #expect(try v2.migrate(MachineState(value: ["red"], context: [:]), fromVersion: 1).value == ["red"])
        // The migrated state takes the newer version's events.
        #expect(v2.transition(migrated, event("NEXT"))?.value == ["slow", "amber"])
    }

    @Test func aStateNoMigrationMaps_FailsNamingThePathBothVersionsAndTheWayForward() throws {
        let v2 = try makeMachine(Self.lightV2.replacingOccurrences(of: #""yellow": "slow""#, with: #""red": "red""#))
        do {
            _ = try v2.migrate(MachineState(value: ["yellow"], context: [:]), fromVersion: 1)
            Issue.record("an unmapped state migrated")
        } catch {
            #expect(error.from == 1 && error.to == 2 && error.path == "yellow")
            #expect(error.description == #"version 1 → 2: its state "yellow" (version 1) is not a state of version 2 (test.json), and no migration maps it: map it in "migrations": {"1": {"states": {"yellow": "<a state of version 2>"}}}"#)
        }
    }

    @Test func historyRecords_AreMapped_AndOneOfAStateThatIsGoneFails() throws {
        let v1 = #"""
            { "initial": "a", "states": {
                "a": { "initial": "x", "states": { "x": { "on": { "N": "y" } }, "y": {}, "h": { "type": "history" } },
                       "on": { "OUT": "b" } },
                "b": { "on": { "BACK": "a.h" } } } }
            """#
        let v2 = #"""
            { "version": 2, "initial": "alpha", "states": {
                "alpha": { "initial": "x", "states": { "x": { "on": { "N": "y" } }, "y": {}, "h": { "type": "history" } },
                           "on": { "OUT": "b" } },
                "b": { "on": { "BACK": "alpha.h" } } },
              "migrations": { "1": { "states": { "a": "alpha" } } } }
            """#
        let old = try makeMachine(v1)
        let new = try makeMachine(v2)
        var state = try #require(old.transition(old.initialState, event("N")))
        state = try #require(old.transition(state, event("OUT")))
        #expect(state.history == ["a": ["a", "y"]])
        let migrated = try new.migrate(state, fromVersion: 1)
        #expect(migrated.value == ["b"] && migrated.history == ["alpha": ["alpha", "y"]])
        #expect(new.transition(migrated, event("BACK"))?.value == ["alpha", "y"])

        let unmapped = try makeMachine(v2.replacingOccurrences(of: #""a": "alpha""#, with: #""b": "b""#))
        #expect(throws: MachineMigrationFailure.self) { try unmapped.migrate(state, fromVersion: 1) }
    }

    @Test func aPendingDelayedRaise_ThatNoStateTakes_Fails() throws {
        let v2 = try makeMachine(#"{ "version": 2, "initial": "a", "states": { "a": { "on": { "GO": "a" } } } }"#)
        let waiting = MachineState(value: ["a"], context: [:],
                                   scheduled: [MachineScheduledEvent(key: 1, delay: 500, event: event("TIMEOUT"))])
        do {
            _ = try v2.migrate(waiting, fromVersion: 1)
            Issue.record("a delayed raise nothing takes migrated")
        } catch {
            #expect(error.reason.contains(#"a delayed raise of "TIMEOUT" is pending (key 1)"#))
        }
        var taken = waiting
        taken.scheduled = [MachineScheduledEvent(key: 1, delay: 500, event: event("GO"))]
        #expect(try v2.migrate(taken, fromVersion: 1).scheduled.count == 1)
    }

    @Test func regionsOfAParallelState_MapEachOnItsOwn_AndTwoLeavesOutsideOneAreRefused() throws {
        let v2 = try makeMachine(#"""
            { "version": 2, "type": "parallel", "states": {
                "bold": { "initial": "off", "states": { "off": { "on": { "B": "on" } }, "on": {} } },
                "italic": { "initial": "no", "states": { "no": { "on": { "I": "yes" } }, "yes": {} } } },
              "migrations": { "1": { "states": { "italic.off": "italic.no", "italic.on": "italic.yes" } } } }
            """#)
        let state = MachineState(leaves: [["bold", "on"], ["italic", "on"]], context: [:])
        #expect(try v2.migrate(state, fromVersion: 1).leaves == [["bold", "on"], ["italic", "yes"]])

        let flat = try makeMachine(#"{ "version": 2, "initial": "a", "states": { "a": { "on": { "N": "b" } }, "b": {} } }"#)
        #expect(throws: MachineMigrationFailure.self) {
            try flat.migrate(MachineState(leaves: [["a"], ["b"]], context: [:]), fromVersion: 1)
        }
    }

    @Test func anUpgrade_GoesThroughTheVersionBetween_WhenOnlyItMigratesFromTheOldest() throws {
        let v2 = try makeMachine(#"""
            { "version": 2, "initial": "b", "states": { "b": {} }, "migrations": { "1": { "states": { "a": "b" } } } }
            """#)
        let v3 = try makeMachine(#"""
            { "version": 3, "initial": "c", "states": { "c": {} }, "migrations": { "2": { "states": { "b": "c" } } } }
            """#)
        let (state, versions) = try v3.upgrade(MachineState(value: ["a"], context: [:]), from: 1, through: [2: v2])
        #expect(state.value == ["c"] && versions == [1, 2, 3])
        // Without the stored version 2 there is no way from "a".
        #expect(throws: MachineMigrationFailure.self) {
            try v3.upgrade(MachineState(value: ["a"], context: [:]), from: 1, through: [:])
        }
    }

    @Test func migrationIssues_NameOldPathsTheStoredVersionLacks() throws {
        let v1 = try makeMachine(Self.light)
        let v2 = try makeMachine(Self.lightV2.replacingOccurrences(of: #""green": "lit.go""#, with: #""gren": "lit.go""#))
        #expect(v2.migrationIssues(from: v1).map(\.description)
            == [#"test.json: migrations.1.states.gren: version 1 has no state "gren" (did you mean "green"?)"#])
        #expect(try makeMachine(Self.lightV2).migrationIssues(from: v1).isEmpty)
    }

    @Test(arguments: [
        (#"{ "version": 0, "initial": "a", "states": { "a": {} } }"#,
         [#"test.json: version: bad value: a version is a whole number from 1 (the first version is 1)"#]),
        (#"{ "version": 1.5, "initial": "a", "states": { "a": {} } }"#,
         [#"test.json: version: bad value: a version is a whole number from 1 (the first version is 1)"#]),
        (#"{ "version": 2, "initial": "a", "states": { "a": {} }, "migrations": { "2": {} } }"#,
         [#"test.json: migrations.2: bad value: a migration starts from an older version than this file's ("version": 2)"#]),
        (#"{ "version": 2, "initial": "a", "states": { "a": {} }, "migrations": { "one": {} } }"#,
         [#"test.json: migrations.one: bad value: a migration is keyed by the version it starts from, a whole number from 1"#]),
        (#"{ "version": 2, "initial": "a", "states": { "a": {} }, "migrations": { "1": { "states": { "x": "b" } } } }"#,
         [#"test.json: migrations.1.states.x: unknown state "b""#]),
        (#"{ "version": 2, "initial": "alpha", "states": { "alpha": {} }, "migrations": { "1": { "states": { "x": "alpa" } } } }"#,
         [#"test.json: migrations.1.states.x: unknown state "alpa" (did you mean "alpha"?)"#]),
        (#"{ "version": 2, "initial": "a", "states": { "a": {} }, "migrations": { "1": { "state": {} } } }"#,
         [#"test.json: migrations.1.state: unknown key"#]),
        (#"{ "version": 2, "initial": "a", "states": { "a": {} }, "migrations": { "1": { "context": { "remove": "k" } } } }"#,
         [#"test.json: migrations.1.context.remove: expected an array of context keys"#]),
        (#"{ "version": 2, "initial": "a", "states": { "a": {} }, "migrations": { "1": { "context": { "rename": { "k": "j" }, "set": { "k": 1 } } } } }"#,
         [#"test.json: migrations.1.context.set.k: bad value: "k" is renamed too: set the new name, "j""#]),
        (#"{ "version": 2, "initial": "p", "states": { "p": { "type": "parallel", "states": { "r": { "initial": "a", "states": { "a": {} } } } } }, "migrations": { "1": { "states": { "x": "p" } } } }"#,
         [#"test.json: migrations.1.states.x: bad value: "p" is a parallel state: a migration maps to a state a machine can be in (a leaf, or a compound state, entered by its initial states)"#]),
    ] as [(String, [String])])
    func aBadVersionOrMigration_IsNamed(json: String, expected: [String]) {
        #expect(issueLines(json) == expected)
    }
}
