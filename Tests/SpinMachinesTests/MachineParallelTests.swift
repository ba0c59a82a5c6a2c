import Foundation
import SpinMachines
import Testing

/// Parallel states, re-expressed from XState v5's `packages/core/test/parallel.test.ts`
/// (statelyai/xstate): each test names the test its machine and expectation come from
/// (all 27 of its cases). Some of XState's machines with a parallel root are written
/// here as a parallel state the root starts in (from before the format had a parallel
/// root); regions run in the order they are written, as in XState.
/// States XState's machines have that nothing enters are left out (the validator
/// refuses unreachable states).
@Suite struct MachineParallelTests {
    /// XState's `wordMachine`, under a root that starts in it (`#word` is the parallel state).
    static let word = #"""
        { "initial": "word", "on": { "RESET": "#word" },
          "states": { "word": { "id": "word", "type": "parallel", "states": {
            "bold": { "initial": "off", "states": { "on": { "on": { "TOGGLE_BOLD": "off" } }, "off": { "on": { "TOGGLE_BOLD": "on" } } } },
            "underline": { "initial": "off", "states": { "on": { "on": { "TOGGLE_UNDERLINE": "off" } },
                                                          "off": { "on": { "TOGGLE_UNDERLINE": "on" } } } },
            "italics": { "initial": "off", "states": { "on": { "on": { "TOGGLE_ITALICS": "off" } },
                                                        "off": { "on": { "TOGGLE_ITALICS": "on" } } } },
            "list": { "initial": "none", "states": {
              "none": { "on": { "BULLETS": "bullets", "NUMBERS": "numbers" } },
              "bullets": { "on": { "NONE": "none", "NUMBERS": "numbers" } },
              "numbers": { "on": { "BULLETS": "bullets", "NONE": "none" } } } } } } } }
        """#

    /// parallel.test.ts, "should have initial parallel states": every region in its
    /// initial state, the value an object of regions.
    @Test func enteringAParallelState_EntersEveryRegion_AndTheValueNamesEach() throws {
        let machine = try makeMachine(Self.word)
        #expect(machine.initialState.valueJSON == json(#"{"word":{"bold":"off","italics":"off","underline":"off","list":"none"}}"#))
        #expect(machine.initialState.leaves.count == 4)
    }

    /// parallel.test.ts, "should go from {"bold": "off"} to ... on TOGGLE_BOLD" and
    /// "... on TOGGLE_BOLD, TOGGLE_ITALICS" and "... on RESET": an event changes its region
    /// only; RESET (the root's, to the parallel state) re-enters every region.
    @Test func anEvent_ChangesTheRegionThatTakesIt_AndResetReentersAll() throws {
        let machine = try makeMachine(Self.word)
        let bold = try #require(machine.transition(machine.initialState, event("TOGGLE_BOLD")))
        #expect(bold.valueJSON == json(#"{"word":{"bold":"on","italics":"off","underline":"off","list":"none"}}"#))
        #expect(machine.transition(bold, event("TOGGLE_BOLD"))?.valueJSON == machine.initialState.valueJSON)
        let from = try decodeState(#"{"value":{"word":{"bold":"off","italics":"off","underline":"on","list":"bullets"}},"context":{}}"#)
        let both = try #require(machine.transition(machine.transition(from, event("TOGGLE_BOLD")), event("TOGGLE_ITALICS")))
        #expect(both.valueJSON == json(#"{"word":{"bold":"on","italics":"on","underline":"on","list":"bullets"}}"#))
        #expect(machine.transition(both, event("RESET"))?.valueJSON == machine.initialState.valueJSON)
        #expect(machine.transition(machine.initialState, event("NOTHING")) == nil)
    }

    /// parallel.test.ts, "should have all parallel states represented in the state value"
    /// (1 and 2): a transition to a child of one region (`.wak1sonB`) keeps the other.
    @Test func aRelativeTargetInOneRegion_KeepsTheOtherRegion() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "states": { "p": { "type": "parallel", "states": {
                "wak1": { "initial": "wak1sonA", "states": { "wak1sonA": {}, "wak1sonB": {} }, "on": { "WAK1": ".wak1sonB" } },
                "wak2": { "initial": "wak2sonA", "states": { "wak2sonA": {}, "wak2sonB": {} }, "on": { "WAK2": ".wak2sonB" } } } } } }
            """#)
        #expect(machine.transition(machine.initialState, event("WAK1"))?.valueJSON == json(#"{"p":{"wak1":"wak1sonB","wak2":"wak2sonA"}}"#))
        #expect(machine.transition(machine.initialState, event("WAK2"))?.valueJSON == json(#"{"p":{"wak1":"wak1sonA","wak2":"wak2sonB"}}"#))
    }

    /// parallel.test.ts, "should work with regions without states" (both): an atomic
    /// region's value is `{}`, and the state JSON reads back the same.
    @Test func regionsWithoutStates_AreEmptyObjects_AndReadBack() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "states": { "p": { "type": "parallel", "states": {
                "foo": {}, "bar": {}, "baz": { "initial": "one", "states": { "one": { "on": { "E": "two" } }, "two": {} } } } } } }
            """#)
        #expect(machine.initialState.valueJSON == json(#"{"p":{"foo":{},"bar":{},"baz":"one"}}"#))
        let next = try #require(machine.transition(machine.initialState, event("E")))
        #expect(next.valueJSON == json(#"{"p":{"foo":{},"bar":{},"baz":"two"}}"#))
        let text = try JSONEncoder().encode(next)
        let back = try JSONDecoder().decode(MachineState.self, from: text)
        #expect(back == next)
        #expect(back.isActive(["p", "foo"]) && back.isActive(["p", "baz", "two"]) && !back.isActive(["p", "baz", "one"]))
        #expect(machine.transition(back, event("E")) == nil)
    }

    /// parallel.test.ts, "should properly transition to relative substate" (the composer
    /// machine, its named actions left out): a region's `on` with a relative target.
    @Test func aRegionsOwnOn_TargetsItsChild() throws {
        let machine = try makeMachine(#"""
            { "initial": "ReadOnly", "states": { "ReadOnly": { "initial": "StructureEdit", "states": {
                "StructureEdit": { "type": "parallel", "on": { "switchToProjectManagement": "ProjectManagement" }, "states": {
                  "SelectionStatus": { "initial": "SelectedNone",
                    "on": { "singleClickActivity": ".SelectedActivity", "singleClickLink": ".SelectedLink" },
                    "states": { "SelectedNone": {}, "SelectedActivity": { "on": { "singleClickCanvas": "SelectedNone" } },
                                "SelectedLink": { "on": { "singleClickCanvas": "SelectedNone" } } } },
                  "ClipboardStatus": { "initial": "Empty", "states": {
                    "Empty": { "on": { "cutInClipboardSuccess": "FilledByCut", "copyInClipboardSuccess": "FilledByCopy" } },
                    "FilledByCopy": { "on": { "pasteFromClipboardSuccess": "FilledByCopy" } },
                    "FilledByCut": { "on": { "pasteFromClipboardSuccess": "Empty" } } } } } },
                "ProjectManagement": { "type": "parallel", "on": { "switchToStructureEdit": "StructureEdit" }, "states": {
                  "SelectionStatus": { "initial": "SelectedNone", "states": { "SelectedNone": {} } } } } } } } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("singleClickActivity")))
        #expect(next.valueJSON == json(#"{"ReadOnly":{"StructureEdit":{"SelectionStatus":"SelectedActivity","ClipboardStatus":"Empty"}}}"#))
        let switched = try #require(machine.transition(next, event("switchToProjectManagement")))
        #expect(switched.valueJSON == json(#"{"ReadOnly":{"ProjectManagement":{"SelectionStatus":"SelectedNone"}}}"#))
    }

    /// XState's `raisingParallelMachine`, under a root that starts in it.
    static let raising = #"""
        { "initial": "p", "states": { "p": { "type": "parallel", "states": {
            "OUTER1": { "initial": "C", "states": {
              "A": { "entry": [ { "type": "raise", "event": { "type": "TURN_OFF" } } ], "on": { "EVENT_OUTER1_B": "B", "EVENT_OUTER1_C": "C" } },
              "B": { "entry": [ { "type": "raise", "event": { "type": "TURN_ON" } } ], "on": { "EVENT_OUTER1_A": "A", "EVENT_OUTER1_C": "C" } },
              "C": { "entry": [ { "type": "raise", "event": { "type": "CLEAR" } } ], "on": { "EVENT_OUTER1_A": "A", "EVENT_OUTER1_B": "B" } } } },
            "OUTER2": { "type": "parallel", "states": {
              "INNER1": { "initial": "ON", "states": { "OFF": { "on": { "TURN_ON": "ON" } }, "ON": { "on": { "CLEAR": "OFF" } } } },
              "INNER2": { "initial": "OFF", "states": { "OFF": { "on": { "TURN_ON": "ON" } }, "ON": { "on": { "TURN_OFF": "OFF" } } } } } } } } } }
        """#

    /// parallel.test.ts, "should properly transition according to entry events on an
    /// initial state" and "should properly transition when raising events for a parallel
    /// state": an event one region raises is taken by the others, also while starting.
    @Test func anEventOneRegionRaises_IsTakenByTheOthers() throws {
        let machine = try makeMachine(Self.raising)
        #expect(machine.initialState.valueJSON == json(#"{"p":{"OUTER1":"C","OUTER2":{"INNER1":"OFF","INNER2":"OFF"}}}"#))
        let next = try #require(machine.transition(machine.initialState, event("EVENT_OUTER1_B")))
        #expect(next.valueJSON == json(#"{"p":{"OUTER1":"B","OUTER2":{"INNER1":"ON","INNER2":"ON"}}}"#))
    }

    /// parallel.test.ts, "should handle simultaneous orthogonal transitions": one event,
    /// a targetless transition in one region and a transition in another, both taken.
    @Test func oneEvent_IsTakenInEveryRegionThatHandlesIt() throws {
        let machine = try makeMachine(#"""
            { "initial": "yamlEditor", "context": { "value": "" }, "states": { "yamlEditor": { "type": "parallel", "states": {
                "editing": { "on": { "CHANGE": { "actions": [ { "type": "assign", "set": { "value": { "from": "event.value" } } } ] } } },
                "status": { "initial": "unsaved", "states": { "unsaved": { "on": { "SAVE": "saved" } },
                                                              "saved": { "on": { "CHANGE": "unsaved" } } } } } } } }
            """#)
        let saved = try #require(machine.transition(machine.initialState, event("SAVE")))
        let changed = try #require(machine.transition(saved, event("CHANGE", ["value": "something"])))
        #expect(changed.valueJSON == json(#"{"yamlEditor":{"editing":{},"status":"unsaved"}}"#))
        #expect(changed.context == ["value": "something"])
    }

    /// XState's `nestedParallelState`, under a root that starts in it.
    static let nested = #"""
        { "initial": "p", "states": { "p": { "type": "parallel", "states": {
            "OUTER1": { "initial": "STATE_OFF", "states": {
              "STATE_OFF": { "on": { "EVENT_COMPLEX": "STATE_ON", "EVENT_SIMPLE": "STATE_ON" } },
              "STATE_ON": { "type": "parallel", "states": {
                "STATE_NTJ0": { "initial": "STATE_IDLE_0", "states": {
                  "STATE_IDLE_0": { "on": { "EVENT_STATE_NTJ0_WORK": "STATE_WORKING_0" } },
                  "STATE_WORKING_0": { "on": { "EVENT_STATE_NTJ0_IDLE": "STATE_IDLE_0" } } } },
                "STATE_NTJ1": { "initial": "STATE_IDLE_1", "states": {
                  "STATE_IDLE_1": { "on": { "EVENT_STATE_NTJ1_WORK": "STATE_WORKING_1" } },
                  "STATE_WORKING_1": { "on": { "EVENT_STATE_NTJ1_IDLE": "STATE_IDLE_1" } } } } } } } },
            "OUTER2": { "initial": "STATE_OFF", "states": {
              "STATE_OFF": { "on": { "EVENT_COMPLEX": "STATE_ON_COMPLEX", "EVENT_SIMPLE": "STATE_ON_SIMPLE" } },
              "STATE_ON_SIMPLE": {},
              "STATE_ON_COMPLEX": { "type": "parallel", "states": {
                "STATE_INNER1": { "initial": "STATE_OFF", "states": { "STATE_OFF": {} } },
                "STATE_INNER2": { "initial": "STATE_OFF", "states": { "STATE_OFF": {} } } } } } } } } } }
        """#

    /// parallel.test.ts, "should properly transition when in a simple nested state" and
    /// "... in a complex nested state": parallel states inside regions.
    @Test func parallelStatesInsideRegions_AreEnteredWhole_AndTakeEvents() throws {
        let machine = try makeMachine(Self.nested)
        let simple = try #require(machine.transition(machine.transition(machine.initialState, event("EVENT_SIMPLE")),
                                                     event("EVENT_STATE_NTJ0_WORK")))
        #expect(simple.valueJSON == json(#"""
            {"p":{"OUTER1":{"STATE_ON":{"STATE_NTJ0":"STATE_WORKING_0","STATE_NTJ1":"STATE_IDLE_1"}},"OUTER2":"STATE_ON_SIMPLE"}}
            """#))
        let complex = try #require(machine.transition(machine.transition(machine.initialState, event("EVENT_COMPLEX")),
                                                      event("EVENT_STATE_NTJ0_WORK")))
        #expect(complex.valueJSON == json(#"""
            {"p":{"OUTER1":{"STATE_ON":{"STATE_NTJ0":"STATE_WORKING_0","STATE_NTJ1":"STATE_IDLE_1"}},
                  "OUTER2":{"STATE_ON_COMPLEX":{"STATE_INNER1":"STATE_OFF","STATE_INNER2":"STATE_OFF"}}}}
            """#))
    }

    /// parallel.test.ts, "nested flat parallel states: should represent the flat nested
    /// parallel states in the state value", and the root's `to-A` back.
    @Test func aParallelStateOfAtomicRegions_IsEnteredAndLeft() throws {
        let machine = try makeMachine(#"""
            { "initial": "A", "on": { "to-A": ".A" },
              "states": { "A": { "on": { "to-B": "B" } }, "B": { "type": "parallel", "states": { "C": {}, "D": {} } } } }
            """#)
        let b = try #require(machine.transition(machine.initialState, event("to-B")))
        #expect(b.valueJSON == json(#"{"B":{"C":{},"D":{}}}"#))
        #expect(machine.transition(b, event("to-A"))?.valueJSON == json(#""A""#))
    }

    /// parallel.test.ts, "deep flat parallel states: should properly evaluate deep flat
    /// parallel states" and "should not overlap resolved state nodes in state resolution".
    @Test func deepFlatParallelStates_AndATargetlessAndATargetedTransitionTogether() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "states": { "p": { "type": "parallel", "states": {
                "X": {},
                "V": { "initial": "A", "on": { "a": ".A", "b": ".B", "c": ".C" }, "states": {
                  "A": {}, "B": { "initial": "BB", "states": { "BB": { "type": "parallel", "states": { "BBB_A": {}, "BBB_B": {} } } } },
                  "C": {} } } } } } }
            """#)
        let state = try #require(machine.transition(machine.transition(machine.transition(machine.initialState, event("a")),
                                                                       event("c")), event("b")))
        #expect(state.valueJSON == json(#"{"p":{"V":{"B":{"BB":{"BBB_A":{},"BBB_B":{}}}},"X":{}}}"#))
        let pipeline = try makeMachine(#"""
            { "initial": "pipeline", "states": { "pipeline": { "type": "parallel", "states": {
                "foo": { "on": { "UPDATE": { "actions": [] } } },
                "bar": { "on": { "UPDATE": ".baz" }, "initial": "idle", "states": { "idle": {}, "baz": {} } } } } } }
            """#)
        #expect(pipeline.transition(pipeline.initialState, event("UPDATE"))?.valueJSON == json(#"{"pipeline":{"foo":{},"bar":"baz"}}"#))
    }

    /// parallel.test.ts, "should calculate the entry set for reentering transitions in
    /// parallel states": `reenter` in a region enters the state again (its entry runs twice).
    @Test func reenteringAStateInARegion_RunsItsEntryAgain() throws {
        let machine = try makeMachine(#"""
            { "initial": "test", "context": { "log": 0 }, "states": { "test": { "type": "parallel", "states": {
                "foo": { "initial": "foobar", "states": {
                  "foobar": { "on": { "GOTO_FOOBAZ": "foobaz" } },
                  "foobaz": { "entry": [ { "type": "assign", "set": { "log": { "add": 1 } } } ],
                              "on": { "GOTO_FOOBAZ": { "target": "foobaz", "reenter": true } } } } },
                "bar": {} } } } }
            """#)
        let twice = try #require(machine.transition(machine.transition(machine.initialState, event("GOTO_FOOBAZ")), event("GOTO_FOOBAZ")))
        #expect(twice.context["log"] == 2)
    }

    /// parallel.test.ts, 'should raise a "xstate.done.state.*" event when all child states
    /// reach final state': one FINISH finishes every region, the parallel state's onDone
    /// goes to a top-level final state, and the machine is done.
    @Test func aParallelStateIsDone_WhenEveryRegionIs_AndItsOnDoneIsTaken() throws {
        let region = #"{ "initial": "idle", "states": { "idle": { "on": { "FINISH": "finished" } }, "finished": { "type": "final" } } }"#
        let machine = try makeMachine(#"""
            { "id": "test", "initial": "p", "states": {
                "p": { "type": "parallel", "onDone": "success", "states": { "a": \#(region), "b": \#(region), "c": \#(region) } },
                "success": { "type": "final" } } }
            """#)
        let done = try #require(machine.transition(machine.initialState, event("FINISH")))
        #expect(done.value == ["success"])
        #expect(machine.isDone(done))
        // One region done is not enough.
        let partly = try makeMachine(#"""
            { "initial": "p", "states": {
                "p": { "type": "parallel", "onDone": "success", "states": { "a": \#(region),
                       "b": { "initial": "idle", "states": { "idle": { "on": { "END": "finished" } }, "finished": { "type": "final" } } } } },
                "success": { "type": "final" } } }
            """#)
        let half = try #require(partly.transition(partly.initialState, event("FINISH")))
        #expect(half.valueJSON == json(#"{"p":{"a":"finished","b":"idle"}}"#))
        #expect(partly.transition(half, event("END"))?.value == ["success"])
    }

    /// A parallel state one of whose regions is itself parallel is done when the inner
    /// one's regions and its other regions all are (SCXML's isInFinalState, recursive):
    /// the inner onDone and then the outer one are taken.
    @Test func aParallelStateWithAParallelRegion_IsDoneWhenEveryRegionBelowIs() throws {
        let region = #"{ "initial": "idle", "states": { "idle": { "on": { "FINISH": "finished" } }, "finished": { "type": "final" } } }"#
        let machine = try makeMachine(#"""
            { "initial": "p", "states": {
                "p": { "type": "parallel", "onDone": "success", "states": {
                  "inner": { "type": "parallel", "onDone": { "actions": [ { "type": "assign", "set": { "innerDone": true } } ] },
                             "states": { "a": \#(region), "b": \#(region) } },
                  "c": { "initial": "idle", "states": { "idle": { "on": { "END": "finished" } }, "finished": { "type": "final" } } } } },
                "success": { "type": "final" } } }
            """#)
        let innerDone = try #require(machine.transition(machine.initialState, event("FINISH")))
        #expect(innerDone.context["innerDone"] == true)
        #expect(innerDone.valueJSON == json(#"{"p":{"inner":{"a":"finished","b":"finished"},"c":"idle"}}"#))
        #expect(machine.transition(innerDone, event("END"))?.value == ["success"])
        // The other order: c first, then the inner regions finish everything.
        let cFirst = try #require(machine.transition(machine.initialState, event("END")))
        #expect(machine.transition(cFirst, event("FINISH"))?.value == ["success"])
    }

    /// parallel.test.ts, "source parallel region should be reentered when a transition
    /// within it targets another parallel region (nested parallel)": the parallel state
    /// is the domain, so every region exits (reverse document order: Operation is written
    /// first, so Mode exits first) and is entered again (Operation first).
    @Test func aTransitionToAnotherRegion_ExitsAndReentersEveryRegion() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "gears": { "log": {} }, "states": { "a": { "type": "parallel", "states": {
                "Operation": { \#(logged("a.Operation")), "initial": "Waiting", "states": {
                  "Waiting": { \#(logged("a.Operation.Waiting")), "on": { "TOGGLE_MODE": "#Demo" } } } },
                "Mode": { \#(logged("a.Mode")), "initial": "Normal", "states": {
                  "Normal": { \#(logged("a.Mode.Normal")) }, "Demo": { "id": "Demo", \#(logged("a.Mode.Demo")) } } } } } } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("TOGGLE_MODE")))
        #expect(propagatedTypes(next) == [
            "exit: a.Mode.Normal", "exit: a.Mode", "exit: a.Operation.Waiting", "exit: a.Operation",
            "enter: a.Operation", "enter: a.Operation.Waiting", "enter: a.Mode", "enter: a.Mode.Demo",
        ])
        #expect(next.valueJSON == json(#"{"a":{"Mode":"Demo","Operation":"Waiting"}}"#))
    }

    /// parallel.test.ts, "targetless transition on a parallel state should not enter nor
    /// exit any states" and "targetless transition in one of the parallel regions ...".
    @Test func targetlessTransitions_OnAParallelStateOrARegion_EnterAndExitNothing() throws {
        let machine = try makeMachine(#"""
            { "initial": "test", "gears": { "log": {} }, "states": { "test": { "type": "parallel",
                "on": { "MY_EVENT": { "actions": [ { "type": "assign", "set": { "n": { "add": 1 } } } ] } }, "states": {
                "first": { \#(logged("first")), "initial": "disabled",
                           "on": { "OTHER": { "actions": [ { "type": "assign", "set": { "m": { "add": 1 } } } ] } },
                           "states": { "disabled": { \#(logged("first.disabled")) } } },
                "second": { \#(logged("second")) } } } } }
            """#)
        for type in ["MY_EVENT", "OTHER"] {
            let next = try #require(machine.transition(machine.initialState, event(type)))
            #expect(propagatedTypes(next).isEmpty)
            #expect(next.step.entered.isEmpty)
            #expect(next.valueJSON == machine.initialState.valueJSON)
        }
    }

    /// SCXML's (and XState's) conflict rule: when transitions of two regions exit the same
    /// states, the one of the earlier region wins; a transition of a region's state wins
    /// over one of the parallel state itself (its source is inside the other's).
    @Test func conflictingTransitions_TheEarlierRegionOrTheInnerSourceWins() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "states": {
                "p": { "type": "parallel", "on": { "INNER": "x" }, "states": {
                  "a": { "initial": "a1", "states": { "a1": { "on": { "OUT": "#x", "INNER": "a2" } }, "a2": {} } },
                  "b": { "initial": "b1", "states": { "b1": { "on": { "OUT": "#y" } } } } } },
                "x": { "id": "x" }, "y": { "id": "y" } } }
            """#)
        #expect(machine.transition(machine.initialState, event("OUT"))?.value == ["x"])
        #expect(machine.transition(machine.initialState, event("INNER"))?.valueJSON == json(#"{"p":{"a":"a2","b":"b1"}}"#))
    }

    /// `in` guards see every region; `always` transitions are taken in every region in
    /// one macrostep; a wildcard in a region takes what no other state of it handles.
    @Test func inGuardsSeeEveryRegion_AlwaysRunsInEveryRegion_WildcardsPerRegion() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "context": { "go": false }, "states": { "p": { "type": "parallel", "states": {
                "light": { "initial": "red", "states": {
                  "red": { "on": { "TURN": "green" } },
                  "green": { "always": { "target": "red", "guard": { "in": "#crossing.waiting" } } } } },
                "crossing": { "id": "crossing", "initial": "idle", "states": {
                  "idle": { "on": { "PRESS": "waiting" }, "always": { "target": "walking", "guard": { "in": "p.light.green" } } },
                  "waiting": { "on": { "*": "idle" } },
                  "walking": {} } } } } } }
            """#)
        let green = try #require(machine.transition(machine.initialState, event("TURN")))
        #expect(green.valueJSON == json(#"{"p":{"light":"green","crossing":"walking"}}"#))
        let waiting = try #require(machine.transition(machine.initialState, event("PRESS")))
        // TURN: the light goes green and the wildcard takes the crossing back to idle, then
        // idle's always (the light is green) goes on to walking.
        let turned = try #require(machine.transition(waiting, event("TURN")))
        #expect(turned.valueJSON == json(#"{"p":{"light":"green","crossing":"walking"}}"#))
        #expect(machine.transition(waiting, event("ANY"))?.valueJSON == json(#"{"p":{"light":"red","crossing":"idle"}}"#))
    }

    /// history.test.ts-like: a region with a history state comes back to where it was
    /// when the parallel state is entered through it, the other regions at their start.
    @Test func aHistoryStateInARegion_RestoresThatRegion() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "states": {
                "p": { "type": "parallel", "on": { "OFF": "off" }, "states": {
                  "a": { "initial": "a1", "states": { "a1": { "on": { "NEXT": "a2" } }, "a2": {}, "hist": { "type": "history" } } },
                  "b": { "initial": "b1", "states": { "b1": { "on": { "NEXT": "b2" } }, "b2": {} } } } },
                "off": { "on": { "ON": "p.a.hist" } } } }
            """#)
        let moved = try #require(machine.transition(machine.initialState, event("NEXT")))
        #expect(moved.valueJSON == json(#"{"p":{"a":"a2","b":"b2"}}"#))
        let back = try #require(machine.transition(machine.transition(moved, event("OFF")), event("ON")))
        #expect(back.valueJSON == json(#"{"p":{"a":"a2","b":"b1"}}"#))
    }

    /// What the format does not have is refused: a parallel state without regions or with
    /// an initial state, a parallel root with an initial state, a machine type other than
    /// parallel or compound.
    @Test func parallelStatesThatCannotWork_AreValidationIssues() {
        #expect(issueLines(#"""
            { "initial": "p", "states": {
                "p": { "type": "parallel", "initial": "a", "states": { "a": {}, "h": { "type": "history" } } },
                "q": { "type": "parallel" } } }
            """#) == [
            #"test.json: states.p.initial: no "initial" here: a parallel state enters all of its regions at once, so it names no initial state"#,
            #"test.json: states.q.states: bad value: a parallel state has its regions in "states""#,
        ])
        #expect(issueLines(#"{ "type": "parallel", "initial": "a", "states": { "a": {} } }"#) == [
            #"test.json: initial: no "initial" here: a parallel state enters all of its regions at once, so it names no initial state"#,
        ])
        #expect(issueLines(#"{ "type": "atomic", "initial": "a", "states": { "a": {} } }"#) == [
            #"test.json: type: bad value: the machine's type is "parallel" or "compound""#,
        ])
    }

    /// A region's `after` timer fires while the region's state is active; the state JSON of
    /// a parallel configuration round-trips through the journal's encoding.
    @Test func afterTimersOfRegions_AndTheStateJSONRoundTrips() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "states": { "p": { "type": "parallel", "states": {
                "a": { "initial": "a1", "states": { "a1": { "after": { "100": "a2" } }, "a2": {} } },
                "b": { "initial": "b1", "states": { "b1": { "on": { "GO": "b2" } }, "b2": {} } } } } } }
            """#)
        let fired = try #require(machine.transition(machine.initialState, MachineEvent.after(state: ["p", "a", "a1"], delay: 100)))
        #expect(fired.valueJSON == json(#"{"p":{"a":"a2","b":"b1"}}"#))
        #expect(machine.transition(fired, MachineEvent.after(state: ["p", "a", "a1"], delay: 100)) == nil)
        let text = String(decoding: try JSONEncoder().encode(fired), as: UTF8.self)
        #expect(try decodeState(text) == fired)
        #expect(try decodeState(text).leaves == [["p", "a", "a2"], ["p", "b", "b1"]])
    }

    /// Regions in the order the file writes them, whatever their names (XState's
    /// document order): `zeta` is written before `alpha`, so it is entered first, exits
    /// last, and its transition wins when both leave the parallel state.
    @Test func regionsRunInTheOrderTheFileWritesThem_NotInNameOrder() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "gears": { "log": {} }, "on": { "RESET": "#p" }, "states": {
                "p": { "id": "p", "type": "parallel", "states": {
                  "zeta": { \#(logged("zeta")), "on": { "LEAVE": "#z" } },
                  "alpha": { \#(logged("alpha")), "on": { "LEAVE": "#a" } } } },
                "z": { "id": "z" }, "a": { "id": "a" } } }
            """#)
        let reset = try #require(machine.transition(machine.initialState, event("RESET")))
        #expect(propagatedTypes(reset) == ["exit: alpha", "exit: zeta", "enter: zeta", "enter: alpha"])
        let left = try #require(machine.transition(machine.initialState, event("LEAVE")))
        #expect(left.value == ["z"])
        #expect(propagatedTypes(left) == ["exit: alpha", "exit: zeta"])
    }

    /// A name written with an escape (`"b\u0061"` is `ba`) keeps its place too.
    @Test func escapedStateNames_KeepTheirWrittenPlace() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "gears": { "log": {} }, "on": { "RESET": "#p" }, "states": {
                "p": { "id": "p", "type": "parallel", "states": {
                  "b\u0061": { \#(logged("ba")) }, "ab": { \#(logged("ab")) } } } } }
            """#)
        let reset = try #require(machine.transition(machine.initialState, event("RESET")))
        #expect(propagatedTypes(reset) == ["exit: ab", "exit: ba", "enter: ba", "enter: ab"])
    }
}

/// A `gear.propagate` action to the Gear `log` of an event of type `type`.
func log(_ type: String) -> String {
    #"{ "type": "gear.propagate", "gear": "log", "event": { "type": "\#(type)" } }"#
}

/// `"entry"` and `"exit"` members that log `enter: <name>` and `exit: <name>` to the Gear `log`.
func logged(_ name: String) -> String {
    #""entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "enter: \#(name)" } } ], "#
        + #""exit": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "exit: \#(name)" } } ]"#
}

extension MachineDefinition {
    /// The state after `event`, from a state that may be missing (nil then).
    func transition(_ state: MachineState?, _ event: MachineEvent) -> MachineState? {
        state.flatMap { transition($0, event) }
    }
}

func json(_ text: String) -> MachineValue {
    (try? JSONDecoder().decode(MachineValue.self, from: Data(text.utf8))) ?? .null
}

func decodeState(_ text: String) throws -> MachineState {
    try JSONDecoder().decode(MachineState.self, from: Data(text.utf8))
}
