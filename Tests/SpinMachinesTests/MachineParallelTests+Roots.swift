import Foundation
import SpinMachines
import Testing

// MARK: - A parallel root, target lists, history over parallel states, initial actions

extension MachineParallelTests {
    /// XState's `wordMachine` as XState writes it: parallel at its root.
    static let wordRoot = #"""
        { "id": "word", "type": "parallel", "on": { "RESET": "#word" }, "states": {
            "bold": { "initial": "off", "states": { "on": { "on": { "TOGGLE_BOLD": "off" } }, "off": { "on": { "TOGGLE_BOLD": "on" } } } },
            "italics": { "initial": "off", "states": { "on": { "on": { "TOGGLE_ITALICS": "off" } },
                                                        "off": { "on": { "TOGGLE_ITALICS": "on" } } } } } }
        """#

    /// parallel.test.ts, "should have initial parallel states" and "... on RESET", with the
    /// machine parallel at its root as there: the value is the object of regions itself,
    /// and the root's RESET (`#word`, the root) re-enters every region.
    @Test func aParallelRoot_IsAnObjectOfRegions_AndItsOwnTargetReentersThem() throws {
        let machine = try makeMachine(Self.wordRoot)
        #expect(machine.initialState.valueJSON == json(#"{"bold":"off","italics":"off"}"#))
        let bold = try #require(machine.transition(machine.initialState, event("TOGGLE_BOLD")))
        #expect(bold.valueJSON == json(#"{"bold":"on","italics":"off"}"#))
        let reset = try #require(machine.transition(bold, event("RESET")))
        #expect(reset.valueJSON == machine.initialState.valueJSON)
        #expect(reset.step.entered == [["bold"], ["bold", "off"], ["italics"], ["italics", "off"]])
        #expect(!machine.isDone(reset))
        let text = String(decoding: try JSONEncoder().encode(bold), as: UTF8.self)
        #expect(try decodeState(text) == bold)
    }

    /// parallel.test.ts, "source parallel region should be reentered when a transition
    /// within it targets another parallel region (parallel root)": the root is the domain,
    /// every region exits (last first) and is entered again.
    @Test func aParallelRoot_IsTheDomainOfATransitionAcrossRegions() throws {
        let machine = try makeMachine(#"""
            { "type": "parallel", "gears": { "log": {} }, "states": {
                "Operation": { \#(logged("Operation")), "initial": "Waiting", "states": {
                  "Waiting": { \#(logged("Operation.Waiting")), "on": { "TOGGLE_MODE": { "target": "#Demo" } } } } },
                "Mode": { \#(logged("Mode")), "initial": "Normal", "states": {
                  "Normal": { \#(logged("Mode.Normal")) }, "Demo": { "id": "Demo", \#(logged("Mode.Demo")) } } } } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("TOGGLE_MODE")))
        #expect(propagatedTypes(next) == [
            "exit: Mode.Normal", "exit: Mode", "exit: Operation.Waiting", "exit: Operation",
            "enter: Operation", "enter: Operation.Waiting", "enter: Mode", "enter: Mode.Demo",
        ])
        #expect(next.valueJSON == json(#"{"Operation":"Waiting","Mode":"Demo"}"#))
    }

    /// parallel.test.ts, "regions should be able to transition to orthogonal regions"
    /// (xstate#518): one transition with two targets in different regions enters both.
    @Test func aTargetList_EntersATargetInEachRegion() throws {
        let machine = try makeMachine(#"""
            { "type": "parallel", "states": {
                "Pages": { "initial": "About", "states": { "About": { "id": "About" }, "Dashboard": { "id": "Dashboard" } } },
                "Menu": { "initial": "Closed", "states": {
                  "Closed": { "id": "Closed", "on": { "toggle": "#Opened" } },
                  "Opened": { "id": "Opened", "on": { "toggle": "#Closed",
                              "go to dashboard": { "target": [ "#Dashboard", "#Opened" ] } } } } } } }
            """#)
        let opened = try #require(machine.transition(machine.initialState, event("toggle")))
        let dashboard = try #require(machine.transition(opened, event("go to dashboard")))
        #expect(dashboard.valueJSON == json(#"{"Menu":"Opened","Pages":"Dashboard"}"#))
    }

    /// SCXML's target list inside a nested parallel state: the domain holds the source and
    /// every target; the targets' regions are entered at them, the others at their start.
    @Test func aTargetList_LeavesTheOtherRegionsAtTheirInitialStates() throws {
        let machine = try makeMachine(#"""
            { "initial": "idle", "gears": { "log": {} }, "states": {
                "idle": { "on": { "GO": { "target": [ "p.a.a2", "p.c.c2" ] } } },
                "p": { "type": "parallel", "states": {
                  "a": { "initial": "a1", "states": { "a1": {}, "a2": { \#(logged("a2")) } } },
                  "b": { "initial": "b1", "states": { "b1": { \#(logged("b1")) } } },
                  "c": { "initial": "c1", "states": { "c1": {}, "c2": { \#(logged("c2")) } } } } } } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("GO")))
        #expect(next.valueJSON == json(#"{"p":{"a":"a2","b":"b1","c":"c2"}}"#))
        #expect(propagatedTypes(next) == ["enter: a2", "enter: b1", "enter: c2"])
    }

    /// Targets that cannot be active together are validation issues, each at its place in
    /// the list: two in one region, one inside another, two outside any parallel state.
    @Test func conflictingTargets_AreValidationIssues() {
        #expect(issueLines(#"""
            { "initial": "p", "states": {
                "p": { "type": "parallel", "on": {
                  "SAME": { "target": [ "#a1", "#a2" ] }, "INSIDE": { "target": [ "p.a", "#a2" ] }, "EMPTY": { "target": [] } },
                  "states": {
                    "a": { "initial": "a1", "states": { "a1": { "id": "a1" }, "a2": { "id": "a2" } } },
                    "b": { "initial": "b1", "states": { "b1": {} } } } },
                "q": { "on": { "TWO": { "target": [ "p", "r" ] } } }, "r": {} } }
            """#) == [
            #"test.json: states.p.on.EMPTY.target: expected a target state or a non-empty array of them"#,
            #"test.json: states.p.on.INSIDE.target[1]: bad value: targets conflict: "p.a" and "p.a.a2" are one inside the other; several targets are in different regions of a parallel state"#,
            #"test.json: states.p.on.SAME.target[1]: bad value: targets conflict: "p.a.a1" and "p.a.a2" are in the same region; several targets are in different regions of a parallel state"#,
            #"test.json: states.q.on.TWO.target[1]: bad value: targets conflict: "p" and "r" are in the same region; several targets are in different regions of a parallel state"#,
        ])
    }

    /// parallel.test.ts, 'should raise a "xstate.done.state.*" event when a pseudostate of
    /// a history type is directly on a parallel state': the history state is no region, so
    /// the parallel state is done when its two regions are.
    @Test func aHistoryStateOnAParallelState_IsNoRegion() throws {
        let region = { (name: String) in
            #"{ "initial": "wait_\#(name)", "states": { "wait_\#(name)": { "on": { "finish_\#(name)": { "target": "done" } } }, "done": { "type": "final" } } }"#
        }
        let machine = try makeMachine(#"""
            { "initial": "parallelSteps", "states": {
                "parallelSteps": { "type": "parallel", "onDone": "finished", "states": {
                  "hist": { "type": "history" }, "one": \#(region("one")), "two": \#(region("two")) } },
                "finished": {} } }
            """#)
        #expect(machine.initialState.valueJSON == json(#"{"parallelSteps":{"one":"wait_one","two":"wait_two"}}"#))
        let one = try #require(machine.transition(machine.initialState, event("finish_one")))
        #expect(machine.transition(one, event("finish_two"))?.value == ["finished"])
    }

    /// A parallel state's history, and a shallow history over a compound state whose
    /// child is parallel: the parallel state is entered again, every region at its start
    /// (SCXML: shallow history restores the parent's active children, here every region).
    @Test func shallowHistoryOverAParallelState_EntersEveryRegion() throws {
        let machine = try makeMachine(#"""
            { "initial": "on", "states": {
                "on": { "initial": "p", "on": { "OFF": "off" }, "states": {
                  "p": { "type": "parallel", "states": {
                    "h": { "type": "history" },
                    "a": { "initial": "a1", "states": { "a1": { "on": { "NEXT": "a2" } }, "a2": {} } },
                    "b": { "initial": "b1", "states": { "b1": { "on": { "NEXT": "b2" } }, "b2": {} } } } },
                  "q": { "on": { "BACK": "p" } }, "hist": { "type": "history" } } },
                "off": { "on": { "ON": "on.hist", "ON_P": "on.p.h", "Q": "on.q" } } } }
            """#)
        let moved = try #require(machine.transition(machine.initialState, event("NEXT")))
        let off = try #require(machine.transition(moved, event("OFF")))
        #expect(off.value == ["off"])
        let start = json(#"{"on":{"p":{"a":"a1","b":"b1"}}}"#)
        #expect(machine.transition(off, event("ON"))?.valueJSON == start)
        #expect(machine.transition(off, event("ON_P"))?.valueJSON == start)
    }

    /// A deep history over a parallel state restores every region's leaf (SCXML: every
    /// atomic state that was active), a nested one too; the records are the state's
    /// `history` (the parent's leaf and each region's), so they survive the state's JSON.
    @Test func deepHistoryOverAParallelState_RestoresEveryRegion() throws {
        let machine = try makeMachine(#"""
            { "initial": "on", "states": {
                "on": { "initial": "p", "on": { "OFF": "off" }, "states": {
                  "p": { "type": "parallel", "states": {
                    "a": { "initial": "a1", "states": { "a1": { "on": { "A": "a2" } }, "a2": {} } },
                    "b": { "initial": "b1", "states": { "b1": { "on": { "B": "b2" } },
                                                         "b2": { "initial": "x", "states": { "x": { "on": { "X": "y" } }, "y": {} } } } } } },
                  "deep": { "type": "history", "history": "deep" } } },
                "off": { "on": { "ON": "on.deep" } } } }
            """#)
        var moved = machine.initialState
        for type in ["A", "B", "X"] { moved = try #require(machine.transition(moved, event(type))) }
        let off = try #require(machine.transition(moved, event("OFF")))
        #expect(off.history == ["on": ["on", "p", "a", "a2"], "on.p.a": ["on", "p", "a", "a2"], "on.p.b": ["on", "p", "b", "b2", "y"]])
        let text = String(decoding: try JSONEncoder().encode(off), as: UTF8.self)
        let back = try #require(machine.transition(try decodeState(text), event("ON")))
        #expect(back.valueJSON == json(#"{"on":{"p":{"a":"a2","b":{"b2":"y"}}}}"#))
        // Only one region moved: the other comes back at its start.
        let once = try #require(machine.transition(machine.transition(machine.initialState, event("A")), event("OFF")))
        #expect(machine.transition(once, event("ON"))?.valueJSON == json(#"{"on":{"p":{"a":"a2","b":"b1"}}}"#))
    }

    /// A deep history that is a child of the parallel state itself restores every region's
    /// leaf; a shallow one there enters every region at its start; before the parallel
    /// state was ever left, a history's `target` is entered.
    @Test func deepHistoryOfAParallelState_RestoresEveryRegion() throws {
        let machine = try makeMachine(#"""
            { "initial": "off", "states": {
                "p": { "type": "parallel", "on": { "OFF": "off" }, "states": {
                  "deep": { "type": "history", "history": "deep", "target": "#b2" }, "shallow": { "type": "history" },
                  "a": { "initial": "a1", "states": { "a1": { "on": { "A": "a2" } }, "a2": {} } },
                  "b": { "initial": "b1", "states": { "b1": { "on": { "B": "b2" } }, "b2": { "id": "b2" } } } } },
                "off": { "on": { "ON": "p", "DEEP": "p.deep", "SHALLOW": "p.shallow" } } } }
            """#)
        #expect(machine.transition(machine.initialState, event("DEEP"))?.valueJSON == json(#"{"p":{"a":"a1","b":"b2"}}"#))
        let on = try #require(machine.transition(machine.initialState, event("ON")))
        let moved = try #require(machine.transition(machine.transition(on, event("A")), event("B")))
        let off = try #require(machine.transition(moved, event("OFF")))
        #expect(machine.transition(off, event("DEEP"))?.valueJSON == json(#"{"p":{"a":"a2","b":"b2"}}"#))
        #expect(machine.transition(off, event("SHALLOW"))?.valueJSON == json(#"{"p":{"a":"a1","b":"b1"}}"#))
    }

    /// parallel.test.ts, "should execute actions of the initial transition of a parallel
    /// region when entering the initial state nodes of a machine": a region's initial
    /// transition written as an object runs its actions once when the machine starts.
    @Test func initialTransitionActionsOfARegion_RunWhenTheMachineStarts() throws {
        let machine = try makeMachine(#"""
            { "type": "parallel", "context": { "spy": 0 }, "states": {
                "a": { "initial": { "target": "a1", "actions": [ { "type": "assign", "set": { "spy": { "add": 1 } } } ] },
                       "states": { "a1": {} } } } }
            """#)
        #expect(machine.initialState.context["spy"] == 1)
    }

    /// parallel.test.ts, "should execute actions of the initial transition of a parallel
    /// region when the parallel state is targeted with an explicit transition".
    @Test func initialTransitionActionsOfARegion_RunWhenItsParallelStateIsTargeted() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "context": { "spy": 0 }, "states": {
                "a": { "on": { "NEXT": "b" } },
                "b": { "type": "parallel", "states": {
                  "c": { "initial": { "target": "c1", "actions": [ { "type": "assign", "set": { "spy": { "add": 1 } } } ] },
                         "states": { "c1": {} } } } } } }
            """#)
        #expect(machine.initialState.context["spy"] == 0)
        let next = try #require(machine.transition(machine.initialState, event("NEXT")))
        #expect(next.context["spy"] == 1)
    }

    /// XState v5's order (and SCXML's): a state's initial actions run after its entry and
    /// before its initial child's, only when it is entered by default (a target, an
    /// initial child), not when a transition targets a state inside it; the root's run
    /// when the machine starts.
    @Test func initialTransitionActions_RunAfterEntry_OnlyOnDefaultEntry() throws {
        let machine = try makeMachine(#"""
            { "initial": { "target": "idle", "actions": [ \#(log("root initial")) ] }, "gears": { "log": {} },
              "context": { "started": 0 }, "entry": [ { "type": "assign", "set": { "started": { "add": 1 } } } ], "states": {
                "idle": { "on": { "GO": "s", "DEEP": "s.t2" } },
                "s": { "entry": [ \#(log("enter s")) ], "initial": { "target": "t1", "actions": [ \#(log("s initial")) ] },
                       "states": { "t1": { "entry": [ \#(log("enter t1")) ] }, "t2": {} } } } }
            """#)
        #expect(machine.initialState.context["started"] == 1)
        #expect(machine.initialState.value == ["idle"])
        let go = try #require(machine.transition(machine.initialState, event("GO")))
        #expect(propagatedTypes(go) == ["enter s", "s initial", "enter t1"])
        let deep = try #require(machine.transition(machine.initialState, event("DEEP")))
        #expect(propagatedTypes(deep) == ["enter s"])
        #expect(deep.value == ["s", "t2"])
        #expect(issueLines(#"{ "initial": { "actions": [] }, "states": { "a": {} } }"#) == [
            #"test.json: initial.target: missing: a machine, and every state with "states", names its initial state"#,
        ])
        #expect(issueLines(#"{ "initial": { "target": "b", "guard": { "eq": [1, 1] } }, "states": { "a": {} } }"#) == [
            #"test.json: initial.guard: unknown key"#, #"test.json: initial.target: unknown state "b""#,
        ])
    }

    /// actions.test.ts, "initial actions": "should support initial actions" (the root's
    /// run before its initial state's entry), "should execute actions of all initial
    /// transitions resolving to the initial state value", "should execute actions of
    /// initial transitions only once when taking an explicit transition", and "should
    /// execute actions of the initial transition when taking a root reentering
    /// self-transition" (the root exits and enters again, its initial actions once).
    @Test func initialTransitionActions_AsActionsTestTsHasThem() throws {
        let count = { (key: String) in #"{ "type": "assign", "set": { "n": { "add": 1 }, "\#(key)": { "from": "context.n" } } }"#
        }
        let machine = try makeMachine(#"""
            { "id": "root", "gears": { "log": {} }, "context": { "n": 0 },
              "initial": { "target": "a", "actions": [ \#(count("rootInitial")), \#(log("initial in root")) ] },
              "exit": [ \#(log("exit root")) ], "entry": [ \#(log("enter root")) ],
              "on": { "REENTER": { "target": "#root", "reenter": true } }, "states": {
                "a": { "entry": [ \#(count("seenByEntryA")) ],
                       "initial": { "target": "a1", "actions": [ \#(count("seenByInner")) ] }, "states": { "a1": {} },
                       "on": { "NEXT": "b" } },
                "b": { "initial": { "target": "b_child", "actions": [ \#(log("initial in b")) ] }, "states": {
                  "b_child": { "initial": { "target": "b_grandchild", "actions": [ \#(log("initial in b_child")) ] },
                               "states": { "b_grandchild": {} } } } } } }
            """#)
        #expect(machine.initialState.context == ["n": 3, "rootInitial": 1, "seenByEntryA": 2, "seenByInner": 3])
        let next = try #require(machine.transition(machine.initialState, event("NEXT")))
        #expect(propagatedTypes(next) == ["initial in b", "initial in b_child"])
        let reentered = try #require(machine.transition(next, event("REENTER")))
        #expect(propagatedTypes(reentered) == ["exit root", "enter root", "initial in root"])
        #expect(reentered.valueJSON == json(#"{"a":"a1"}"#))
        #expect(reentered.context["rootInitial"] == 4)
    }

    /// actions.test.ts, "root entry/exit actions should be called on root reentering
    /// transitions": the root's own transition with `"reenter": true` to a state below it
    /// exits the root and enters it again (XState v5: no domain but the machine), not its
    /// initial actions (the root is not entered by default: its descendant is the target).
    @Test func aRootsReenteringTransition_ToADescendant_ExitsAndEntersTheRoot() throws {
        let machine = try makeMachine(#"""
            { "id": "root", "gears": { "log": {} }, "initial": "one",
              "entry": [ \#(log("enter root")) ], "exit": [ \#(log("exit root")) ],
              "on": { "EVENT": { "target": "#two", "reenter": true }, "STAY": { "target": "#two" },
                      "TARGETLESS": { "reenter": true, "actions": [ \#(log("targetless")) ] } },
              "states": { "one": { "exit": [ \#(log("exit one")) ] },
                          "two": { "id": "two", "entry": [ \#(log("enter two")) ] } } }
            """#)
        let reentered = try #require(machine.transition(machine.initialState, event("EVENT")))
        #expect(reentered.value == ["two"])
        #expect(propagatedTypes(reentered) == ["exit one", "exit root", "enter root", "enter two"])
        // Without `reenter` the root stays.
        let moved = try #require(machine.transition(machine.initialState, event("STAY")))
        #expect(propagatedTypes(moved) == ["exit one", "enter two"])
        // Again from two: two is left and entered again inside a re-entered root.
        let again = try #require(machine.transition(reentered, event("EVENT")))
        #expect(propagatedTypes(again) == ["exit root", "enter root", "enter two"])
        // A targetless transition leaves nothing, `reenter` or not.
        #expect(propagatedTypes(machine.transition(again, event("TARGETLESS"))) == ["targetless"])
    }

    /// final.test.ts: a parallel root completes when every region is done ("root output
    /// should be called ... of the parallel root when a final child of its compound child
    /// is reached") and not before ("should not complete a parallel root immediately when
    /// only some of its regions are in their final states"); a final region is done.
    @Test func aParallelRoot_CompletesWhenEveryRegionIsDone() throws {
        let started = try makeMachine(#"{ "type": "parallel", "states": { "a": { "initial": "b", "states": { "b": { "type": "final" } } } } }"#)
        #expect(started.isDone(started.initialState))
        let machine = try makeMachine(#"""
            { "type": "parallel", "gears": { "log": {} }, "exit": [ \#(log("exit root")) ], "states": {
                "A": { "type": "final" },
                "B": { "initial": "B1", "states": { "B1": { "on": { "END": "B2" } }, "B2": { "type": "final", "exit": [ \#(log("exit B2")) ] } } } } }
            """#)
        #expect(!machine.isDone(machine.initialState))
        let done = try #require(machine.transition(machine.initialState, event("END")))
        #expect(machine.isDone(done))
        #expect(propagatedTypes(done) == ["exit B2", "exit root"])
        #expect(machine.transition(done, event("END")) == nil)
    }

    /// final.test.ts, "machine should not complete when a parallel child of a compound
    /// state completes": a compound state is done only when its active child is a final
    /// state (SCXML's isInFinalState), not a parallel state that is done; nor is a
    /// parallel state whose region is such a compound state.
    @Test func aCompoundStateWhoseChildIsADoneParallelState_IsNotDone() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "states": { "a": { "type": "parallel", "states": {
                "b": { "initial": "c", "states": { "c": { "type": "final" } } } } } } }
            """#)
        #expect(!machine.isDone(machine.initialState))
        let region = #"{ "initial": "idle", "states": { "idle": { "on": { "FINISH": "finished" } }, "finished": { "type": "final" } } }"#
        let nested = try makeMachine(#"""
            { "initial": "p", "context": { "outer": false }, "states": {
                "p": { "type": "parallel", "onDone": { "actions": [ { "type": "assign", "set": { "outer": true } } ] }, "states": {
                  "r": { "initial": "q", "states": { "q": { "type": "parallel", "states": { "x": \#(region), "y": \#(region) } } } },
                  "s": { "initial": "s1", "states": { "s1": { "on": { "END": "s2" } }, "s2": { "type": "final" } } } } } } }
            """#)
        let finished = try #require(nested.transition(nested.transition(nested.initialState, event("FINISH")), event("END")))
        #expect(finished.valueJSON == json(#"{"p":{"r":{"q":{"x":"finished","y":"finished"}},"s":"s2"}}"#))
        #expect(finished.context["outer"] == false)
    }
}
