import Foundation
import SpinMachines
import Testing

/// History states, re-expressed from XState v5's `packages/core/test/history.test.ts`
/// (statelyai/xstate), describe "history states": each test names the test its machine
/// comes from.
@Suite struct MachineHistoryTests {
    static let power = #"""
        { "initial": "on",
          "states": {
            "on": { "initial": "first",
                    "states": { "first": { "on": { "SWITCH": "second" } }, "second": { "on": { "SWITCH": "third" } }, "third": {},
                                "hist": { "type": "history", "history": "shallow" }, "H": { "type": "history" } },
                    "on": { "POWER": "off" } },
            "off": { "on": { "POWER": "on.hist", "H_POWER": "on.H", "FRESH": "on" } } } }
        """#

    /// "should go to the most recently visited state (explicit shallow history type)" and
    /// "(no explicit history type)".
    @Test func aHistoryTarget_GoesToTheMostRecentlyVisitedState() throws {
        let machine = try makeMachine(Self.power)
        let second = try #require(machine.transition(machine.initialState, event("SWITCH")))
        let off = try #require(machine.transition(second, event("POWER")))
        #expect(off.history == ["on": ["on", "second"]])
        #expect(machine.transition(off, event("POWER"))?.value == ["on", "second"])
        #expect(machine.transition(off, event("H_POWER"))?.value == ["on", "second"])
        // A plain target still enters the initial child.
        #expect(machine.transition(off, event("FRESH"))?.value == ["on", "first"])
    }

    /// "should go to the initial state when no history present (explicit shallow history type)".
    @Test func withoutARecord_TheParentsInitialStateIsEntered() throws {
        let machine = try makeMachine(Self.power)
        let off = MachineState(value: ["off"], context: [:])
        #expect(machine.transition(off, event("POWER"))?.value == ["on", "first"])
    }

    /// "should go to the default history target when no history present" (`target`).
    @Test func withoutARecord_TheHistorysTargetIsEntered() throws {
        let machine = try makeMachine(#"""
            { "initial": "off",
              "states": {
                "off": { "on": { "POWER": "on.hist" } },
                "on": { "initial": "first", "on": { "POWER": "off" },
                        "states": { "first": {}, "second": {}, "hist": { "type": "history", "target": "second" } } } } }
            """#)
        #expect(machine.transition(machine.initialState, event("POWER"))?.value == ["on", "second"])
    }

    static let deep = #"""
        { "initial": "off",
          "states": {
            "off": { "on": { "POWER": "on.hist", "DEEP_POWER": "on.deepHistory" } },
            "on": { "initial": "first", "on": { "POWER": "off", "DEEP_POWER": "off" },
                    "states": {
                      "first": { "on": { "SWITCH": "second" } },
                      "second": { "initial": "A", "states": { "A": { "on": { "INNER": "B" } }, "B": {} } },
                      "hist": { "type": "history" },
                      "deepHistory": { "type": "history", "history": "deep" } } } } }
        """#

    /// describe "deep history states": "should go to the shallow history" (the child,
    /// entered at its initial state) and "should go to the deep history (explicit)".
    @Test func shallowEntersTheRecordedChild_DeepTheRecordedLeaf() throws {
        let machine = try makeMachine(Self.deep)
        var state = machine.initialState
        for type in ["POWER", "SWITCH", "INNER", "POWER"] { state = try #require(machine.transition(state, event(type))) }
        #expect(state.value == ["off"])
        #expect(machine.transition(state, event("POWER"))?.value == ["on", "second", "A"])
        #expect(machine.transition(state, event("DEEP_POWER"))?.value == ["on", "second", "B"])
    }

    /// The record is part of the state's JSON (as XState's `historyValue` is of its
    /// snapshot), so that a state read back, or replayed, goes where the original would.
    @Test func theRecord_RoundTripsThroughJSON() throws {
        let machine = try makeMachine(Self.power)
        let second = try #require(machine.transition(machine.initialState, event("SWITCH")))
        let off = try #require(machine.transition(second, event("POWER")))
        let json = try JSONEncoder().encode(off)
        #expect(String(decoding: json, as: UTF8.self).contains(#""history":{"on":"on.second"}"#))
        let decoded = try JSONDecoder().decode(MachineState.self, from: json)
        #expect(decoded == off)
        #expect(machine.transition(decoded, event("POWER"))?.value == ["on", "second"])
        // No record, no member: the JSON of a machine without history is as before.
        #expect(!String(decoding: try JSONEncoder().encode(machine.initialState), as: UTF8.self).contains("history"))
    }

    @Test func historyStates_AreValidated() {
        #expect(issueLines(#"""
            { "initial": "a",
              "states": { "a": { "initial": "a1", "on": { "GO": "b" },
                                 "states": { "a1": {}, "h": { "type": "history", "history": "sideways", "target": "#b", "on": {} } } },
                          "b": { "on": { "BACK": "a.h" } },
                          "top": { "type": "history" } } }
            """#) == [
                #"test.json: states.a.states.h.on: unknown key"#,
                #"test.json: states.a.states.h.history: expected "shallow" or "deep""#,
                #"test.json: states.a.states.h.target: bad value: a history state's target is inside its parent"#,
            ])
        // A history state that is its parent's initial state names its target (without one
        // it would stand for itself: the check of such a file once recursed without end);
        // and a target is a state, not another history state.
        #expect(issueLines(#"""
            { "initial": "foo", "states": { "foo": { "on": { "NEXT": "bar" } },
              "bar": { "initial": "baz", "states": { "baz": { "type": "history" }, "qwe": {} } } } }
            """#) == [
                #"test.json: states.bar.states.baz: bad value: a history state that is its parent's initial state needs a "target": the state entered while the parent has no history yet"#,
            ])
        #expect(issueLines(#"""
            { "initial": "a", "states": { "a": { "initial": "x", "on": { "GO": "a.h1" },
              "states": { "x": {}, "h1": { "type": "history", "target": "h2" }, "h2": { "type": "history", "target": "h1" } } } } }
            """#) == [
                #"test.json: states.a.states.h1.target: bad value: a history state's target is a state, not another history state"#,
                #"test.json: states.a.states.h2.target: bad value: a history state's target is a state, not another history state"#,
            ])
        #expect(issueLines(#"""
            { "initial": "a", "states": { "a": { "initial": "x", "on": { "GO": "a.h" },
              "states": { "x": {}, "h": { "type": "history", "target": "h" } } } } }
            """#) == [
                #"test.json: states.a.states.h.target: bad value: a history state's target is a state, not the history state itself"#,
            ])
    }

    /// history.test.ts, "should go to the configured default target when a history state
    /// is the initial state of the machine".
    @Test func aHistoryStateAsTheMachinesInitialState_StartsInItsTarget() throws {
        let machine = try makeMachine(#"""
            { "initial": "foo", "states": { "foo": { "type": "history", "target": "bar" }, "bar": {} } }
            """#)
        #expect(machine.initialState.value == ["bar"])
    }

    /// history.test.ts, "should go to the configured default target when a history state
    /// is the initial state of the transition's target"; once `bar` was left in `other`,
    /// entering it again restores that.
    @Test func aHistoryStateAsTheTargetsInitialState_EntersItsTarget_OrWhatWasRecorded() throws {
        let machine = try makeMachine(#"""
            { "initial": "foo", "gears": { "log": {} },
              "states": { "foo": { "on": { "NEXT": "bar" } },
                          "bar": { "initial": "baz", "on": { "MOVE": ".other", "LEAVE": "foo" },
                                   "states": { "baz": { "type": "history", "target": "qwe" },
                                               "qwe": { "entry": [ \#(log("enter qwe")) ] }, "other": {} } } } }
            """#)
        let entered = try #require(machine.transition(machine.initialState, event("NEXT")))
        #expect(entered.value == ["bar", "qwe"])
        #expect(entered.step.entered == [["bar"], ["bar", "qwe"]])
        #expect(propagatedTypes(entered) == ["enter qwe"])
        let moved = try #require(machine.transition(entered, event("MOVE")))
        let left = try #require(machine.transition(moved, event("LEAVE")))
        #expect(machine.transition(left, event("NEXT"))?.value == ["bar", "other"])
    }

    /// history.test.ts, "should reenter persisted state during reentering transition
    /// targeting a history state": the record taken as the state is left (by this very
    /// transition) is what the history state restores.
    @Test func aReenteringTransitionToAHistoryState_EntersTheRecordedChildAgain() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "gears": { "log": {} },
              "states": { "a": { "on": { "REENTER": { "target": "#b_hist", "reenter": true } }, "initial": "a1",
                                 "states": { "a1": { "on": { "NEXT": "a2" } },
                                             "a2": { "entry": [ \#(log("a2 entered")) ], "exit": [ \#(log("a2 exited")) ] },
                                             "a3": { "type": "history", "id": "b_hist" } } } } }
            """#)
        let a2 = try #require(machine.transition(machine.initialState, event("NEXT")))
        let reentered = try #require(machine.transition(a2, event("REENTER")))
        #expect(reentered.value == ["a", "a2"])
        #expect(propagatedTypes(reentered) == ["a2 exited", "a2 entered"])
    }

    /// XState v5 (stateUtils.ts, addDescendantStatesToEnter): a history state without a
    /// record or `target` takes its parent's initial transition, whose actions then run;
    /// with a record, or with a `target` of its own, they do not.
    @Test func withoutARecordOrTarget_TheParentsInitialActionsRun() throws {
        let json = #"""
            { "initial": "b", "context": { "n": 0 },
              "states": {
                "a": { "initial": { "target": "x", "actions": [ { "type": "assign", "set": { "n": { "add": 1 } } } ] },
                       "states": { "x": { "on": { "NEXT": "y" } }, "y": {}, "h": { "type": "history" }, "t": { "type": "history", "target": "x" } },
                       "on": { "OUT": "b" } },
                "b": { "on": { "BACK": "a.h", "TARGETED": "a.t" } } } }
            """#
        let machine = try makeMachine(json)
        let back = try #require(machine.transition(machine.initialState, event("BACK")))
        #expect(back.value == ["a", "x"] && back.context["n"] == 1)
        let targeted = try #require(machine.transition(machine.initialState, event("TARGETED")))
        #expect(targeted.value == ["a", "x"] && targeted.context["n"] == 0)
        var state = try #require(machine.transition(back, event("NEXT")))
        state = try #require(machine.transition(state, event("OUT")))
        let restored = try #require(machine.transition(state, event("BACK")))
        #expect(restored.value == ["a", "y"] && restored.context["n"] == 1)
    }
}
