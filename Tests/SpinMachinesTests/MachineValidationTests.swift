import SpinMachines
import Testing

@Suite struct MachineValidationTests {
    @Test func shippedMachines_AreValid() throws {
        #expect(try door().id == "door")
        #expect(try shippedMachine("session").id == "session")
        #expect(throws: Never.self) { try shippedMachine("door", hostGears: ["doors"]) }
    }

    @Test func theDesignsTypo_IsReportedWithFileAndPath() {
        let json = #"""
            { "initial": "closed",
              "states": { "closed": { "on": { "LOCK": "locked" } },
                          "locked": { "on": { "UNLOCK": [ { "target": "clsoed" } ] } } } }
            """#
        #expect(issueLines(json, file: "machines/door.json") == [
            #"machines/door.json: states.locked.on.UNLOCK[0].target: unknown state "clsoed" (did you mean "closed"?)"#,
        ])
    }

    @Test(arguments: [
        // unknown targets, in each transition form
        (#"{ "initial": "a", "states": { "a": { "on": { "E": "b" } } } }"#,
         [#"test.json: states.a.on.E: unknown state "b""#]),
        (##"{ "initial": "a", "states": { "a": { "on": { "E": { "target": "#x.y" } } } } }"##,
         [##"test.json: states.a.on.E.target: unknown state "#x.y""##]),
        (#"{ "initial": "a", "states": { "a": { "after": { "10": ".inner" } } } }"#,
         [#"test.json: states.a.after.10: unknown state ".inner""#]),
        // unreachable states (a final one is allowed)
        (#"{ "initial": "a", "states": { "a": {}, "b": { "on": { "E": "a" } }, "end": { "type": "final" } } }"#,
         ["test.json: states.b: unreachable: no transition or initial enters this state"]),
        (#"{ "initial": "a", "states": { "a": { "on": { "E": "p" } }, "p": { "initial": "p1", "states": { "p1": {}, "p2": {} } } } }"#,
         ["test.json: states.p.states.p2: unreachable: no transition or initial enters this state"]),
        // missing or unknown initial
        (#"{ "states": { "a": {} } }"#,
         [#"test.json: initial: missing: a machine, and every state with "states", names its initial state"#]),
        (#"{ "initial": "a", "states": { "a": { "states": { "a1": {} } } } }"#,
         [#"test.json: states.a.initial: missing: a machine, and every state with "states", names its initial state"#]),
        (#"{ "initial": "z", "states": { "a": {} } }"#,
         [#"test.json: initial: unknown state "z""#]),
        // Gears
        (#"{ "initial": "a", "states": { "a": { "entry": [ { "type": "gear.propagate", "gear": "dors", "event": { "type": "x" } } ] } } }"#,
         [#"test.json: states.a.entry[0].gear: unknown gear "dors": not declared in "gears""#]),
        (#"{ "initial": "a", "states": { "a": { "on": { "E": "a" } } }, "gears": { "g": { "catch": { "ping": "F" } } } }"#,
         [#"test.json: gears.g.catch.ping: no state handles event "F""#]),
        // delays
        (#"{ "initial": "a", "states": { "a": { "after": { "0": "a", "1.5": "a", "-3": "a", "soon": "a" } } } }"#,
         [#"test.json: states.a.after.-3: bad delay "-3": a delay is a positive whole number of milliseconds"#,
          #"test.json: states.a.after.0: bad delay "0": a delay is a positive whole number of milliseconds"#,
          #"test.json: states.a.after["1.5"]: bad delay "1.5": a delay is a positive whole number of milliseconds"#,
          #"test.json: states.a.after.soon: bad delay "soon": a delay is a positive whole number of milliseconds"#]),
        // actions
        (#"{ "initial": "a", "states": { "a": { "entry": [ { "type": "log" } ] } } }"#,
         [#"test.json: states.a.entry[0].type: unknown action: "log" is not "assign", "gear.propagate", "raise" or "cancel""#]),
        (#"{ "initial": "a", "states": { "a": { "exit": [ { "type": "assign", "value": 1 } ] } } }"#,
         [#"test.json: states.a.exit[0]: unknown action: "assign" takes exactly "set": an object of context keys"#]),
        (#"{ "initial": "a", "states": { "a": { "entry": [ { "type": "assign", "set": { "n": { "from": "ctx.n" } } } ] } } }"#,
         [#"test.json: states.a.entry[0].set.n.from: bad value: "from" reads "event.<path>" or "context.<path>""#]),
        // guards
        (#"{ "initial": "a", "states": { "a": { "on": { "E": { "target": "a", "guard": { "equals": [1, 1] } } } } } }"#,
         [#"test.json: states.a.on.E.guard: unknown guard: a guard is one of {"eq"|"neq"|"lt"|"lte"|"gt"|"gte": [a, b]}, {"and"|"or": [guards]}, {"not": guard}, {"in": "state"}"#]),
        (#"{ "initial": "a", "states": { "a": { "on": { "E": { "target": "a", "guard": { "not": { "lt": [1] } } } } } } }"#,
         [#"test.json: states.a.on.E.guard.not.lt: unknown guard: "lt" takes an array of two operands"#]),
        (#"{ "initial": "a", "states": { "a": { "on": { "E": { "target": "a", "guard": { "in": "b" } } } } } }"#,
         [#"test.json: states.a.on.E.guard.in: unknown state "b""#]),
        // unknown keys, at every level
        (#"{ "initial": "a", "revision": 2, "states": { "a": { "onn": {}, "on": { "E": { "target": "a", "gaurd": {} } } } } }"#,
         ["test.json: revision: unknown key", "test.json: states.a.onn: unknown key", "test.json: states.a.on.E.gaurd: unknown key"]),
        // final states, state types, reserved events, wrong JSON kinds
        (#"{ "initial": "a", "states": { "a": { "type": "final", "on": { "E": "a" } } } }"#,
         [#"test.json: states.a: a final state accepts no events: no "on", "after" or "states""#]),
        (#"{ "initial": "a", "states": { "a": { "type": "parallel" } } }"#,
         [#"test.json: states.a.states: bad value: a parallel state has its regions in "states""#]),
        (#"{ "initial": "a", "states": { "a": { "on": { "xstate.after": "a" } } } }"#,
         [#"test.json: states.a.on["xstate.after"]: event type "xstate.after" is the machine's own: "xstate." types are taken through "after" and "onDone", not "on" or "raise""#]),
        (#"{ "initial": "a", "context": [], "states": { "a": { "on": { "E": 3 } } } }"#,
         ["test.json: context: expected an object",
          "test.json: states.a.on.E: expected a target state, a transition object or an array of them"]),
        ("[1, 2]", ["test.json: not a JSON object: the top level is not an object"]),
    ])
    func invalidMachine_IsReported(json: String, expected: [String]) {
        #expect(issueLines(json) == expected)
    }

    @Test func aGearTheHostLacks_IsReported() {
        let json = #"{ "initial": "a", "states": { "a": { "on": { "E": "a" } } }, "gears": { "doors": { "catch": { "x": "E" } } } }"#
        #expect(issueLines(json, hostGears: ["auth"]) == [#"test.json: gears.doors: unknown gear "doors": the host provides no such gear"#])
        #expect(issueLines(json, hostGears: ["doors"]).isEmpty)
        #expect(issueLines(json).isEmpty)
    }

    @Test func everyIssueIsCollected_NotJustTheFirst() throws {
        let json = #"""
            { "initial": "a",
              "states": { "a": { "on": { "E": "nowhere", "F": { "target": "a", "guard": { "xor": [] } } },
                                 "after": { "never": "a" } } } }
            """#
        let error = try #require(throws: MachineValidationError.self) { try makeMachine(json, file: "m.json") }
        #expect(error.issues.map(\.kind) == [.unknownState("nowhere"), .unknownGuard(
            #"a guard is one of {"eq"|"neq"|"lt"|"lte"|"gt"|"gte": [a, b]}, {"and"|"or": [guards]}, {"not": guard}, {"in": "state"}"#),
            .badDelay("never")])
        #expect(error.description.split(separator: "\n").count == 3)
    }

    /// Where the text stops being JSON, as line and column, as a server reports a machine
    /// file (the reason is SpinJSON's parser's).
    @Test(arguments: [
        ("{ nope", "line 1, column 3: "),
        ("{ \"initial\": \"a\",\n  \"states\": { \"a\": {}, } }", "line 2, column 24: "),
        (#"{ "initial": "a", "initial": "b" }"#, "line 1, column 28: "),
    ])
    func aSyntaxError_SaysWhere(json: String, position: String) {
        let lines = issueLines(json)
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("test.json: \(position)") == true)
    }

    @Test func aNumberBeyondADouble_IsReported() {
        #expect(issueLines(#"{ "context": { "n": 1e400 } }"#)
            == ["test.json: context.n: the number 1e400 is beyond the range of a double"])
    }

    @Test func aByteOrderMark_IsIgnored() throws {
        let machine = try makeMachine("\u{FEFF}" + #"{ "initial": "a", "states": { "a": {} } }"#)
        #expect(machine.initialState.value == ["a"])
    }
    // MARK: What a newcomer trips on

    /// A state name one typo away is suggested, written the way the file wrote the target:
    /// a sibling, `.child`, `#id`, `#<machine id>.path`, an `initial`, an `in` guard.
    @Test(arguments: [
        (#"{ "initial": "green", "states": { "green": { "on": { "NEXT": "yelow" } }, "yellow": { "on": { "NEXT": "green" } } } }"#,
         #"test.json: states.green.on.NEXT: unknown state "yelow" (did you mean "yellow"?)"#),
        (#"{ "initial": "gren", "states": { "green": {} } }"#,
         #"test.json: initial: unknown state "gren" (did you mean "green"?)"#),
        (#"{ "initial": "a", "states": { "a": { "initial": "inner", "states": { "inner": {} }, "on": { "E": ".iner" } } } }"#,
         #"test.json: states.a.on.E: unknown state ".iner" (did you mean ".inner"?)"#),
        (##"{ "id": "light", "initial": "a", "states": { "a": { "on": { "E": "#light.b" } }, "bb": { "id": "blue", "on": { "E": "#bleu" } } } }"##,
         ##"test.json: states.a.on.E: unknown state "#light.b""##),
        (##"{ "initial": "a", "states": { "a": { "on": { "E": "bb" } }, "bb": { "id": "blue", "on": { "E": "#bleu" } } } }"##,
         ##"test.json: states.bb.on.E: unknown state "#bleu" (did you mean "#blue"?)"##),
        (##"{ "id": "light", "initial": "a", "states": { "a": { "on": { "E": "red" } }, "red": { "on": { "E": "#light.rde" } } } }"##,
         ##"test.json: states.red.on.E: unknown state "#light.rde" (did you mean "#light.red"?)"##),
        (#"{ "initial": "idle", "states": { "idle": { "on": { "E": { "target": "idle", "guard": { "in": "idel" } } } } } }"#,
         #"test.json: states.idle.on.E.guard.in: unknown state "idel" (did you mean "idle"?)"#),
    ])
    func anUnknownState_SuggestsTheNearest(json: String, expected: String) {
        #expect(issueLines(json).contains(expected), "\(issueLines(json))")
    }

    /// An object of one member is a value form; one of an unknown form is a typo, never a
    /// literal kept by accident (the counter would become `{"increment":1}`).
    @Test(arguments: [
        ("increment", #""add""#), ("ad", #""add""#), ("frm", #""from""#), ("value", #""literal""#), ("x", nil),
    ] as [(String, String?)])
    func anAssignValueOfAnUnknownForm_IsRefused_WithTheFormItLikelyMeans(key: String, meant: String?) {
        let json = #"{ "initial": "a", "context": { "n": 0 }, "states": { "a": { "on": { "E": { "target": "a", "actions": [ "#
            + #"{ "type": "assign", "set": { "n": { "\#(key)": 1 } } } ] } } } } }"#
        let suggestion = meant.map { " (did you mean \($0)?)" } ?? ""
        #expect(issueLines(json) == [
            #"test.json: states.a.on.E.actions[0].set.n.\#(key): bad value: unknown value form "\#(key)""# + suggestion
                + #": an object of one member is a value form, {"from": "event.<path>"}, {"add": n} or {"literal": x}; "#
                + #"write {"literal": {"\#(key)": ...}} for the object itself"#,
        ])
    }

    @Test func aLiteralObject_IsWrittenAsOne_AndObjectsOfManyMembersStayLiterals() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "context": { "n": 0, "m": 0 }, "states": { "a": { "on": { "E": { "target": "a", "actions": [
              { "type": "assign", "set": { "n": { "literal": { "increment": 1 } }, "m": { "x": 1, "y": 2 } } } ] } } } } }
            """#)
        let moved = try #require(machine.transition(machine.initialState, event("E")))
        #expect(moved.context["n"] == .object(["increment": .number(1)]))
        #expect(moved.context["m"] == .object(["x": .number(1), "y": .number(2)]))
    }

