import SpinMachines
import Testing

/// Every path a guard or an action reads is checked against what the machine defines,
/// and a plain string one typo from a path is refused (`MachineReferences`).
@Suite struct MachineReferencesTests {
    /// A crossing whose `red` state has `guard` on `GO`, and `actions` on the same
    /// transition; `extra` adds members to the top level (`, "gears": {..}`).
    private func crossing(guard condition: String = #"{ "eq": [ "context.pedestrians", 3 ] }"#,
                          actions: String = "[]", extra: String = "") -> String {
        #"""
        { "initial": "red", "context": { "pedestrians": 0, "cars": 0 },
          "states": {
            "red": { "on": { "GO": [ { "target": "green", "guard": \#(condition), "actions": \#(actions) } ] } },
            "green": { "on": { "STOP": "red" } } } \#(extra) }
        """#
    }

    private func lines(_ json: String) -> [String] {
        issueLines(json, file: "machines/crossing.json")
    }

    // MARK: context.<key>

    @Test func unknownContextKey_IsReported_WithTheDefinedKeys_AndTheNearest() {
        #expect(lines(crossing(guard: #"{ "eq": [ "context.pedestrains", 3 ] }"#)) == [
            #"machines/crossing.json: states.red.on.GO[0].guard.eq[0]: unknown context key "pedestrains" ("context" and "assign" define "cars", "pedestrians"; did you mean "pedestrians"?)"#,
        ])
        #expect(lines(crossing(guard: #"{ "eq": [ 3, "context.zebras" ] }"#)) == [
            #"machines/crossing.json: states.red.on.GO[0].guard.eq[1]: unknown context key "zebras" ("context" and "assign" define "cars", "pedestrians")"#,
        ])
    }

    @Test func aMachineWithNoContext_SaysNothingDefinesAKey() {
        let json = #"{ "initial": "a", "states": { "a": { "on": { "E": { "guard": { "eq": [ "context.n", 1 ] } } } } } }"#
        #expect(issueLines(json) == [
            #"test.json: states.a.on.E.guard.eq[0]: unknown context key "n" (no "context" member or "assign" defines any key)"#,
        ])
    }

    @Test func aKeyOnlyAnAssignDefines_IsKnown_WhereverTheAssignIs() {
        // The guard in `red` comes before the assign in `green`, which sets `waits`.
        let json = crossing(guard: #"{ "gt": [ "context.waits", 2 ] }"#)
            .replacingOccurrences(of: #""green": { "on": { "STOP": "red" } }"#, with: #"""
                "green": { "entry": [ { "type": "assign", "set": { "waits": { "add": 1 } } } ], "on": { "STOP": "red" } }
                """#)
        #expect(lines(json) == [])
    }

    @Test func nestedContextPaths_CheckTheirFirstKey() {
        let nested = #"{ "initial": "a", "context": { "light": { "color": "red" } }, "states": { "a": { "on": { "E": { "guard": "#
        #expect(issueLines(nested + #"{ "eq": [ "context.light.color", "red" ] } } } } } }"#) == [])
        #expect(issueLines(nested + #"{ "eq": [ "context.light.anything.deeper", "red" ] } } } } } }"#) == [])
        #expect(issueLines(nested + #"{ "eq": [ "context.ligth.color", "red" ] } } } } } }"#) == [
            #"test.json: states.a.on.E.guard.eq[0]: unknown context key "ligth" ("context" and "assign" define "light"; did you mean "light"?)"#,
        ])
        #expect(issueLines(nested + #"{ "eq": [ "context", "red" ] } } } } } }"#) == [])   // the whole context
    }

    // MARK: event.<field>

    @Test func eventFields_AreFree_WhereTheEventIsNotKnown() {
        for path in ["event.type", "event.code", "event.a.b", "event"] {
            #expect(lines(crossing(guard: #"{ "eq": [ "\#(path)", 3 ] }"#)) == [], "\(path)")
        }
    }

    @Test func anAfterTransition_KnowsItsEvent_TypeStateAndDelay() {
        func after(_ guardJSON: String, actions: String = "[]") -> [String] {
            issueLines(#"""
                { "initial": "a", "context": { "n": 0 }, "states": { "a": { "after": { "10": [
                    { "target": "a", "guard": \#(guardJSON), "actions": \#(actions) } ] } } } }
                """#)
        }
        #expect(after(#"{ "and": [ { "eq": [ "event.state", "a" ] }, { "gt": [ "event.delay", 5 ] }, { "eq": [ "event.type", "x" ] } ] }"#) == [])
        #expect(after(#"{ "gt": [ "event.dely", 5 ] }"#) == [
            #"test.json: states.a.after.10[0].guard.gt[0]: unknown event field "dely": the event of an "after" transition has "delay", "state", "type" (did you mean "delay"?)"#,
        ])
        #expect(after(#"{ "eq": [ 1, 1 ] }"#, actions: #"[ { "type": "assign", "set": { "n": { "from": "event.code" } } } ]"#) == [
            #"test.json: states.a.after.10[0].actions[0].set.n.from: unknown event field "code": the event of an "after" transition has "delay", "state", "type""#,
        ])
    }

    // MARK: strings that look like paths

    @Test(arguments: [
        ("contxt.pedestrians", "context.pedestrians"), ("contex.pedestrians", "context.pedestrians"),
        ("Context.pedestrians", "context.pedestrians"), ("conetxt.cars", "context.cars"),
        ("contxt.pedestrains", "context.pedestrians"), ("evnet.code", "event.code"), ("evet.type", "event.type"),
        ("contextpedestrians", "context.pedestrians"), ("context,cars", "context.cars"), ("event_type", "event.type"),
    ])
    func aStringOneTypoFromAPath_IsRefused_WithThePathItMeans(text: String, meant: String) {
        #expect(lines(crossing(guard: #"{ "eq": [ "\#(text)", 3 ] }"#)) == [
            #"machines/crossing.json: states.red.on.GO[0].guard.eq[0]: "\#(text)" looks like a path: did you mean "\#(meant)"? (write {"literal": "\#(text)"} for the string)"#,
        ])
    }

    @Test(arguments: ["pedestrians", "red", "ctx.cars", "context", "contexts", "a.b", "", "eventually", "cars"])
    func ordinaryStrings_AreLiterals(text: String) {
        #expect(lines(crossing(guard: #"{ "eq": [ "context.cars", "\#(text)" ] }"#)) == [])
    }

    @Test func theLiteralForm_WritesAPathLikeStringOnPurpose() throws {
        #expect(lines(crossing(guard: #"{ "eq": [ { "literal": "contxt.pedestrians" }, "context.cars" ] }"#)) == [])
        #expect(lines(crossing(guard: #"{ "eq": [ "context.cars", { "literal": "context.nothing" } ] }"#)) == [])
        let machine = try makeMachine(crossing(guard: #"{ "eq": [ "event.code", { "literal": "contxt.x" } ] }"#))
        #expect(machine.transition(machine.initialState, event("GO", ["code": .string("contxt.x")])) != nil)
        #expect(machine.transition(machine.initialState, event("GO", ["code": .string("other")])) == nil)
    }

    // MARK: where paths are read

    @Test func pathsInAndOrNot_AreCheckedAtTheirPlace() {
        let condition = #"{ "and": [ { "eq": [ 1, 1 ] }, { "or": [ { "not": { "lt": [ "context.cars", "context.car" ] } } ] } ] }"#
        #expect(lines(crossing(guard: condition)) == [
            #"machines/crossing.json: states.red.on.GO[0].guard.and[1].or[0].not.lt[1]: unknown context key "car" ("context" and "assign" define "cars", "pedestrians"; did you mean "cars"?)"#,
        ])
        #expect(lines(crossing(guard: #"{ "not": { "eq": [ "contxt.cars", 0 ] } }"#)).first?
            .hasPrefix(#"machines/crossing.json: states.red.on.GO[0].guard.not.eq[0]: "contxt.cars" looks like a path"#) == true)
    }

    @Test func assignFrom_IsChecked() {
        let actions = #"[ { "type": "assign", "set": { "cars": { "from": "context.pedestrains" }, "seen": { "from": "event.count" } } } ]"#
        #expect(lines(crossing(actions: actions)) == [
            #"machines/crossing.json: states.red.on.GO[0].actions[0].set.cars.from: unknown context key "pedestrains" ("context" and "assign" define "cars", "pedestrians", "seen"; did you mean "pedestrians"?)"#,
        ])
        let typo = #"[ { "type": "assign", "set": { "cars": { "from": "contxt.cars" } } } ]"#
        #expect(lines(crossing(actions: typo)) == [
            #"machines/crossing.json: states.red.on.GO[0].actions[0].set.cars.from: bad value: "from" reads "event.<path>" or "context.<path>"; did you mean "context.cars"?"#,
        ])
    }

    @Test func gearPropagateFields_TakenWithFrom_AreChecked() {
        let actions = #"[ { "type": "gear.propagate", "gear": "lights", "event": { "type": "changed", "count": { "from": "context.cras" }, "note": "contxt.x" } } ]"#
        #expect(lines(crossing(actions: actions, extra: #", "gears": { "lights": {} }"#)) == [
            #"machines/crossing.json: states.red.on.GO[0].actions[0].event.count.from: unknown context key "cras" ("context" and "assign" define "cars", "pedestrians"; did you mean "cars"?)"#,
        ])
    }

    @Test func everyIssue_IsReported_AlongsideTheOthers() {
        let json = crossing(guard: #"{ "eq": [ "context.pedestrains", "contxt.cars" ] }"#)
            .replacingOccurrences(of: #""STOP": "red""#, with: #""STOP": "rde""#)
        #expect(lines(json) == [
            #"machines/crossing.json: states.green.on.STOP: unknown state "rde" (did you mean "red"?)"#,
            #"machines/crossing.json: states.red.on.GO[0].guard.eq[0]: unknown context key "pedestrains" ("context" and "assign" define "cars", "pedestrians"; did you mean "pedestrians"?)"#,
            #"machines/crossing.json: states.red.on.GO[0].guard.eq[1]: "contxt.cars" looks like a path: did you mean "context.cars"? (write {"literal": "contxt.cars"} for the string)"#,
        ])
    }
}
