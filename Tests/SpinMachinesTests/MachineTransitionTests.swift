import SpinMachines
import Testing

@Suite struct MachineTransitionTests {
    @Test func door_OpenIncrementsOpens_AndPropagatesDoorOpened() throws {
        let machine = try door()
        #expect(machine.initialState == MachineState(value: ["closed"], context: ["opens": 0, "code": "1234"]))
        let opened = try #require(machine.transition(machine.initialState, event("OPEN")))
        #expect(opened == MachineState(value: ["opened"], context: ["opens": 1, "code": "1234"]))
        #expect(opened.step.propagations == [MachinePropagation(gear: "doors", event: event("doorOpened"))])
        #expect(opened.step.entered == [["opened"]])
        let closed = try #require(machine.transition(opened, event("CLOSE")))
        let again = try #require(machine.transition(closed, event("OPEN")))
        #expect(again.context["opens"] == 2)
    }

    @Test func door_UnlockNeedsTheCode() throws {
        let machine = try door()
        let locked = try #require(machine.transition(machine.initialState, event("LOCK")))
        #expect(locked.value == ["locked"])
        #expect(machine.transition(locked, event("UNLOCK", ["code": "0000"])) == nil)
        #expect(machine.transition(locked, event("UNLOCK")) == nil)
        #expect(machine.transition(locked, event("UNLOCK", ["code": "1234"]))?.value == ["closed"])
    }

    @Test func anEventWithoutTransition_GivesNil() throws {
        let machine = try door()
        #expect(machine.transition(machine.initialState, event("CLOSE")) == nil)
        #expect(machine.transition(machine.initialState, event("NOPE")) == nil)
    }

    @Test func afterEvent_AppliesOnlyWhileItsStateIsActive() throws {
        let machine = try door()
        let opened = try #require(machine.transition(machine.initialState, event("OPEN")))
        let timeout = MachineEvent.after(state: ["opened"], delay: 300)
        #expect(machine.transition(opened, timeout)?.value == ["closed"])
        // A stale timer: the door was closed by hand before it fired.
        let closed = try #require(machine.transition(opened, event("CLOSE")))
        #expect(machine.transition(closed, timeout) == nil)
        // A delay the state does not have.
        #expect(machine.transition(opened, MachineEvent.after(state: ["opened"], delay: 301)) == nil)
    }

