import SpinCore
import SpinMachines
import Testing

/// The JSON Schemas a machine derives from its definition.
struct MachineSchemaTests {
    private let door = """
        { "id": "door", "initial": "closed", "context": { "opens": 0 },
          "states": {
            "closed": { "on": { "OPEN": "opened", "LOCK": "locked" } },
            "opened": { "on": { "CLOSE": "closed" } },
            "locked": { "on": { "UNLOCK": "closed" } } } }
        """

    @Test func events_AreTheOnTypes_PlusAnyOtherTypeAsIgnored() throws {
        let machine = try makeMachine(door)
        #expect(machine.eventTypes == ["CLOSE", "LOCK", "OPEN", "UNLOCK"])
        guard case .array(let branches)? = machine.eventSchema["oneOf"] else { Issue.record("no oneOf"); return }
        #expect(branches.dropLast().map { $0["properties"]?["type"]?["const"] }
            == ["CLOSE", "LOCK", "OPEN", "UNLOCK"].map(JSONSchema.JSON.string))
        // The last branch: a type the machine does not know is accepted (and ignored),
        // but not one of the machine's own (`xstate.`), which a client may not send.
        let other = try #require(branches.last)
        #expect(other["properties"]?["type"]?["not"]?["anyOf"]
            == .array([.object([.init("enum", .array(machine.eventTypes.map(JSONSchema.JSON.string)))]),
                       .object([.init("pattern", .string("^xstate\\."))])]))
    }

    /// A type the list does not name is not always ignored: a `prefix.*` or `*`
    /// transition may take it, and the schema says so (a machine of descriptors only too).
    @Test func otherTypes_AreSaidToBeTakenByDescriptors_WhereTheMachineHasThem() throws {
        let door = try makeMachine(door)
        let plain = try #require(door.eventSchema["oneOf"].flatMap { if case .array(let b) = $0 { b.last } else { nil } })
        #expect(plain["description"] == .string("A type no state of the machine has a transition for: accepted and ignored (no_transition)."))
        let mouse = try makeMachine(#"{ "initial": "a", "states": { "a": { "on": { "mouse.*": "b" } }, "b": {} } }"#)
        guard case .string(let text)? = mouse.eventSchema["description"] else { Issue.record("no description"); return }
        #expect(text.contains("prefix.*") && !text.contains("has no transitions"))
    }

    /// Leaves given in any order are kept in name order, so that the same configuration
    /// is one state however it was made.
    @Test func leaves_AreKeptInNameOrder_WhateverOrderTheyAreGivenIn() {
        let state = MachineState(leaves: [["p", "z"], ["p", "a"]], context: [:])
        #expect(state.leaves == [["p", "a"], ["p", "z"]])
        #expect(state == MachineState(leaves: [["p", "a"], ["p", "z"]], context: [:]))
    }

    @Test func theState_IsValueAndContext_ValueOneOfTheTopLevelStates() throws {
        let state = try makeMachine(door).stateSchema
        #expect(state["required"] == .array([.string("value"), .string("context")]))
        #expect(state["properties"]?["value"]?["enum"] == .array(["closed", "locked", "opened"].map(JSONSchema.JSON.string)))
    }

    @Test func aNestedState_MakesValueAnObjectToo() throws {
        let machine = try makeMachine("""
            { "initial": "a", "states": { "a": { "on": { "GO": "b" } },
              "b": { "initial": "x", "states": { "x": { "on": { "BACK": "#a" } } } } } }
            """)
        guard case .array(let forms)? = machine.stateSchema["properties"]?["value"]?["oneOf"] else {
            Issue.record("value is not oneOf"); return
        }
        #expect(forms.map { $0["type"] } == [.string("string"), .string("object")])
    }

    /// A parallel root's value is the object of its regions, atomic regions too; a lone
    /// atomic region is its name.
    @Test func aParallelRoot_MakesValueAnObject() throws {
        let machine = try makeMachine(#"{ "type": "parallel", "states": { "a": {}, "b": { "initial": "x", "states": { "x": {} } } } }"#)
        #expect(machine.stateSchema["properties"]?["value"]?["type"] == .string("object"))
        #expect(machine.stateSchema["properties"]?["value"]?["enum"] == nil)
        let lone = try makeMachine(#"{ "type": "parallel", "states": { "a": {} } }"#)
        #expect(lone.stateSchema["properties"]?["value"]?["oneOf"] != nil)
    }
}
