import Foundation
import SpinMachines
import Testing

/// States a journal or snapshot may hold that this machine did not make (an edited file,
/// another version of the machine): they decode only within bounds, and the interpreter
/// never loops or traps on them.
@Suite struct MachineCraftedStateTests {
    static let history = #"""
        { "initial": "a",
          "states": {
            "a": { "initial": "x", "states": { "x": { "on": { "NEXT": "y" } }, "y": {}, "h": { "type": "history" } },
                   "on": { "OUT": "b" } },
            "b": { "on": { "BACK": "a.h" } } } }
        """#

    /// A record that names the history state itself (or a state with children) counts as
    /// no record: the history enters its default, in both interpreters.
    @Test func aHistoryRecordNamingAHistoryState_CountsAsNone() throws {
        // The second has initial actions: the interpreter of every leaf takes it.
        let initialActions = #"{ "target": "x", "actions": [ { "type": "assign", "set": { "n": 1 } } ] }"#
        for machine in [Self.history, Self.history.replacingOccurrences(of: #""initial": "x""#, with: "\"initial\": \(initialActions)")] {
            let definition = try makeMachine(machine)
            for record in ["a.h", "a"] {
                let crafted = #"{"value":"b","context":{},"history":{"a":"\#(record)"}}"#
                let state = try JSONDecoder().decode(MachineState.self, from: Data(crafted.utf8))
                #expect(definition.transition(state, event("BACK"))?.value == ["a", "x"])
            }
        }
        let parallel = try makeMachine(#"""
            { "initial": "b",
              "states": {
                "p": { "type": "parallel",
                       "states": { "r": { "initial": "x", "states": { "x": { "on": { "NEXT": "y" } }, "y": {} } }, "h": { "type": "history", "history": "deep" } } },
                "b": { "on": { "BACK": "p.h" } } } }
            """#)
        let crafted = #"{"value":"b","context":{},"history":{"p":"p.h","p.r":"p.h"}}"#
        let state = try JSONDecoder().decode(MachineState.self, from: Data(crafted.utf8))
        #expect(parallel.transition(state, event("BACK"))?.leaves == [["p", "r", "x"]])
    }

    @Test func scheduledKeysAndDelays_DecodeOnlyWithinBounds() {
        for (key, delay) in [("0", "5"), ("9007199254740993", "5"), ("-1", "5"), ("1", "-1"), ("1", "1000000000")] {
            let crafted = #"{"value":"a","context":{},"scheduled":[{"key":\#(key),"delay":\#(delay),"event":{"type":"P"}}]}"#
            #expect(throws: DecodingError.self, "key \(key), delay \(delay)") {
                try JSONDecoder().decode(MachineState.self, from: Data(crafted.utf8))
            }
        }
    }

    /// A state holding the largest key a state may hold still schedules: the next key is
    /// the smallest free one, not one past the bound.
    @Test func pastTheLargestKey_TheNextKeyIsTheSmallestFree() throws {
        let machine = try makeMachine(RaiseFixtures.timeouts)
        let crafted = #"{"value":"waiting","context":{"pings":0},"scheduled":[{"key":9007199254740992,"delay":5,"event":{"type":"PING"}}]}"#
        let state = try JSONDecoder().decode(MachineState.self, from: Data(crafted.utf8))
        let next = try #require(machine.transition(state, event("RESTART")))
        #expect(next.scheduled.map(\.key) == [9_007_199_254_740_992, 1])
    }

    /// More delayed events than `scheduledLimit`: the transition is applied and its step
    /// says so (the server suspends the Spin); below it, nothing is said.
    @Test func pastTheScheduledLimit_TheStepSaysOverScheduled() throws {
        let machine = try makeMachine(#"""
            { "initial": "a",
              "states": { "a": { "on": { "TICK": { "actions": [ { "type": "raise", "event": { "type": "PING" }, "delay": 999999999 } ] },
                                         "PING": {} } } } }
            """#)
        var state = machine.initialState
        for _ in 0..<MachineDefinition.scheduledLimit {
            state = try #require(machine.transition(state, event("TICK")))
            #expect(!state.step.overScheduled)
        }
        state = try #require(machine.transition(state, event("TICK")))
        #expect(state.step.overScheduled)
        #expect(state.scheduled.count == MachineDefinition.scheduledLimit + 1)
        #expect(Set(state.scheduled.map(\.key)).count == state.scheduled.count)
    }

    /// A parallel state whose only child is a history state has no region: refused.
    @Test func aParallelStateWithOnlyAHistoryChild_IsRefused() {
        #expect(issueLines(#"{ "initial": "p", "states": { "p": { "type": "parallel", "states": { "h": { "type": "history" } } } } }"#)
            == [#"test.json: states.p.states: bad value: a parallel state has its regions in "states""#])
        #expect(issueLines(#"{ "type": "parallel", "states": { "h": { "type": "history" } } }"#).contains(
            #"test.json: states: bad value: a parallel state has its regions in "states""#))
    }
    /// What a definition cannot take in a stored state is said, naming the state and the
    /// file: a server refuses such a snapshot instead of hosting a Spin that would take no
    /// event again (or fall back on a history default) without a word.
    @Test func aStoredStateTheDefinitionLacks_IsNamed() throws {
        let definition = try makeMachine(Self.history, file: "machines/h.json")
        func problem(_ json: String) throws -> String? {
            definition.problem(taking: try JSONDecoder().decode(MachineState.self, from: Data(json.utf8)))
        }
        #expect(try problem(#"{"value":"b","context":{}}"#) == nil)
        #expect(try problem(#"{"value":{"a":"y"},"context":{},"history":{"a":"a.x"}}"#) == nil)
        #expect(try problem(#"{"value":"gone","context":{}}"#) == #"its state is "gone", which machines/h.json does not define"#)
        #expect(try problem(#"{"value":"a","context":{}}"#)
            == #"its state is "a", which machines/h.json defines as a compound state, not as one a machine rests in"#)
        #expect(try problem(#"{"value":"b","context":{},"history":{"z":"a.x"}}"#)
            == #"its history has a record for state "z", which machines/h.json does not define"#)
        #expect(try problem(#"{"value":"b","context":{},"history":{"a":"a.w"}}"#)
            == #"its history records "a.w" for "a", a state machines/h.json does not define as a leaf"#)
    }
}
