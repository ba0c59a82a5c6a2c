import SpinMachines
import Testing

/// Final states, `onDone` and a machine's completion, re-expressed from XState v5's
/// `packages/core/test/final.test.ts` (statelyai/xstate): each test names the test its
/// machine and expectation come from.
@Suite struct MachineCompletionTests {
    /// final.test.ts, "should call exit actions in reversed document order when the
    /// machines reaches its final state": exit a, enter b, then exit b and the root.
    @Test func reachingATopLevelFinalState_ExitsTheActiveStates_InnermostFirst() throws {
        let machine = try makeMachine(#"""
            { "initial": "a",
              "exit": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "exit: __root__" } } ],
              "states": {
                "a": { "exit": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "exit: a" } } ],
                       "on": { "EV": "b" } },
                "b": { "type": "final",
                       "entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "enter: b" } } ],
                       "exit": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "exit: b" } } ] } },
              "gears": { "log": {} } }
            """#)
        #expect(!machine.isDone(machine.initialState))
        let done = try #require(machine.transition(machine.initialState, event("EV")))
        #expect(propagatedTypes(done) == ["exit: a", "enter: b", "exit: b", "exit: __root__"])
        #expect(machine.isDone(done))
    }

    /// final.test.ts, "status of a machine with a root state being final should be done"
    /// (here: a top-level final state): a done machine takes no event, not even one its
    /// root or a wildcard would take.
    @Test func aDoneMachine_TakesNoEvent_EvenAtTheRootOrThroughAWildcard() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "on": { "PING": { "actions": [] }, "*": ".a" },
              "states": { "a": { "on": { "END": "end" } }, "end": { "type": "final" } } }
            """#)
        #expect(machine.transition(machine.initialState, event("PING")) != nil)
        let done = try #require(machine.transition(machine.initialState, event("END")))
        #expect(machine.isDone(done))
        #expect(machine.transition(done, event("PING")) == nil)
        #expect(machine.transition(done, event("ANY")) == nil)
    }

    /// final.test.ts, "should execute final child state actions first": the initial chain
    /// ends in a final state; each `onDone` runs after the entry of the final state that
    /// set it off (each assignment reads the one before it).
    @Test func onDone_RunsAfterTheFinalChildsEntry_AlsoWhenTheMachineStarts() throws {
        let machine = try makeMachine(#"""
            { "initial": "foo", "context": { "baz": 0 },
              "states": {
                "foo": { "initial": "bar",
                         "onDone": { "actions": [ { "type": "assign", "set": { "foo": { "from": "context.bar" } } } ] },
                         "states": {
                           "bar": { "initial": "baz", "onDone": "barFinal",
                                    "states": { "baz": { "type": "final",
                                                         "entry": [ { "type": "assign", "set": { "baz": 1 } } ] } } },
                           "barFinal": { "type": "final",
                                         "entry": [ { "type": "assign", "set": { "bar": { "from": "context.baz" } } } ] } } } } }
            """#)
        #expect(machine.initialState.value == ["foo", "barFinal"])
        #expect(machine.initialState.context == ["baz": 1, "bar": 1, "foo": 1])
        #expect(machine.initialState.step == MachineStep())
    }

    /// final.test.ts, "should call output expressions on nested final nodes" (without
    /// output): a compound state's `onDone` takes it to a top-level final state.
    @Test func onDone_OfACompoundState_CanCompleteTheMachine() throws {
        let machine = try makeMachine(#"""
            { "initial": "secret", "context": { "revealed": false },
              "states": {
                "secret": { "initial": "wait",
                            "states": { "wait": { "on": { "REQUEST_SECRET": "reveal" } }, "reveal": { "type": "final" } },
                            "onDone": { "target": "success",
                                        "actions": [ { "type": "assign", "set": { "revealed": true, "by": { "from": "event.type" } } } ] } },
                "success": { "type": "final" } } }
            """#)
        let done = try #require(machine.transition(machine.initialState, event("REQUEST_SECRET")))
        #expect(done.value == ["success"])
        // A machine without an id is "(machine)" to XState.
        #expect(done.context == ["revealed": true, "by": "xstate.done.state.(machine).secret"])
        #expect(machine.isDone(done))
        #expect(done.step.entered == [["secret", "reveal"], ["success"]])
    }

    /// final.test.ts, "state output should be able to use context updated by the entry
    /// action of the reached final state": the `onDone` guard sees the final state's entry.
    @Test func onDone_GuardSeesTheContextTheFinalStatesEntryLeft() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "context": { "count": 0 },
              "states": {
                "a": { "initial": "a1",
                       "states": { "a1": { "on": { "NEXT": "a2" } },
                                   "a2": { "type": "final", "entry": [ { "type": "assign", "set": { "count": 1 } } ] } },
                       "onDone": [ { "target": "one", "guard": { "eq": ["context.count", 1] } }, { "target": "other" } ] },
                "one": {}, "other": {} } }
            """#)
        #expect(machine.transition(machine.initialState, event("NEXT"))?.value == ["one"])
    }

    @Test func onDone_OnAnAtomicState_IsAnIssue_AndItsTargetsAreChecked() {
        #expect(issueLines(#"""
            { "initial": "a",
              "states": { "a": { "onDone": "b" },
                          "b": { "initial": "c", "states": { "c": { "type": "final" } }, "onDone": "nowhere" } } }
            """#) == [
                #"test.json: states.a.onDone: unknown key"#,
                #"test.json: states.b.onDone: unknown state "nowhere""#,
            ])
    }
    /// final.test.ts, "should emit the xstate.done.state.* event when all nested states
    /// are in their final states": the done event of `foo` in machine `m` is
    /// `xstate.done.state.m.foo` (the machine's id is part of the state's), and a state's
    /// own `id` stands for its path.
    @Test func theDoneEvent_IsNamedByTheStatesID_WithTheMachinesID() throws {
        let machine = try makeMachine(#"""
            { "id": "m", "initial": "foo", "context": { "seen": [] },
              "states": {
                "foo": { "type": "parallel",
                         "states": {
                           "first": { "initial": "a", "states": { "a": { "on": { "NEXT_1": "b" } }, "b": { "type": "final" } } },
                           "second": { "initial": "a", "states": { "a": { "on": { "NEXT_2": "b" } }, "b": { "type": "final" } } } },
                         "onDone": { "target": "bar", "guard": { "eq": ["event.type", "xstate.done.state.m.foo"] },
                                     "actions": [ { "type": "assign", "set": { "by": { "from": "event.type" } } } ] } },
                "bar": { "id": "named", "initial": "x",
                         "states": { "x": { "on": { "END": "y" } }, "y": { "type": "final" } },
                         "onDone": { "target": "baz", "actions": [ { "type": "assign", "set": { "then": { "from": "event.type" } } } ] } },
                "baz": {} } }
            """#)
        let first = try #require(machine.transition(machine.initialState, event("NEXT_1")))
        let second = try #require(machine.transition(first, event("NEXT_2")))
        #expect(second.value == ["bar", "x"])
        #expect(second.context["by"] == "xstate.done.state.m.foo")
        let third = try #require(machine.transition(second, event("END")))
        #expect(third.value == ["baz"])
        #expect(third.context["then"] == "xstate.done.state.named")
    }
}
