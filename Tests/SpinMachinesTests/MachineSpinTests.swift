import SpinCore
import SpinMachines
import SpinTesting
import Testing
@testable import SpinConcurrency

@Suite(.timeLimit(.minutes(1)))
struct MachineSpinTests {
    @Test func door_OpensCountsAndClosesAfter300ms() async throws {
        let clock = ManualClock()
        let tester = SpinTester(try door().spin(clock: clock), clock: clock)
        await tester.send(event("OPEN")) {
            $0.value = ["opened"]
            $0.context["opens"] = 1
        }
        await tester.advance(by: .milliseconds(299))
        // Ignored while opened; and `send` would fail here if the timer had fired early.
        await tester.send(event("OPEN"))
        await tester.advance(by: .milliseconds(1))
        await tester.receive(MachineEvent.after(state: ["opened"], delay: 300)) { $0.value = ["closed"] }
        await tester.send(event("LOCK")) { $0.value = ["locked"] }
        // A wrong code: no transition, nothing changes.
        await tester.send(event("UNLOCK", ["code": "0000"]))
        await tester.send(event("UNLOCK", ["code": "1234"])) { $0.value = ["closed"] }
        await tester.finish()
    }

    @Test func leavingAState_CancelsItsTimer() async throws {
        let clock = ManualClock()
        let tester = SpinTester(try door().spin(clock: clock), clock: clock)
        await tester.send(event("OPEN")) {
            $0.value = ["opened"]
            $0.context["opens"] = 1
        }
        await tester.advance(by: .milliseconds(100))
        await tester.send(event("CLOSE")) { $0.value = ["closed"] }
        #expect(tester.runningEffects == 0)
        await tester.advance(by: .milliseconds(500))
        // Nothing was produced: finish fails on an event not received.
        await tester.finish()
    }

