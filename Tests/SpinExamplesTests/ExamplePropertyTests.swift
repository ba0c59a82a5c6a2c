import Foundation
import PropertyBased
import SpinCore
import SpinExamples
import SpinTesting
import Testing

/// Random and extreme inputs for the example Spins: whatever a client or Swift code sends,
/// no reducer traps and the documented invariants hold.
enum Inputs {
    /// The integers where arithmetic breaks, and the edges of `Levels.range`.
    static let extremes: [Int] = [
        .min, .min + 1, -1_000_000_001, -1_000_000_000, -999_999_999, -1, 0, 1, 9, 10,
        999_999_999, 1_000_000_000, 1_000_000_001, .max - 1, .max,
    ]

    /// Any `Int`, an extreme one, or a small one, with equal chances.
    static let int = zip(Gen.int(in: 0...2), Gen.int(), Gen.element(of: extremes), Gen.int(in: -20...20))
        .map { pick, any, extreme, small in [any, extreme!, small][pick] }

    static let levelsEvent = zip(Gen.int(in: 0...5), int, int).map { kind, left, right -> Levels.Event in
        switch kind {
        case 0: .increaseLeft
        case 1: .decreaseLeft
        case 2: .increaseRight
        case 3: .decreaseRight
        default: .set(left: left, right: right)
        }
    }

    static let counterEvent = Gen.int(in: 0...6).map { kind -> Counter.Event in
        // Mostly steps, so that long runs push against the limits.
        kind < 3 ? .increase : kind < 6 ? .decrease : .reset
    }

    static let routerEvent = Gen.int(in: 0...4).map { index -> Router.Event in
        [.checkAuthorization, .authorized, .unauthorized, .login, .logout][index]
    }

    static let featureEvent = zip(Gen.int(in: 0...2), int).map { kind, items -> Feature.Event in
        [.load, .loaded(items: items), .unauthorizedResponse][kind]
    }

    /// A level inside `Levels.range`, often at its edges.
    static let level = zip(Gen.int(in: 0...1), Gen.int(in: Levels.range), Gen.element(of: [Levels.range.lowerBound, Levels.range.upperBound, 0]))
        .map { pick, any, edge in pick == 0 ? any : edge! }
}

@Suite(.timeLimit(.minutes(2)))
struct ExamplePropertyTests {
    // MARK: Reducers

