import SpinCore
import SpinMachines
import SpinTesting
import Testing

/// `raise` and `cancel` actions, re-expressed from XState v5's
/// `packages/core/test/actions.test.ts` (statelyai/xstate), describes "raise" and
/// "cancel": each test names the test its machine comes from.
@Suite struct MachineRaiseTests {
    /// raise: "should be able to raise an event and respond to it in the same state"
    /// (the raise in the initial state's entry is taken as the machine starts).
    @Test func aRaisedEvent_IsTakenBeforeAnyOther_AlsoAtStart() throws {
        let machine = try makeMachine(#"""
            { "initial": "a",
              "states": { "a": { "entry": [ { "type": "raise", "event": { "type": "TO_B" } } ], "on": { "TO_B": "b" } },
                          "b": { "type": "final" } } }
            """#)
        #expect(machine.initialState.value == ["b"])
        #expect(machine.isDone(machine.initialState))
    }

    /// raise: "should accept event expression" and "should be possible to access context
    /// in the event expression" (fields taken with `from`).
    @Test func aRaisedEvent_CarriesFieldsFromTheContextAndTheEvent() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "context": { "who": "ada" },
              "states": {
                "a": { "on": { "NEXT": { "actions": [ { "type": "raise", "event": { "type": "RAISED",
                                          "who": { "from": "context.who" }, "n": { "from": "event.n" } } } ] },
                               "RAISED": { "target": "b", "actions": [ { "type": "assign",
                                          "set": { "got": { "from": "event.who" }, "n": { "from": "event.n" } } } ] } } },
                "b": {} } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("NEXT", ["n": 3])))
        #expect(next.value == ["b"])
        #expect(next.context["got"] == "ada" && next.context["n"] == 3)
    }

    /// transient.test.ts: "should select eventless transition based on the latest event"
    /// (v5 evaluates `always` guards with the event of the latest microstep: here the
    /// raised one, whose field the external event does not have).
    @Test func alwaysGuards_AfterARaisedEvent_SeeTheRaisedEvent() throws {
        let machine = try makeMachine(#"""
            { "initial": "a",
              "states": {
                "a": { "on": { "NEXT": { "actions": [ { "type": "raise", "event": { "type": "R", "n": 5 } } ] },
                               "R": "c" } },
                "c": { "always": [ { "target": "d", "guard": { "eq": [ "event.n", 5 ] } } ] },
                "d": {} } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("NEXT")))
        #expect(next.value == ["d"])
    }

    /// A raised event that no transition takes is dropped; the step still applies.
    @Test func aRaisedEventWithoutTransition_IsDropped() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "context": { "n": 0 },
              "states": { "a": { "on": { "GO": { "actions": [ { "type": "raise", "event": { "type": "LATER" } },
                                                              { "type": "assign", "set": { "n": { "add": 1 } } } ] } } },
                          "b": { "on": { "LATER": "a" } } },
              "on": { "B": ".b" } }
            """#)
        let next = try #require(machine.transition(machine.initialState, event("GO")))
        #expect(next.value == ["a"] && next.context["n"] == 1)
    }

    static let delayed = #"""
        { "initial": "a",
          "states": {
            "a": { "on": { "NEXT": { "actions": [ { "type": "raise", "event": { "type": "RAISED" }, "delay": 100, "id": "myId" } ] },
                           "RAISED": "b",
                           "CANCEL": { "actions": [ { "type": "cancel", "id": "myId" } ] } } },
            "b": {} } }
        """#

    /// raise: "should be able to raise a delayed event and respond to it in the same
    /// state": the event reaches the machine after its delay, as an event of the loop
    /// (`xstate.raise`, carrying it); meanwhile the state holds it.
    @Test func aDelayedRaise_IsSentAfterItsDelay() async throws {
        let clock = ManualClock()
        let machine = try makeMachine(Self.delayed)
        let raised = MachineScheduledEvent(key: 1, id: "myId", delay: 100, event: event("RAISED"))
        let step = try #require(machine.transition(machine.initialState, event("NEXT")))
        #expect(step.step.scheduled == [raised])
        #expect(step.scheduled == [raised])
        let tester = SpinTester(machine.spin(clock: clock), clock: clock)
        await tester.send(event("NEXT")) { $0.scheduled = [raised] }
        await tester.advance(by: .milliseconds(99))
        await tester.advance(by: .milliseconds(1))
        await tester.receive(.scheduled(raised)) {
            $0.value = ["b"]
            $0.scheduled = []
        }
        await tester.finish()
    }

    /// cancel: "should be possible to cancel a raised delayed event".
    @Test func aCancelledDelayedRaise_IsNotSent() async throws {
        let clock = ManualClock()
        let tester = SpinTester(try makeMachine(Self.delayed).spin(clock: clock), clock: clock)
        await tester.send(event("NEXT")) { $0.scheduled = [MachineScheduledEvent(key: 1, id: "myId", delay: 100, event: event("RAISED"))] }
        await tester.advance(by: .milliseconds(50))
        await tester.send(event("CANCEL")) { $0.scheduled = [] }
        // `finish` fails when a produced event waits: none does.
        await tester.advance(by: .milliseconds(100))
        await tester.finish()
    }

    /// actions.test.ts: "should not try to clear an undefined timeout when canceling an
    /// unscheduled timer": a `cancel` whose id no `raise` has is valid and does nothing.
    @Test func aCancelOfAnIDNoRaiseHas_IsValid_AndDoesNothing() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "context": { "n": 0 },
              "states": { "a": { "on": { "FOO": { "actions": [ { "type": "cancel", "id": "foo" },
                                                               { "type": "assign", "set": { "n": { "add": 1 } } } ] } } } } }
            """#)
        let moved = try #require(machine.transition(machine.initialState, event("FOO")))
        #expect(moved.value == ["a"] && moved.context["n"] == .number(1) && moved.scheduled.isEmpty)
    }

    @Test func raiseAndCancel_AreValidated() {
        #expect(issueLines(#"""
            { "initial": "a",
              "states": { "a": { "entry": [ { "type": "raise", "event": { "type": "NOPE" }, "delay": -1 },
                                            { "type": "raise", "event": { "type": "X" } },
                                            { "type": "cancel", "id": "nobody" },
                                            { "type": "raise", "event": "X" } ],
                                 "on": { "X": { "actions": [] } } } } }
            """#) == [
                #"test.json: states.a.entry[0].delay: bad delay "-1": a delay is a whole number of milliseconds, 0 or more"#,
                #"test.json: states.a.entry[3]: unknown action: "raise" takes "event" (an object with a string "type"), and "delay" (ms) and "id" if it waits"#,
                #"test.json: states.a.entry[0].event.type: no state handles event "NOPE""#,
            ])
    }
}