    @Test func finalState_AcceptsNoEvents() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "states": { "a": { "on": { "END": "done" } }, "done": { "type": "final" } } }
            """#)
        let done = try #require(machine.transition(machine.initialState, event("END")))
        #expect(done.value == ["done"])
        #expect(machine.transition(done, event("END")) == nil)
    }

    static let nested = #"""
        { "initial": "a",
          "context": { "n": 0 },
          "states": {
            "a": { "initial": "a1",
                   "entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "enter.a" } } ],
                   "exit":  [ { "type": "gear.propagate", "gear": "log", "event": { "type": "exit.a" } } ],
                   "on": { "GO": { "target": "b", "actions": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "go" } } ] },
                           "DEEP": ".a2",
                           "STAY": { "actions": [ { "type": "assign", "set": { "n": { "add": 1 } } } ] } },
                   "states": {
                     "a1": { "entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "enter.a1" } } ],
                             "exit":  [ { "type": "gear.propagate", "gear": "log", "event": { "type": "exit.a1" } } ],
                             "on": { "NEXT": "a2" } },
                     "a2": { "entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "enter.a2" } } ],
                             "on": { "GO": "#b.b2" } } } },
            "b": { "initial": "b1",
                   "entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "enter.b" } } ],
                   "states": {
                     "b1": { "entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "enter.b1" } } ],
                             "on": { "BACK": "#a" } },
                     "b2": { "on": { "BACK": "#a.a2" } } } } },
          "gears": { "log": {} } }
        """#

    @Test func nestedStates_ValueIsAnObject() throws {
        let machine = try makeMachine(Self.nested)
        #expect(machine.initialState.value == ["a", "a1"])
        #expect(machine.initialState.valueJSON == ["a": "a1"])
        let b = try #require(machine.transition(machine.initialState, event("GO")))
        #expect(b.value == ["b", "b1"])
        #expect(b.valueJSON == ["b": "b1"])
    }

    @Test func exitInnermostFirst_ThenActions_ThenEntryOutermostFirst() throws {
        let machine = try makeMachine(Self.nested)
        let b = machine.transition(machine.initialState, event("GO"))
        #expect(propagatedTypes(b) == ["exit.a1", "exit.a", "go", "enter.b", "enter.b1"])
        #expect(b?.step.entered == [["b"], ["b", "b1"]])
    }

    @Test func transitionsResolveFromTheInnermostState() throws {
        let machine = try makeMachine(Self.nested)
        // In a1, GO is a's transition; in a2, a2's own GO wins.
        let a2 = try #require(machine.transition(machine.initialState, event("NEXT")))
        #expect(a2.value == ["a", "a2"])
        #expect(propagatedTypes(a2) == ["exit.a1", "enter.a2"])
        #expect(machine.transition(a2, event("GO"))?.value == ["b", "b2"])
        #expect(propagatedTypes(machine.transition(a2, event("GO"))) == ["exit.a", "enter.b"])
    }

    @Test func childTarget_DoesNotLeaveTheParent() throws {
        let machine = try makeMachine(Self.nested)
        let a2 = machine.transition(machine.initialState, event("DEEP"))
        #expect(a2?.value == ["a", "a2"])
        #expect(propagatedTypes(a2) == ["exit.a1", "enter.a2"])
    }

    @Test func targetlessTransition_RunsActionsWithoutExitOrEntry() throws {
        let machine = try makeMachine(Self.nested)
        let stayed = try #require(machine.transition(machine.initialState, event("STAY")))
        #expect(stayed.value == ["a", "a1"])
        #expect(stayed.context["n"] == 1)
        #expect(stayed.step.entered.isEmpty)
        #expect(propagatedTypes(stayed).isEmpty)
    }

    @Test func targetingACompoundState_EntersItsInitialChild() throws {
        let machine = try makeMachine(Self.nested)
        let b = try #require(machine.transition(machine.initialState, event("GO")))
        let a = machine.transition(b, event("BACK"))
        #expect(a?.value == ["a", "a1"])
        #expect(propagatedTypes(a) == ["enter.a", "enter.a1"])
    }

    static let selfTargeting = #"""
        { "initial": "s", "context": { "entries": 0, "exits": 0 },
          "states": { "s": { "entry": [ { "type": "assign", "set": { "entries": { "add": 1 } } } ],
                             "exit": [ { "type": "assign", "set": { "exits": { "add": 1 } } } ],
                             "on": { "AGAIN": "s", "REENTER": { "target": "s", "reenter": true } } } } }
        """#

    /// XState v5, transition.test.ts "reenter": a transition to its own source does not
    /// leave it ("should not reenter a state when targeting itself without reenter")...
    @Test func selfTargetedTransition_WithoutReenter_NeitherExitsNorEnters() throws {
        let machine = try makeMachine(Self.selfTargeting)
        #expect(machine.initialState.context["entries"] == 1)
        let again = machine.transition(machine.initialState, event("AGAIN"))
        #expect(again?.context["entries"] == 1 && again?.context["exits"] == 0)
        #expect(again?.step.entered == [])
    }

    /// ... and `reenter: true` does ("should reenter a state when targeting itself with reenter: true").
    @Test func selfTargetedTransition_WithReenter_ExitsAndReenters() throws {
        let machine = try makeMachine(Self.selfTargeting)
        let again = machine.transition(machine.initialState, event("REENTER"))
        #expect(again?.context["entries"] == 2 && again?.context["exits"] == 1)
        #expect(again?.step.entered == [["s"]])
    }

    @Test func stateJSON_RoundTrips() throws {
        let machine = try makeMachine(Self.nested)
        let state = MachineState(value: ["a", "a2"], context: ["n": 3, "s": "x"])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = try encoder.encode(state)
        #expect(String(decoding: json, as: UTF8.self) == #"{"context":{"n":3,"s":"x"},"value":{"a":"a2"}}"#)
        let decoded = try JSONDecoder().decode(MachineState.self, from: json)
        #expect(decoded == state)
        #expect(machine.transition(decoded, event("GO"))?.value == ["b", "b2"])
        let flat = try JSONDecoder().decode(MachineState.self, from: Data(#"{"value":"closed","context":{"opens":1}}"#.utf8))
        #expect(flat == MachineState(value: ["closed"], context: ["opens": 1]))
    }

    @Test func event_IsAnObjectWithAStringType() throws {
        let decoded = try JSONDecoder().decode(MachineEvent.self, from: Data(#"{"type":"UNLOCK","code":"1234"}"#.utf8))
        #expect(decoded == event("UNLOCK", ["code": "1234"]))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(decoded), as: UTF8.self) == #"{"code":"1234","type":"UNLOCK"}"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MachineEvent.self, from: Data(#"{"code":1}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MachineEvent.self, from: Data(#"{"type":1}"#.utf8)) }
    }

    @Test func aStateWhoseValueWasChanged_OrMadeByAnotherMachine_IsReadByItsValue() throws {
        let machine = try door()
        var opened = try #require(machine.transition(machine.initialState, event("OPEN")))
        // The state remembers where its leaf was found; a changed value must win over that.
        opened.value = ["closed"]
        #expect(machine.transition(opened, event("CLOSE")) == nil)
        #expect(machine.transition(opened, event("OPEN"))?.value == ["opened"])
        // Another machine numbers its states otherwise: its states are read by their value.
        let other = try MachineDefinition(json: Array(#"""
            { "initial": "b", "states": { "a": {}, "b": { "on": { "GO": "c" } }, "c": { "on": { "GO": "a" } } } }
            """#.utf8), file: "other.json")
        let c = try #require(other.transition(other.initialState, event("GO")))
        #expect(c.value == ["c"])
        var foreign = c
        foreign.value = ["opened"]
        #expect(machine.transition(foreign, event("CLOSE"))?.value == ["closed"])
        #expect(machine.transition(c, event("OPEN")) == nil)
    }
}

import Foundation