    static let knocking = #"""
        { "initial": "closed", "context": { "knocks": 0 },
          "states": {
            "closed": { "on": { "OPEN": "opened" } },
            "opened": { "after": { "300": "closed" },
                        "on": { "KNOCK": { "actions": [ { "type": "assign", "set": { "knocks": { "add": 1 } } } ] },
                                "REOPEN": { "target": "opened", "reenter": true } } } } }
        """#

    @Test func stayingInAState_KeepsItsTimer() async throws {
        let clock = ManualClock()
        let tester = SpinTester(try makeMachine(Self.knocking).spin(clock: clock), clock: clock)
        await tester.send(event("OPEN")) { $0.value = ["opened"] }
        await tester.advance(by: .milliseconds(200))
        await tester.send(event("KNOCK")) { $0.context["knocks"] = 1 }
        await tester.advance(by: .milliseconds(100))
        await tester.receive(MachineEvent.after(state: ["opened"], delay: 300)) { $0.value = ["closed"] }
        await tester.finish()
    }

    @Test func reenteringAState_RestartsItsTimer() async throws {
        let clock = ManualClock()
        let tester = SpinTester(try makeMachine(Self.knocking).spin(clock: clock), clock: clock)
        await tester.send(event("OPEN")) { $0.value = ["opened"] }
        await tester.advance(by: .milliseconds(200))
        await tester.send(event("REOPEN"))
        await tester.advance(by: .milliseconds(299))
        // `send` fails when a produced event (a timer's that should have restarted) waits.
        await tester.send(event("KNOCK")) { $0.context["knocks"] = 1 }
        await tester.advance(by: .milliseconds(1))
        await tester.receive(MachineEvent.after(state: ["opened"], delay: 300)) { $0.value = ["closed"] }
        await tester.finish()
    }

    @Test func aChildState_KeepsItsParentsTimer() async throws {
        let clock = ManualClock()
        let machine = try makeMachine(#"""
            { "initial": "busy",
              "states": {
                "busy": { "initial": "one", "after": { "1000": "idle" },
                          "states": { "one": { "after": { "100": "two" } }, "two": {} } },
                "idle": {} } }
            """#)
        let tester = SpinTester(machine.spin(clock: clock), clock: clock)
        await tester.advance(by: .milliseconds(100))
        await tester.receive(MachineEvent.after(state: ["busy", "one"], delay: 100)) { $0.value = ["busy", "two"] }
        await tester.advance(by: .milliseconds(900))
        await tester.receive(MachineEvent.after(state: ["busy"], delay: 1000)) { $0.value = ["idle"] }
        await tester.finish()
    }

    @Test func gears_CarryEventsBetweenTwoMachines() async throws {
        let gear = Gear<MachineEvent>()
        let clock = ManualClock()
        let alarm = try makeMachine(#"""
            { "initial": "quiet", "context": { "doorsOpened": 0 },
              "states": {
                "quiet": { "on": { "SMOKE": "ringing" } },
                "ringing": { "entry": [ { "type": "gear.propagate", "gear": "doors",
                                          "event": { "type": "fireAlarm", "room": { "from": "event.room" } } } ],
                             "on": { "DOOR_OPENED": { "actions": [ { "type": "assign", "set": { "doorsOpened": { "add": 1 } } } ] } } } },
              "gears": { "doors": { "catch": { "doorOpened": "DOOR_OPENED" } } } }
            """#, file: "alarm.json", hostGears: ["doors"])
        let doorTester = SpinTester(try door().spin(gears: ["doors": gear], clock: clock), clock: clock, label: "door")
        let alarmTester = SpinTester(alarm.spin(gears: ["doors": gear], clock: clock), clock: clock, label: "alarm")
        let observed = Protected<[String]>([])
        let subscription = gear.observe { delivery in
            observed.withLock { $0.append("\(delivery.source ?? "?"):\(delivery.event.type)") }
        }
        defer { subscription.cancel() }

        await alarmTester.send(event("SMOKE", ["room": "hall"])) { $0.value = ["ringing"] }
        // The alarm's fireAlarm (with the room) reaches the door as OPEN.
        await doorTester.receive(event("OPEN", ["room": "hall"])) {
            $0.value = ["opened"]
            $0.context["opens"] = 1
        }
        // The door's entry propagates doorOpened, which the alarm catches.
        await alarmTester.receive(event("DOOR_OPENED")) { $0.context["doorsOpened"] = 1 }
        await doorTester.advance(by: .milliseconds(300))
        await doorTester.receive(MachineEvent.after(state: ["opened"], delay: 300)) { $0.value = ["closed"] }
        #expect(observed.withLock { $0 } == ["alarm:fireAlarm", "door:doorOpened"])
        await doorTester.finish()
        await alarmTester.finish()
    }

    @Test func theStateALoopStartsFrom_PropagatesNothing() async throws {
        let gear = Gear<MachineEvent>()
        let machine = try door()
        let opened = try #require(machine.transition(machine.initialState, event("OPEN")))
        #expect(opened.step.propagations.count == 1)
        let observed = Protected(0)
        let subscription = gear.observe { _ in observed.withLock { $0 += 1 } }
        defer { subscription.cancel() }
        let clock = ManualClock()
        // A host restarting from a replayed state must not send its last transition's events again.
        let tester = SpinTester(machine.spin(gears: ["doors": gear], clock: clock, initialState: opened), clock: clock)
        #expect(observed.withLock { $0 } == 0)
        await tester.advance(by: .milliseconds(300))
        await tester.receive(MachineEvent.after(state: ["opened"], delay: 300)) { $0.value = ["closed"] }
        await tester.send(event("OPEN")) {
            $0.value = ["opened"]
            $0.context["opens"] = 2
        }
        #expect(observed.withLock { $0 } == 1)
        tester.skipReceivedEvents()
    }

    @Test func session_LogsInAfter500ms() async throws {
        let clock = ManualClock()
        let session = try shippedMachine("session")
        #expect(session.initialState.value == ["loggedOut"])
        let tester = SpinTester(session.spin(clock: clock), clock: clock)
        await tester.send(event("login")) { $0.value = ["loggingIn"] }
        await tester.advance(by: .milliseconds(500))
        await tester.receive(MachineEvent.after(state: ["loggingIn"], delay: 500)) { $0.value = ["loggedIn"] }
        await tester.send(event("logout")) { $0.value = ["loggingOut"] }
        await tester.send(event("logoutOK")) { $0.value = ["loggedOut"] }
        await tester.finish()
    }

    @Test func session_ForceLogoutWhileLoggingIn_IgnoresTheLateTimer() async throws {
        let clock = ManualClock()
        let session = try shippedMachine("session")
        let tester = SpinTester(session.spin(clock: clock), clock: clock)
        await tester.send(event("login")) { $0.value = ["loggingIn"] }
        await tester.advance(by: .milliseconds(200))
        await tester.send(event("forceLogout")) { $0.value = ["loggedOut"] }
        await tester.advance(by: .milliseconds(500))
        // Had the timer's event arrived anyway (say, replayed from an old journal), it changes nothing.
        #expect(session.transition(tester.state, MachineEvent.after(state: ["loggingIn"], delay: 500)) == nil)
        await tester.finish()
    }

    @Test func session_ForceLogoutWhenLoggedIn_AndLoginOK() throws {
        let session = try shippedMachine("session")
        let loggingIn = try #require(session.transition(session.initialState, event("login")))
        let loggedIn = try #require(session.transition(loggingIn, event("loginOK")))
        #expect(loggedIn.value == ["loggedIn"])
        #expect(session.transition(loggedIn, event("forceLogout"))?.value == ["loggedOut"])
        #expect(session.transition(session.initialState, event("forceLogout")) == nil)
        #expect(session.transition(loggedIn, event("login")) == nil)
    }

    @Test func aRunningLoop_TimesOutOnItsClock() async throws {
        let clock = ManualClock()
        let loop = try door().spin(clock: clock).start()
        defer { loop.stop() }
        loop.emit(event("OPEN"))
        var states = loop.states.makeAsyncIterator()
        while let state = await states.next(), state.value != ["opened"] {}
        while clock.sleepers == 0 { await Task.yield() }
        await clock.advance(by: .milliseconds(300))
        while let state = await states.next(), state.value != ["closed"] {}
        #expect(loop.state.value == ["closed"])
        #expect(loop.state.context["opens"] == 1)
    }
}
