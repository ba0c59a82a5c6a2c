import SpinMachines
import Testing

/// XState v5's transition semantics, re-expressed from its own core tests
/// (statelyai/xstate, `packages/core/test/`): each test names the file and the test its
/// machine and expectation come from.
@Suite struct MachineXStateSemanticsTests {
    /// `internalTransitions.test.ts`'s `wordMachine`, as a compound state `direction`
    /// (entry and exit logged through a Gear event each).
    static let word = #"""
        { "initial": "direction",
          "states": {
            "direction": {
              "initial": "left",
              "entry": [ { "type": "gear.propagate", "gear": "log", "event": { "type": "ENTER_DIRECTION" } } ],
              "exit":  [ { "type": "gear.propagate", "gear": "log", "event": { "type": "EXIT_DIRECTION" } } ],
              "states": { "left": {}, "right": {}, "center": {}, "justify": {} },
              "on": {
                "LEFT_CLICK": ".left",
                "JUSTIFY_CLICK": ".justify",
                "RIGHT_CLICK": ".right",
                "RIGHT_CLICK_REENTER": { "target": ".right", "reenter": true },
                "RESET": { "target": "direction", "reenter": true },
                "RESET_TO_CENTER": { "target": "direction.center", "reenter": true },
                "TO_CENTER": "#direction.center",
                "RESTART": "direction" } } },
          "gears": { "log": {} } }
        """#

    /// internalTransitions.test.ts, "parent state should enter child state without re-entering self".
    @Test func childTarget_EntersTheChild_WithoutReenteringTheParent() throws {
        let machine = try makeMachine(Self.word)
        let next = try #require(machine.transition(machine.initialState, event("RIGHT_CLICK")))
        #expect(next.value == ["direction", "right"])
        #expect(propagatedTypes(next) == [])
    }

    /// internalTransitions.test.ts, "parent state should re-enter self upon transitioning
    /// to child state if transition is reentering".
    @Test func childTarget_WithReenter_ExitsAndReentersTheParent() throws {
        let machine = try makeMachine(Self.word)
        let next = try #require(machine.transition(machine.initialState, event("RIGHT_CLICK_REENTER")))
        #expect(next.value == ["direction", "right"])
        #expect(propagatedTypes(next) == ["EXIT_DIRECTION", "ENTER_DIRECTION"])
    }

    /// internalTransitions.test.ts, "parent state should only exit/reenter if there is an
    /// explicit self-transition" (and "... (to child)").
    @Test func explicitReenteringSelfTransition_ExitsAndReentersTheParent() throws {
        let machine = try makeMachine(Self.word)
        let center = try #require(machine.transition(machine.initialState, event("TO_CENTER")))
        let reset = try #require(machine.transition(center, event("RESET")))
        #expect(reset.value == ["direction", "left"])
        #expect(propagatedTypes(reset) == ["EXIT_DIRECTION", "ENTER_DIRECTION"])
        let right = try #require(machine.transition(machine.initialState, event("RIGHT_CLICK")))
        let toCenter = try #require(machine.transition(right, event("RESET_TO_CENTER")))
        #expect(toCenter.value == ["direction", "center"])
        #expect(propagatedTypes(toCenter) == ["EXIT_DIRECTION", "ENTER_DIRECTION"])
    }

    /// A transition to its own compound source without `reenter` keeps the source and
    /// enters its initial child anew (XState v5's `getTransitionDomain`: the domain is the
    /// source itself).
    @Test func selfTargetWithoutReenter_ResetsTheChild_WithoutLeavingTheParent() throws {
        let machine = try makeMachine(Self.word)
        let center = try #require(machine.transition(machine.initialState, event("TO_CENTER")))
        let restarted = try #require(machine.transition(center, event("RESTART")))
        #expect(restarted.value == ["direction", "left"])
        #expect(propagatedTypes(restarted) == [])
        #expect(restarted.step.entered == [["direction", "left"]])
    }

    /// internalTransitions.test.ts `topLevelMachine`: transitions, entry and exit on the root.
    static let topLevel = #"""
        { "initial": "Hidden", "context": { "parentEvents": 0, "started": false },
          "entry": [ { "type": "assign", "set": { "started": true } } ],
          "on": { "CLICKED_CLOSE": ".Hidden",
                  "PARENT_EVENT": { "actions": [ { "type": "assign", "set": { "parentEvents": { "add": 1 } } } ] } },
          "states": { "Hidden": { "on": { "PUBLISH_FAILURE": "Failure" } }, "Failure": {} } }
        """#

    /// internalTransitions.test.ts, "should listen to events declared at top state".
    @Test func eventsDeclaredOnTheRoot_AreTakenFromAnyState() throws {
        let machine = try makeMachine(Self.topLevel)
        let failure = try #require(machine.transition(machine.initialState, event("PUBLISH_FAILURE")))
        #expect(machine.transition(failure, event("CLICKED_CLOSE"))?.value == ["Hidden"])
    }

    /// internalTransitions.test.ts, "should maintain the child state when targetless
    /// transition is handled by parent"; the root's `entry` runs when the machine starts.
    @Test func rootTargetlessTransition_KeepsTheChild_AndRootEntryRunsAtStart() throws {
        let machine = try makeMachine(Self.topLevel)
        #expect(machine.initialState.context["started"] == true)
        let next = try #require(machine.transition(machine.initialState, event("PARENT_EVENT")))
        #expect(next.value == ["Hidden"] && next.context["parentEvents"] == 1)
    }

    /// eventDescriptors.test.ts, "should select wildcard transitions if no specific
    /// transition is found" and "should prioritize explicit descriptor even if wildcard
    /// comes first".
    @Test func wildcard_TakesAnyEvent_AfterTheEventsOwnType() throws {
        let machine = try makeMachine(#"""
            { "initial": "A",
              "states": { "A": { "on": { "*": "fail", "NEXT": "pass" } }, "pass": {}, "fail": {} } }
            """#)
        #expect(machine.transition(machine.initialState, event("NEXT"))?.value == ["pass"])
        #expect(machine.transition(machine.initialState, event("WHATEVER"))?.value == ["fail"])
        #expect(machine.eventTypes == ["NEXT"])
    }

    /// eventDescriptors.test.ts, "should not use wildcard transition over explicit one when
    /// using object `.on` config - even if wildcard comes first": a guard that fails on
    /// the explicit one lets the wildcard of the same state take the event.
    @Test func wildcard_IsTriedWhenTheExplicitTransitionsGuardsFail() throws {
        let machine = try makeMachine(#"""
            { "initial": "A",
              "states": { "A": { "on": { "NEXT": { "target": "pass", "guard": { "eq": ["event.ok", true] } },
                                         "*": "fail" } },
                          "pass": {}, "fail": {} } }
            """#)
        #expect(machine.transition(machine.initialState, event("NEXT", ["ok": true]))?.value == ["pass"])
        #expect(machine.transition(machine.initialState, event("NEXT"))?.value == ["fail"])
    }

    /// id.test.ts, "should work with ids" (targets `#id` and `#id.child`, and `in` with `#id`).
    @Test func stateIDs_AreTargetsAndInGuards() throws {
        let machine = try makeMachine(#"""
            { "id": "idMachine", "initial": "A",
              "states": {
                "A": { "id": "A", "initial": "foo",
                       "states": { "foo": { "id": "A_foo", "on": { "NEXT": "#A_bar" } },
                                   "bar": { "id": "A_bar", "on": { "NEXT": "#B.foo" } } } },
                "B": { "id": "B", "initial": "foo",
                       "states": { "foo": { "on": { "NEXT": { "target": "#A_foo", "guard": { "in": "#B" } } } } } } } }
            """#)
        let bar = try #require(machine.transition(machine.initialState, event("NEXT")))
        #expect(bar.value == ["A", "bar"])
        let b = try #require(machine.transition(bar, event("NEXT")))
        #expect(b.value == ["B", "foo"])
        #expect(machine.transition(b, event("NEXT"))?.value == ["A", "foo"])
    }

    @Test func duplicateIDs_AndABadReenter_AreIssues() {
        let lines = issueLines(#"""
            { "initial": "a",
              "states": { "a": { "id": "x", "on": { "GO": { "target": "b", "reenter": "yes" } } },
                          "b": { "id": "x", "on": { "GO": "#nope" } } } }
            """#)
        #expect(lines == [
            ##"test.json: states.b.id: duplicate id "x": "#x" must name one state"##,
            #"test.json: states.a.on.GO.reenter: expected true or false"#,
            ##"test.json: states.b.on.GO: unknown state "#nope""##,
        ])
    }

    /// XState v5's partial event descriptors (eventDescriptors.test.ts covers them):
    /// `"mouse.*"` takes `mouse` and every `mouse.<more>`, not `mousemove`; the event's own
    /// type comes first, then the longer descriptor, then the shorter, then `"*"`.
    @Test func partialDescriptors_MatchWholeNames_AfterTheOwnTypeAndBeforeTheWildcard() throws {
        let machine = try makeMachine(#"""
            { "initial": "a", "states": {
                "a": { "on": { "mouse.*": "partial", "mouse.click.*": "longer", "mouse.move": "own", "*": "any" } },
                "partial": {}, "longer": {}, "own": {}, "any": {} } }
            """#)
        let to: (String) -> [String]? = { machine.transition(machine.initialState, event($0))?.value }
        #expect(to("mouse") == ["partial"])
        #expect(to("mouse.down") == ["partial"])
        #expect(to("mouse.click") == ["longer"])
        #expect(to("mouse.click.left") == ["longer"])
        #expect(to("mouse.move") == ["own"])
        #expect(to("mousemove") == ["any"])
        #expect(to("keyboard.a") == ["any"])
    }

    /// `*` elsewhere than alone or as a descriptor's last name is refused (v5 would not
    /// match it); a raised or caught type a partial descriptor takes is handled.
    @Test func wildcardsInsideNames_AreRefused_PartialDescriptorsHandleRaisedTypes() {
        #expect(issueLines(#"""
            { "initial": "a", "states": { "a": { "on": { "mo*": "a", "a.*.b": "a", ".*": "a" } } } }
            """#) == [
            #"test.json: states.a.on[".*"]: bad value: "*" is the wildcard alone or the last name of a descriptor, as in "mouse.*""#,
            #"test.json: states.a.on["a.*.b"]: bad value: "*" is the wildcard alone or the last name of a descriptor, as in "mouse.*""#,
            #"test.json: states.a.on["mo*"]: bad value: "*" is the wildcard alone or the last name of a descriptor, as in "mouse.*""#,
        ])
        #expect(issueLines(#"""
            { "initial": "a", "states": { "a": { "entry": [ { "type": "raise", "event": { "type": "mouse.click" } } ],
                                                 "on": { "mouse.*": "b" } }, "b": {} } }
            """#).isEmpty)
    }
}