    @Test func aRaisedEventsField_OfAnUnknownForm_IsRefused_WithoutAdd() {
        let json = #"{ "initial": "a", "states": { "a": { "on": { "E": { "target": "a", "actions": [ "#
            + #"{ "type": "raise", "event": { "type": "F", "by": { "ad": 1 } } } ] }, "F": "a" } } } }"#
        #expect(issueLines(json) == [
            #"test.json: states.a.on.E.actions[0].event.by.ad: bad value: unknown value form "ad": an object of one member is a "#
                + #"value form, {"from": "event.<path>"} or {"literal": x}; write {"literal": {"ad": ...}} for the object itself"#,
        ])
    }

    @Test func initialWhereNoneIsTaken_SaysWhy() {
        #expect(issueLines(#"{ "initial": "a", "states": { "a": { "initial": "x" } } }"#) == [
            #"test.json: states.a.initial: no "initial" here: this state has no "states", so there is no child to start in"#,
        ])
        #expect(issueLines(#"{ "initial": "a", "states": { "a": { "on": { "E": "b" } }, "b": { "type": "final", "initial": "x" } } }"#) == [
            #"test.json: states.b.initial: no "initial" here: a final state has no child states"#,
        ])
    }

    @Test(arguments: ["// a traffic light\n{ \"initial\": \"a\", \"states\": { \"a\": {} } }",
                      "{ \"initial\": \"a\", /* the first */ \"states\": { \"a\": {} } }"])
    func aComment_IsSaidToBeOne(json: String) {
        let lines = issueLines(json)
        #expect(lines.count == 1)
        #expect(lines.first?.hasSuffix(": JSON has no comments (// or /* */): remove the comment") == true, "\(lines)")
    }
}
