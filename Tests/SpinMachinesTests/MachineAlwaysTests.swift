import SpinMachines
import Testing

/// Eventless (`always`) transitions, re-expressed from XState v5's
/// `packages/core/test/transient.test.ts` (statelyai/xstate), "transient states
/// (eventless transitions)": each test names the test its machine comes from.
@Suite struct MachineAlwaysTests {
    static let update = #"""
        { "initial": "G", "context": { "data": false, "status": null },
          "states": {
            "G": { "on": { "UPDATE_BUTTON_CLICKED": "E" } },
            "E": { "always": [ { "target": "D", "guard": { "eq": ["context.data", false] } },
                               { "target": "B", "guard": { "eq": ["context.status", "Y"] } },
                               { "target": "F" } ] },
            "D": {}, "B": {}, "F": {} } }
        """#

    /// "should choose the first candidate target that matches the guard 1" (and 2), and
    /// "should choose the final candidate without a guard if none others match".
    @Test func alwaysTakesTheFirstCandidateWhoseGuardHolds() throws {
        let machine = try makeMachine(Self.update)
        #expect(machine.transition(machine.initialState, event("UPDATE_BUTTON_CLICKED"))?.value == ["D"])
        let withData = MachineState(value: ["G"], context: ["data": true, "status": "Y"])
        #expect(machine.transition(withData, event("UPDATE_BUTTON_CLICKED"))?.value == ["B"])
        let other = MachineState(value: ["G"], context: ["data": true, "status": "Z"])
        let final = try #require(machine.transition(other, event("UPDATE_BUTTON_CLICKED")))
        #expect(final.value == ["F"])
        // Every state the step passed through is recorded, so timers and Gears see it.
        #expect(final.step.entered == [["E"], ["F"]])
    }

    /// "should carry actions from previous transitions within same step": the actions of
    /// the event's transition and of the eventless ones run in one step, in order.
    @Test func actionsOfTheEventAndOfTheEventlessSteps_RunInOrder() throws {
        let machine = try makeMachine(#"""
            { "initial": "A",
              "states": {
                "A": { "exit": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "exit_A" } } ],
                       "on": { "TIMER": { "target": "T", "actions": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "timer" } } ] } } },
                "T": { "always": "B" },
                "B": { "entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "enter_B" } } ] } },
              "gears": { "log": {} } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("TIMER")))
        #expect(next.value == ["B"])
        #expect(propagatedTypes(next) == ["exit_A", "timer", "enter_B"])
    }

    /// "should determine the resolved initial state from the transient state", with the
    /// greeting machine's guards on the context.
    @Test func theInitialStateIsSettled() throws {
        let machine = try makeMachine(#"""
            { "id": "greeting", "initial": "pending", "context": { "hour": 10 },
              "states": {
                "pending": { "always": [ { "target": "morning", "guard": { "lt": ["context.hour", 12] } },
                                         { "target": "afternoon", "guard": { "lt": ["context.hour", 18] } },
                                         { "target": "evening" } ] },
                "morning": {}, "afternoon": {}, "evening": {} },
              "on": { "CHANGE": { "actions": [ { "type": "assign", "set": { "hour": 20 } } ] }, "RECHECK": ".pending" } }
            """#)
        #expect(machine.initialState.value == ["morning"])
        #expect(machine.initialState.step == MachineStep())
        let changed = try #require(machine.transition(machine.initialState, event("CHANGE")))
        #expect(changed.value == ["morning"])
        #expect(machine.transition(changed, event("RECHECK"))?.value == ["evening"])
    }

    /// "should work with transient transition on root": an `always` on the machine root,
    /// guarded on the context, is checked after every step.
    @Test func alwaysOnTheRoot_IsCheckedAfterEveryStep() throws {
        let machine = try makeMachine(#"""
            { "initial": "active", "context": { "count": 0 },
              "states": {
                "active": { "on": { "INC": { "actions": [ { "type": "assign", "set": { "count": { "add": 1 } } } ] } } },
                "finished": { "type": "final" } },
              "always": { "target": ".finished", "guard": { "gt": ["context.count", 0] } } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("INC")))
        #expect(next.value == ["finished"])
        #expect(machine.isDone(next))
    }

    /// Guards of `always` transitions see the event that set the step off.
    @Test func alwaysGuardsSeeTheEventOfTheStep() throws {
        let machine = try makeMachine(#"""
            { "initial": "idle",
              "states": {
                "idle": { "on": { "GO": "deciding" } },
                "deciding": { "always": [ { "target": "fast", "guard": { "eq": ["event.speed", "fast"] } }, { "target": "slow" } ] },
                "fast": {}, "slow": {} } }
            """#)
        #expect(machine.transition(machine.initialState, event("GO", ["speed": "fast"]))?.value == ["fast"])
        #expect(machine.transition(machine.initialState, event("GO"))?.value == ["slow"])
    }

    /// A loop through guarded `always` transitions cannot be seen before it runs: the
    /// step stops after `microstepLimit` microsteps and says `unsettled` (a host suspends
    /// the Spin then).
    @Test func aGuardedEventlessLoop_StopsAtTheMicrostepLimit() throws {
        let machine = try makeMachine(#"""
            { "initial": "idle", "context": { "n": 0, "on": false },
              "states": {
                "idle": { "on": { "START": { "target": "a", "actions": [ { "type": "assign", "set": { "on": true } } ] } } },
                "a": { "always": { "target": "b", "guard": { "eq": ["context.on", true] },
                                   "actions": [ { "type": "assign", "set": { "n": { "add": 1 } } } ] } },
                "b": { "always": { "target": "a", "guard": { "eq": ["context.on", true] } } } } }
            """#)
        let stopped = try #require(machine.transition(machine.initialState, event("START")))
        #expect(stopped.step.unsettled)
        // The event's own step, then limit - 1 eventless ones, every other one counting.
        #expect(stopped.context["n"] == .number(Double(MachineDefinition.microstepLimit / 2)))
    }

    @Test func eventlessLoopsWithoutGuards_AreIssues() {
        #expect(issueLines(#"""
            { "initial": "a",
              "states": { "a": { "always": "b" }, "b": { "always": "c" }, "c": { "always": "a" },
                          "d": { "always": { "actions": [] }, "on": { "X": "a" } } },
              "on": { "D": ".d" } }
            """#) == [
                #"test.json: states.a.always: endless loop: "always" transitions without guards go round a → b → c → a"#,
                #"test.json: states.b.always: endless loop: "always" transitions without guards go round b → c → a → b"#,
                #"test.json: states.c.always: endless loop: "always" transitions without guards go round c → a → b → c"#,
                #"test.json: states.d.always: endless loop: an "always" transition without guard or target is taken again and again"#,
            ])
    }
    /// "should be taken even in absence of other transitions": an event no `on` takes ends
    /// a macrostep all the same, and the `always` guard sees it.
    @Test func anEventNoTransitionTakes_StillLetsAnAlwaysTransitionThatSeesIt() throws {
        let machine = try makeMachine(#"""
            { "initial": "a",
              "states": { "a": { "always": { "target": "b", "guard": { "eq": ["event.type", "WHATEVER"] } } }, "b": {} } }
            """#)
        let moved = try #require(machine.transition(machine.initialState, event("WHATEVER")))
        #expect(moved.value == ["b"])
        #expect(moved.step.entered == [["b"]])
        // Another event lets no guard through: not applied, as before.
        #expect(machine.transition(machine.initialState, event("OTHER")) == nil)
    }

    /// "should select subsequent transient transitions even in absence of other
    /// transitions".
    @Test func theAlwaysTransitionsAfterIt_AreTakenToo() throws {
        let machine = try makeMachine(#"""
            { "initial": "a",
              "states": { "a": { "always": { "target": "b", "guard": { "eq": ["event.type", "WHATEVER"] } } },
                          "b": { "always": "c" }, "c": {} } }
            """#)
        let moved = try #require(machine.transition(machine.initialState, event("WHATEVER")))
        #expect(moved.value == ["c"])
        #expect(moved.step.entered == [["b"], ["c"]])
    }

    /// The same in a machine with a parallel state (the other interpreter), where one
    /// region's `always` waits for the event and the other's state stays.
    @Test func inAParallelState_TheRegionWhoseAlwaysSeesTheEvent_Moves() throws {
        let machine = try makeMachine(#"""
            { "initial": "p", "context": { "n": 0 },
              "states": { "p": { "type": "parallel", "states": {
                "x": { "initial": "a", "states": {
                  "a": { "always": { "target": "b", "guard": { "eq": ["event.type", "WHATEVER"] },
                                     "actions": [ { "type": "assign", "set": { "n": { "add": 1 } } } ] } },
                  "b": {} } },
                "y": { "initial": "c", "states": { "c": {} } } } } } }
            """#)
        let moved = try #require(machine.transition(machine.initialState, event("WHATEVER")))
        #expect(moved.leaves == [["p", "x", "b"], ["p", "y", "c"]])
        #expect(moved.context["n"] == .number(1))
        #expect(machine.transition(machine.initialState, event("OTHER")) == nil)
    }
}
