import SpinMachines
import Testing

@Suite struct MachineGuardTests {
    /// Whether `guardJSON` lets event `E` (with `payload`) through, in a machine whose
    /// context is `{"n":5,"name":"door","flag":true,"nested":{"code":"1234"}}`.
    func holds(_ guardJSON: String, _ payload: [String: MachineValue] = [:]) throws -> Bool {
        let machine = try makeMachine(#"""
            { "initial": "idle",
              "context": { "n": 5, "name": "door", "flag": true, "nested": { "code": "1234" } },
              "states": { "idle": { "on": { "E": { "target": "yes", "guard": \#(guardJSON) } } },
                          "yes": {} } }
            """#)
        return machine.transition(machine.initialState, event("E", payload)) != nil
    }

    @Test func eqAndNeq_CompareStructurally() throws {
        #expect(try holds(#"{"eq": ["event.code", "context.nested.code"]}"#, ["code": "1234"]))
        #expect(try !holds(#"{"eq": ["event.code", "context.nested.code"]}"#, ["code": "0000"]))
        #expect(try holds(#"{"eq": ["context.n", 5]}"#))
        #expect(try holds(#"{"eq": ["context.n", 5.0]}"#))
        #expect(try holds(#"{"eq": ["context.flag", true]}"#))
        #expect(try holds(#"{"eq": ["event.missing", null]}"#))
        #expect(try holds(#"{"eq": ["event.list", [1, 2]]}"#, ["list": [1, 2]]))
        #expect(try holds(#"{"neq": ["context.name", "window"]}"#))
        #expect(try !holds(#"{"neq": ["context.name", "door"]}"#))
    }

    @Test func orderComparisons_OnNumbersAndStrings() throws {
        #expect(try holds(#"{"lt": ["context.n", 6]}"#))
        #expect(try !holds(#"{"lt": ["context.n", 5]}"#))
        #expect(try holds(#"{"lte": ["context.n", 5]}"#))
        #expect(try !holds(#"{"lte": ["context.n", 4]}"#))
        #expect(try holds(#"{"gt": ["event.amount", "context.n"]}"#, ["amount": 7]))
        #expect(try !holds(#"{"gt": ["event.amount", "context.n"]}"#, ["amount": 5]))
        #expect(try holds(#"{"gte": ["event.amount", "context.n"]}"#, ["amount": 5]))
        #expect(try !holds(#"{"gte": ["event.amount", "context.n"]}"#, ["amount": 4.5]))
        #expect(try holds(#"{"lt": ["context.name", "e"]}"#))
        // A number and a string are not ordered: every comparison is false.
        #expect(try !holds(#"{"lt": ["context.n", "9"]}"#))
        #expect(try !holds(#"{"gte": ["context.n", "9"]}"#))
    }

    @Test func literalOperand_TakesAPathLikeStringAsItIs() throws {
        #expect(try holds(#"{"eq": ["event.text", {"literal": "context.n"}]}"#, ["text": "context.n"]))
        #expect(try !holds(#"{"eq": ["event.text", "context.n"]}"#, ["text": "context.n"]))
    }

    @Test func andOrNot_Combine() throws {
        #expect(try holds(#"{"and": [{"eq": ["context.n", 5]}, {"eq": ["context.flag", true]}]}"#))
        #expect(try !holds(#"{"and": [{"eq": ["context.n", 5]}, {"eq": ["context.flag", false]}]}"#))
        #expect(try holds(#"{"or": [{"eq": ["context.n", 4]}, {"eq": ["context.flag", true]}]}"#))
        #expect(try !holds(#"{"or": [{"eq": ["context.n", 4]}, {"eq": ["context.flag", false]}]}"#))
        #expect(try holds(#"{"not": {"eq": ["context.n", 4]}}"#))
        #expect(try !holds(#"{"not": {"eq": ["context.n", 5]}}"#))
    }

    @Test func inGuard_TestsTheActiveState() throws {
        #expect(try holds(#"{"in": "idle"}"#))
        #expect(try !holds(#"{"in": "yes"}"#))
        let machine = try makeMachine(#"""
            { "initial": "p",
              "states": { "p": { "initial": "c1",
                                 "on": { "E": [ { "target": "q", "guard": { "in": "p.c2" } }, { "target": ".c2" } ] },
                                 "states": { "c1": {}, "c2": {} } },
                          "q": {} } }
            """#)
        let c2 = try #require(machine.transition(machine.initialState, event("E")))
        #expect(c2.value == ["p", "c2"])
        #expect(machine.transition(c2, event("E"))?.value == ["q"])
    }

    /// `#<machine id>.a.b` names a state by its path in an `in` guard, as in a target (and
    /// as XState's `stateIn` takes a state's id, the machine's id and the path by default);
    /// `#<state id>.child` as before.
    @Test func inGuard_TakesTheMachinesIDAndAPath_OrAStatesID() throws {
        for written in ["#m.p.c2", "#pid.c2", "p.c2"] {
            let machine = try makeMachine(##"""
                { "id": "m", "initial": "p",
                  "states": { "p": { "id": "pid", "initial": "c1",
                                     "on": { "E": [ { "target": "q", "guard": { "in": "\##(written)" } }, { "target": ".c2" } ] },
                                     "states": { "c1": {}, "c2": {} } },
                              "q": {} } }
                """##)
            let c2 = try #require(machine.transition(machine.initialState, event("E")))
            #expect(machine.transition(c2, event("E"))?.value == ["q"], "\(written)")
        }
        #expect(issueLines(##"{ "id": "m", "initial": "a", "states": { "a": { "always": { "target": "b", "guard": { "in": "#m.c" } } }, "b": {} } }"##)
            == [##"test.json: states.a.always.guard.in: unknown state "#m.c""##])
    }

    @Test func guardedArray_TakesTheFirstThatHolds() throws {
        let machine = try makeMachine(#"""
            { "initial": "idle",
              "states": { "idle": { "on": { "E": [ { "target": "big", "guard": { "gt": ["event.n", 10] } },
                                                 { "target": "small", "guard": { "gt": ["event.n", 0] } },
                                                 { "target": "zero" } ] } },
                          "big": {}, "small": {}, "zero": {} } }
            """#)
        #expect(machine.transition(machine.initialState, event("E", ["n": 11]))?.value == ["big"])
        #expect(machine.transition(machine.initialState, event("E", ["n": 3]))?.value == ["small"])
        #expect(machine.transition(machine.initialState, event("E", ["n": -1]))?.value == ["zero"])
    }

    @Test func guardsSeeTheContextBeforeTheEvent() throws {
        let machine = try makeMachine(#"""
            { "initial": "idle", "context": { "n": 0 },
              "states": { "idle": { "on": { "E": [
                  { "target": "first", "guard": { "eq": ["context.n", 0] },
                    "actions": [ { "type": "assign", "set": { "n": 1 } } ] } ] } },
                  "first": {} } }
            """#)
        #expect(machine.transition(machine.initialState, event("E"))?.value == ["first"])
    }
}
