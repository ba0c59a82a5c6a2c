import Foundation
import SpinCore
import SpinMachines
import SpinTesting
import Testing

/// Delayed `raise` actions kept in the state (`MachineState.scheduled`): sent from the
/// initial state's entry, after a restart from the journal or a snapshot, replaced and
/// cancelled by id in the order the actions run. XState v5's tests named are in
/// `packages/core/test/actions.test.ts` (statelyai/xstate), describes "raise" and "cancel".
@Suite struct MachineScheduledTests {
    /// raise: "should be able to send a delayed event to itself": the raise is in the
    /// initial state's entry, and the event arrives after the machine has moved on.
    static let toItself = #"""
        { "initial": "a",
          "states": {
            "a": { "entry": [ { "type": "raise", "event": { "type": "EVENT" }, "delay": 1 } ], "on": { "TO_B": "b" } },
            "b": { "on": { "EVENT": "c" } },
            "c": { "type": "final" } } }
        """#

    @Test func aDelayedRaiseInTheInitialEntry_IsSent() async throws {
        let clock = ManualClock()
        let machine = try makeMachine(Self.toItself)
        let raised = MachineScheduledEvent(key: 1, delay: 1, event: event("EVENT"))
        #expect(machine.initialState.scheduled == [raised])
        let tester = SpinTester(machine.spin(clock: clock), clock: clock)
        await tester.send(event("TO_B")) { $0.value = ["b"] }
        await tester.advance(by: .milliseconds(1))
        await tester.receive(.scheduled(raised)) {
            $0.value = ["c"]
            $0.scheduled = []
        }
        #expect(machine.isDone(tester.state))
        await tester.finish()
    }

    /// In a parallel machine too: a region's entry schedules at start, another region's
    /// transition replaces it by id, and the event is taken in the region that handles it.
    @Test func delayedRaisesInRegions_AreKeptAndSent() async throws {
        let clock = ManualClock()
        let machine = try makeMachine(#"""
            { "type": "parallel",
              "states": {
                "lamp": { "initial": "off",
                          "states": { "off": { "entry": [ { "type": "raise", "event": { "type": "ON" }, "delay": 50, "id": "lamp" } ],
                                               "on": { "ON": "on" } },
                                      "on": {} } },
                "timer": { "initial": "idle",
                           "states": { "idle": { "on": { "SNOOZE": { "actions": [
                                         { "type": "raise", "event": { "type": "ON" }, "delay": 80, "id": "lamp" } ] } } } } } } }
            """#)
        #expect(machine.initialState.scheduled == [MachineScheduledEvent(key: 1, id: "lamp", delay: 50, event: event("ON"))])
        let later = MachineScheduledEvent(key: 1, id: "lamp", delay: 80, event: event("ON"))
        let tester = SpinTester(machine.spin(clock: clock), clock: clock)
        await tester.send(event("SNOOZE")) { $0.scheduled = [later] }
        await tester.advance(by: .milliseconds(50))
        await tester.advance(by: .milliseconds(30))
        await tester.receive(.scheduled(later)) {
            $0 = MachineState(leaves: [["lamp", "on"], ["timer", "idle"]], context: [:])
        }
        await tester.finish()
    }

    /// A delayed event that comes due while the loop is suspended is dropped by the
    /// suspension with everything the feedbacks send; the loop's resumption sends it again
    /// (it is still in the state), and so does an `after` timer that fired meanwhile.
    @Test func whatASuspensionDropped_IsSentWhenTheLoopResumes() async throws {
        let clock = ManualClock()
        let machine = try makeMachine(#"""
            { "initial": "asleep",
              "states": { "asleep": { "entry": [ { "type": "raise", "event": { "type": "WAKE" }, "delay": 100 } ],
                                      "on": { "WAKE": "awake" } },
                          "awake": { "after": { "100": "ringing" } },
                          "ringing": {} } }
            """#)
        let loop = machine.spin(clock: clock).makeLoop()
        loop.start()
        for expected in [["awake"], ["ringing"]] {
            #expect(await waitUntil { clock.sleepers == 1 })
            #expect(loop.suspend(reason: "held"))
            await clock.advance(by: .milliseconds(100))
            // The event was sent and dropped: the state stays.
            #expect(await waitUntil { clock.sleepers == 0 })
            try await Task.sleep(for: .milliseconds(20))
            #expect(loop.state.value != expected)
            #expect(loop.resume())
            #expect(await waitUntil { loop.state.value == expected }, "\(expected): \(loop.state.value) sleepers \(clock.sleepers)")
        }
        #expect(loop.state.scheduled.isEmpty)
        loop.stop()
    }

    /// raise: "should be able to send a delayed event to itself with delay = 0": not
    /// taken at once, but as an event of its own.
    @Test func aZeroDelay_SendsTheEventAfterTheStep() async throws {
        let clock = ManualClock()
        let machine = try makeMachine(#"""
            { "initial": "a",
              "states": { "a": { "entry": [ { "type": "raise", "event": { "type": "EVENT" }, "delay": 0 } ], "on": { "EVENT": "b" } },
                          "b": {} } }
            """#)
        #expect(machine.initialState.value == ["a"])
        let tester = SpinTester(machine.spin(clock: clock), clock: clock)
        await tester.advance(by: .zero)
        await tester.receive(.scheduled(MachineScheduledEvent(key: 1, delay: 0, event: event("EVENT")))) {
            $0.value = ["b"]
            $0.scheduled = []
        }
        await tester.finish()
    }

    /// A Spin that starts from a state holding scheduled events (what a server recovered
    /// from its journal or a snapshot) sends them, each after its whole delay.
    @Test func aRecoveredState_SendsWhatItHolds() async throws {
        let clock = ManualClock()
        let machine = try makeMachine(RaiseFixtures.timeouts)
        let first = try #require(machine.transition(machine.initialState, event("START")))
        let json = try JSONEncoder().encode(first)
        let recovered = try JSONDecoder().decode(MachineState.self, from: json)
        #expect(recovered == first)
        #expect(recovered.scheduled.map(\.key) == [1, 2])
        let tester = SpinTester(machine.spin(clock: clock, initialState: recovered), clock: clock)
        await tester.advance(by: .milliseconds(100))
        await tester.receive(.scheduled(recovered.scheduled[0])) {
            $0.context["pings"] = 1
            $0.scheduled = [recovered.scheduled[1]]
        }
        await tester.advance(by: .milliseconds(100))
        await tester.receive(.scheduled(recovered.scheduled[1])) {
            $0.value = ["timedOut"]
            $0.scheduled = []
        }
        await tester.finish()
    }

    @Test func theStateJSON_CarriesScheduledEvents_OnlyWhenThereAreAny() throws {
        let machine = try makeMachine(RaiseFixtures.timeouts)
        let started = try #require(machine.transition(machine.initialState, event("START")))
        let text = String(decoding: try JSONEncoder.sorted.encode(started), as: UTF8.self)
        #expect(text == #"{"context":{"pings":0},"scheduled":[{"delay":100,"event":{"type":"PING"},"key":1},"#
                + #"{"delay":200,"event":{"type":"GIVE_UP"},"id":"giveUp","key":2}],"value":"waiting"}"#)
        let idle = String(decoding: try JSONEncoder.sorted.encode(machine.initialState), as: UTF8.self)
        #expect(!idle.contains("scheduled"))
        // Two with one key cannot be a machine's state.
        let twice = #"{"value":"waiting","context":{},"scheduled":[{"key":1,"delay":5,"event":{"type":"PING"}},{"key":1,"delay":5,"event":{"type":"PING"}}]}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MachineState.self, from: Data(twice.utf8)) }
    }

    /// A later `raise` with the same id takes the earlier one's place (armed anew); a
    /// `cancel` before it in the same actions cancels only the earlier one, one after it
    /// cancels both.
    @Test func sameIDs_ReplaceAndCancel_InTheOrderTheActionsRun() throws {
        let machine = try makeMachine(RaiseFixtures.timeouts)
        let started = try #require(machine.transition(machine.initialState, event("START")))
        let again = try #require(machine.transition(started, event("RESTART")))
        #expect(again.scheduled.map(\.key) == [1, 2])
        #expect(again.scheduled.map(\.id) == [nil, "giveUp"])
        #expect(again.step.scheduled.map(\.key) == [2])
        let stopped = try #require(machine.transition(again, event("STOP")))
        #expect(stopped.scheduled.map(\.key) == [1])
    }

    /// Applying the event a delayed raise sends takes it out of the state even when no
    /// transition takes it (XState drops it); one the state no longer holds (cancelled,
    /// or another event under that key) changes nothing.
    @Test func theSentEvent_IsTakenOut_AndAStaleOneChangesNothing() throws {
        let machine = try makeMachine(RaiseFixtures.timeouts)
        let started = try #require(machine.transition(machine.initialState, event("START")))
        let giveUp = started.scheduled[1]
        let stopped = try #require(machine.transition(started, event("STOP")))
        #expect(machine.transition(stopped, .scheduled(giveUp)) == nil)
        let forged = MachineScheduledEvent(key: 2, id: "giveUp", delay: 200, event: event("PING"))
        #expect(machine.transition(started, .scheduled(forged)) == nil)
        let ignored = try #require(machine.transition(started, .scheduled(MachineScheduledEvent(key: 1, delay: 100, event: event("PING")))))
        let notTaken = try #require(machine.transition(ignored, event("PAUSE")))
        let pinged = try #require(machine.transition(notTaken, .scheduled(notTaken.scheduled[0])))
        #expect(pinged.value == notTaken.value && pinged.context == notTaken.context)
        #expect(pinged.scheduled.isEmpty)
        #expect(pinged.step.propagations.isEmpty)
    }

    /// A machine that completes has nothing scheduled any more (XState stops the actor).
    @Test func aDoneMachine_HoldsNothingScheduled() throws {
        let machine = try makeMachine(RaiseFixtures.timeouts)
        let started = try #require(machine.transition(machine.initialState, event("START")))
        let done = try #require(machine.transition(started, event("QUIT")))
        #expect(machine.isDone(done))
        #expect(done.scheduled.isEmpty)
    }

    /// The machine's own types (`xstate.`) are not for `on` nor `raise`: a done event
    /// raised by hand would complete a state early.
    @Test func theMachinesOwnEventTypes_AreReserved() {
        #expect(issueLines(#"""
            { "initial": "a",
              "states": { "a": { "entry": [ { "type": "raise", "event": { "type": "xstate.raise" }, "delay": 5 },
                                            { "type": "raise", "event": { "type": "xstate.done.state.a" } } ],
                                 "on": { "xstate.raise": "a", "xstate.init": "a" } } } }
            """#) == [
                #"test.json: states.a.on["xstate.init"]: event type "xstate.init" is the machine's own: "xstate." types are taken through "after" and "onDone", not "on" or "raise""#,
                #"test.json: states.a.on["xstate.raise"]: event type "xstate.raise" is the machine's own: "xstate." types are taken through "after" and "onDone", not "on" or "raise""#,
                #"test.json: states.a.entry[0].event.type: event type "xstate.raise" is the machine's own: "xstate." types are taken through "after" and "onDone", not "on" or "raise""#,
                #"test.json: states.a.entry[1].event.type: event type "xstate.done.state.a" is the machine's own: "xstate." types are taken through "after" and "onDone", not "on" or "raise""#,
            ])
    }

    @Test func theStateSchema_DescribesScheduledEvents() throws {
        let machine = try makeMachine(RaiseFixtures.timeouts)
        let scheduled = try #require(machine.stateSchema["properties"]?["scheduled"])
        #expect(scheduled["items"]?["required"] == .array(["key", "delay", "event"].map(JSONSchema.JSON.string)))
        #expect(try makeMachine(MachineRaiseTests.delayed).stateSchema["properties"]?["scheduled"] != nil)
        #expect(try makeMachine(#"{ "initial": "a", "states": { "a": {} } }"#).stateSchema["properties"]?["scheduled"] == nil)
    }
}

enum RaiseFixtures {
    /// Pings after 100 ms and gives up after 200 ms unless stopped.
    static let timeouts = #"""
        { "initial": "idle", "context": { "pings": 0 },
          "states": {
            "idle": { "on": { "START": "waiting" } },
            "waiting": {
              "entry": [ { "type": "raise", "event": { "type": "PING" }, "delay": 100 },
                         { "type": "raise", "event": { "type": "GIVE_UP" }, "delay": 200, "id": "giveUp" } ],
              "on": {
                "PING": { "actions": [ { "type": "assign", "set": { "pings": { "add": 1 } } } ] },
                "GIVE_UP": "timedOut",
                "RESTART": { "actions": [ { "type": "cancel", "id": "giveUp" },
                                          { "type": "raise", "event": { "type": "GIVE_UP" }, "delay": 200, "id": "giveUp" } ] },
                "STOP": { "actions": [ { "type": "raise", "event": { "type": "GIVE_UP" }, "delay": 200, "id": "giveUp" },
                                       { "type": "cancel", "id": "giveUp" } ] },
                "PAUSE": "paused",
                "QUIT": "quit" } },
            "paused": {},
            "timedOut": {},
            "quit": { "type": "final" } } }
        """#
}

extension JSONEncoder {
    /// Keys sorted: a stable text to compare.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// Whether `condition` holds within a minute (real time; a passing test only yields).
func waitUntil(_ condition: () -> Bool) async -> Bool {
    // 60 s: with every suite in parallel on two cores, a task (this one, or the feedback
    // it waits for) can wait tens of seconds for a cooperative thread: trivial tests of
    // the full run report 36 s, and 20 s failed once. Only a failing test waits that long.
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}
