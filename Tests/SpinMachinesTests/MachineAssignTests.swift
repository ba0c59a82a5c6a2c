import SpinMachines
import Testing

@Suite struct MachineAssignTests {
    static let machine = #"""
        { "initial": "idle",
          "context": { "count": 1, "name": "x", "profile": { "city": "Oslo" } },
          "states": { "idle": { "on": {
              "SET": { "actions": [ { "type": "assign", "set": {
                  "name": "fixed",
                  "list": [1, "two"],
                  "object": { "a": 1, "b": 2 },
                  "pathLike": { "literal": { "from": "event.x" } } } } ] },
              "COPY": { "actions": [ { "type": "assign", "set": {
                  "name": { "from": "event.user.name" },
                  "city": { "from": "context.profile.city" },
                  "whole": { "from": "event" },
                  "missing": { "from": "event.nothing" } } } ] },
              "ADD": { "actions": [
                  { "type": "assign", "set": { "count": { "add": 2.5 }, "fresh": { "add": 1 }, "name": { "add": -1 } } },
                  { "type": "gear.propagate", "gear": "out", "event": {
                      "type": "counted", "count": { "from": "context.count" }, "by": { "from": "event.by" }, "kind": "add" } } ] } } } },
          "gears": { "out": {} } }
        """#

    @Test func literal_IsSetAsItIs() throws {
        let machine = try makeMachine(Self.machine)
        let state = try #require(machine.transition(machine.initialState, event("SET")))
        #expect(state.context["name"] == "fixed")
        #expect(state.context["list"] == [1, "two"])
        #expect(state.context["object"] == ["a": 1, "b": 2])
        #expect(state.context["pathLike"] == ["from": "event.x"])
        #expect(state.context["count"] == 1)
    }

    @Test func from_CopiesFromTheEventOrTheContext() throws {
        let machine = try makeMachine(Self.machine)
        let state = try #require(machine.transition(machine.initialState, event("COPY", ["user": ["name": "Ada"]])))
        #expect(state.context["name"] == "Ada")
        #expect(state.context["city"] == "Oslo")
        #expect(state.context["whole"] == ["type": "COPY", "user": ["name": "Ada"]])
        #expect(state.context["missing"] == .null)
    }

    @Test func add_AddsToTheCurrentNumber_AndCountsOthersAsZero() throws {
        let machine = try makeMachine(Self.machine)
        let state = try #require(machine.transition(machine.initialState, event("ADD", ["by": "me"])))
        #expect(state.context["count"] == 3.5)
        #expect(state.context["fresh"] == 1)
        #expect(state.context["name"] == -1)
    }

    @Test func propagatedEvent_ReadsTheContextAfterEarlierActions() throws {
        let machine = try makeMachine(Self.machine)
        let state = try #require(machine.transition(machine.initialState, event("ADD", ["by": "me"])))
        #expect(state.step.propagations == [
            MachinePropagation(gear: "out", event: event("counted", ["count": 3.5, "by": "me", "kind": "add"])),
        ])
    }
}