    @Test func levels_FromAnyState_NoEventTraps_AndLevelsInRangeStayInRange() async {
        await propertyCheck(count: 500, input: Inputs.int, Inputs.int, Inputs.levelsEvent.array(of: 0...40)) { left, right, events in
            var state = Levels.State(left: left, right: right)
            for event in events {
                let next = Levels.reduce(state: state, event: event)
                if case .set = event {
                    #expect(Self.isInRange(next))
                } else {
                    // A step moves one level by at most one, and converged levels stay put.
                    #expect((next.left == state.left || next.right == state.right)
                            && (next.left == state.left || next.left.distance(to: state.left).magnitude == 1)
                            && (next.right == state.right || next.right.distance(to: state.right).magnitude == 1))
                    if state.left == state.right { #expect(next == state) }
                    if Self.isInRange(state) { #expect(Self.isInRange(next)) }
                }
                state = next
            }
        }
    }

    @Test func levels_Set_DecodesOnlyInsideTheRange_AndTheErrorNamesTheField() async {
        await propertyCheck(count: 500, input: Inputs.int, Inputs.int) { left, right in
            let json = #"{"type":"set","left":\#(left),"right":\#(right)}"#
            do {
                let event = try JSONDecoder().decode(Levels.Event.self, from: Data(json.utf8))
                #expect(event == .set(left: left, right: right))
                #expect(Levels.range.contains(left) && Levels.range.contains(right))
            } catch let DecodingError.dataCorrupted(context) {
                let field = Levels.range.contains(left) ? "right" : "left"
                #expect(context.codingPath.map(\.stringValue) == [field])
                #expect(context.debugDescription.contains("-1000000000 to 1000000000"))
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func counter_FromAnyValue_NoEventTraps_AndStepsSaturate() async {
        await propertyCheck(count: 500, input: Inputs.int, Inputs.counterEvent.array(of: 0...40)) { value, events in
            var state = Counter.State(value: value)
            for event in events {
                let next = Counter.reduce(state: state, event: event)
                switch event {
                case .reset: #expect(next.value == 0)
                case .increase: #expect(next.value == (state.value == .max ? .max : state.value + 1))
                case .decrease: #expect(next.value == (state.value == .min ? .min : state.value - 1))
                }
                state = next
            }
        }
    }

    @Test func router_FromAnyCount_NoEventTraps_AndChecksNeverGoDown() async {
        await propertyCheck(count: 500, input: Inputs.int, Inputs.routerEvent.array(of: 0...40)) { checks, events in
            var state = Router.State(route: .launching, authorizationChecks: checks)
            for event in events {
                let next = Router.reduce(state: state, event: event)
                #expect(next.authorizationChecks >= state.authorizationChecks)
                if event == .checkAuthorization, state.authorizationChecks < .max {
                    #expect(next.authorizationChecks == state.authorizationChecks + 1)
                }
                state = next
            }
        }
    }

    @Test func feature_ItemsAreNeverNegative_AndNegativeItemsAreRefusedWhenDecoded() async {
        await propertyCheck(count: 500, input: Inputs.featureEvent.array(of: 0...40)) { events in
            var state = Feature.State.initial
            for event in events {
                state = Feature.reduce(state: state, event: event)
                #expect(state.items >= 0)
                if case .loaded(let items) = event {
                    let json = #"{"type":"loaded","items":\#(items)}"#
                    let decoded = try? JSONDecoder().decode(Feature.Event.self, from: Data(json.utf8))
                    #expect((decoded != nil) == (items >= 0))
                }
            }
        }
    }

    // MARK: Through the tester and loops

    @Test func levels_InRange_ConvergeStepByStep_InTheTester() async {
        await propertyCheck(count: 50, input: Inputs.level, Gen.int(in: -30...30)) { left, gap in
            let right = Levels.range.contains(left + gap) ? left + gap : left - gap
            let tester = SpinTester(Levels.spin(initialState: .init(left: left, right: right)))
            let (toLeft, toRight): (Levels.Event, Levels.Event) =
                left < right ? (.increaseLeft, .decreaseRight) : (.decreaseLeft, .increaseRight)
            var state = Levels.State(left: left, right: right)
            // Each state before convergence makes both feedbacks ask for a step: 2 × gap
            // events, the first gap of which move a level.
            for index in 0..<(2 * abs(right - left)) {
                let event = index.isMultiple(of: 2) ? toLeft : toRight
                let next = Levels.reduce(state: state, event: event)
                await tester.receive(event) { $0 = next }
                state = next
            }
            await tester.finish()
            #expect(tester.state.left == tester.state.right)
        }
    }

    @Test func counter_FromAnyValue_InTheTester_CountsToTenOrStays() async {
        await propertyCheck(count: 100, input: Inputs.int, Inputs.counterEvent) { value, event in
            let tester = SpinTester(Counter.spin(initialState: .init(value: value)))
            // The first state asks to count if it is within 0..<10.
            var state = Counter.State(value: value)
            while (0..<10).contains(state.value) {
                state.value += 1
                await tester.receive(.increase) { [state] in $0 = state }
            }
            let next = Counter.reduce(state: state, event: event)
            await tester.send(event) { $0 = next }
            state = next
            while (0..<10).contains(state.value) {
                state.value += 1
                await tester.receive(.increase) { [state] in $0 = state }
            }
            await tester.finish()
        }
    }

    @Test func levels_AnyEventsThroughALoop_SettleOrSuspend_NeverTrap() async {
        await propertyCheck(count: 30, input: Inputs.levelsEvent.array(of: 1...8)) { events in
            let loop = Levels.spin().start(feedbackBudget: 2000)
            _ = loop.emit(contentsOf: events)
            let settled = await waitUntil {
                loop.isSuspended || (loop.state.left == loop.state.right && loop.pendingEvents == 0)
            }
            #expect(settled)
            #expect(Self.isInRange(loop.state))
            loop.stop()
        }
    }

    @Test func thePoisonBatch_ThroughALoop_IsClampedAndSuspended() async {
        // Over HTTP this batch is a 422; made in Swift, `set` clamps and the runaway
        // guard holds the loop.
        let loop = Levels.spin().start(feedbackBudget: 1000)
        #expect(loop.emit(contentsOf: [.set(left: .max, right: 0), .increaseLeft]) == .accepted)
        #expect(await waitUntil { loop.isSuspended })
        #expect(loop.state.left <= Levels.range.upperBound)
        loop.stop()
        let extremes = Levels.spin().start(feedbackBudget: 1000)
        extremes.emit(.set(left: .max, right: .min))
        extremes.emit(.set(left: .min, right: .max))
        #expect(await waitUntil { extremes.isSuspended })
        extremes.stop()
    }

    @Test func routerAndCounter_AtTheirLimits_ThroughLoops_DoNotTrap() async {
        let router = Router.spin(session: SessionService(), gear: Gear(),
                                 initialState: .init(route: .launching, authorizationChecks: .max)).start()
        #expect(await router.firstState { $0.route == .home }?.authorizationChecks == .max)
        router.stop()
        let counter = Counter.spin(initialState: .init(value: .max)).start()
        _ = counter.emit(contentsOf: [.increase, .increase, .increase])
        #expect(await waitUntil { counter.sequence == 3 })
        #expect(counter.state.value == .max)
        counter.stop()
    }

    static func isInRange(_ state: Levels.State) -> Bool {
        Levels.range.contains(state.left) && Levels.range.contains(state.right)
    }
}

/// Polls `condition` until it holds or 10 s pass.
func waitUntil(_ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: .seconds(10))
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

extension SpinLoop {
    func firstState(where predicate: @Sendable (State) -> Bool) async -> State? {
        for await state in states where predicate(state) { return state }
        return nil
    }
}
