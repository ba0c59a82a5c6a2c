import Dispatch
import SpinCore
import Testing

// A parent made of children, as TCA's `Scope`/`pullback`/`forEach` tests and Harvest's
// optics build one: two counters of the same type, an optional detail counter, and a
// list of identified rows.

struct Counter: Equatable, Sendable, Identifiable {
    var id = 0
    var count = 0
}

enum CounterEvent: Equatable, Sendable {
    case increment
    case decrement
}

let counterReducer = Reducer<Counter, CounterEvent>(mutating: { counter, event in
    switch event {
    case .increment: counter.count += 1
    case .decrement: counter.count -= 1
    }
})

struct Screen: Equatable, Sendable {
    var left = Counter()
    var right = Counter()
    var detail: Counter?
    var rows: [Counter] = []
    var title = "counters"
}

enum ScreenEvent: Equatable, Sendable {
    case left(CounterEvent)
    case right(CounterEvent)
    case detail(CounterEvent)
    case row(id: Int, event: CounterEvent)
    case showDetail
    case hideDetail
    case addRow(Int)
    case removeRow(Int)
    case rename(String)
}

extension EventPath where Root == ScreenEvent, Value == CounterEvent {
    static let left = EventPath(embed: ScreenEvent.left, extract: { if case .left(let event) = $0 { event } else { nil } })
    static let right = EventPath.case(ScreenEvent.right)
    static let detail = EventPath.case(ScreenEvent.detail)
}

extension EventPath where Root == ScreenEvent, Value == (Int, CounterEvent) {
    static let row = EventPath(embed: { ScreenEvent.row(id: $0.0, event: $0.1) },
                               extract: { if case .row(let id, let event) = $0 { (id, event) } else { nil } })
}

/// The parent's own events: what children come and go, and its own field.
let screenOwnReducer = Reducer<Screen, ScreenEvent>.partial { screen, event in
    var screen = screen
    switch event {
    case .showDetail: screen.detail = Counter()
    case .hideDetail: screen.detail = nil
    case .addRow(let id): screen.rows.append(Counter(id: id))
    case .removeRow(let id): screen.rows.removeAll { $0.id == id }
    case .rename(let title): screen.title = title
    default: return nil
    }
    return screen
}

let screenReducer = Reducer.combine(
    counterReducer.pullback(state: \Screen.left, event: .left),
    counterReducer.pullback(state: \Screen.right, event: .right),
    counterReducer.optional().pullback(state: \Screen.detail, event: .detail),
    counterReducer.forEach(state: \Screen.rows, event: .row),
    screenOwnReducer
)

@Suite(.timeLimit(.minutes(1)))
struct CompositionReducerTests {
    @Test func aPulledBackReducer_ChangesItsChildInPlace_AndNothingElse() {
        let screen = Screen(left: Counter(count: 5), right: Counter(count: 7), title: "t")
        let next = screenReducer.apply(.left(.increment), to: screen)
        #expect(next == Screen(left: Counter(count: 6), right: Counter(count: 7), title: "t"))
    }

    @Test func anEventForOneChild_ReachesOnlyThatChild_EvenOfTheSameType() {
        var screen = Screen()
        for event: ScreenEvent in [.right(.increment), .right(.increment), .left(.decrement)] {
            screen = screenReducer.apply(event, to: screen) ?? screen
        }
        #expect(screen.left.count == -1)
        #expect(screen.right.count == 2)
    }

    @Test func aLiftedReducer_DeclinesTheEventsThatAreNotItsChilds() {
        let left = counterReducer.pullback(state: \Screen.left, event: .left)
        #expect(left.isPartial)
        #expect(left.apply(.right(.increment), to: Screen()) == nil)
        #expect(left.apply(.rename("x"), to: Screen()) == nil)
    }

    @Test func combine_AppliesItsReducersInOrder_EachOnTheLastOnesState() {
        let double = Reducer<Int, Int> { state, _ in state * 2 }
        let addEvent = Reducer<Int, Int> { state, event in state + event }
        #expect(Reducer.combine(double, addEvent).apply(1, to: 5) == 11)
        #expect(Reducer.combine(addEvent, double).apply(1, to: 5) == 12)
        #expect(!Reducer.combine(double, addEvent).isPartial)
    }

    @Test func combine_DeclinesOnlyWhatEveryPartDeclines() {
        let evens = Reducer<Int, Int>.partial { state, event in event % 2 == 0 ? state + event : nil }
        let threes = Reducer<Int, Int>.partial { state, event in event % 3 == 0 ? state * 10 : nil }
        let both = Reducer.combine(evens, threes)
        #expect(both.apply(2, to: 1) == 3)
        #expect(both.apply(3, to: 1) == 10)
        #expect(both.apply(6, to: 1) == 70)
        #expect(both.apply(5, to: 1) == nil)
    }

    @Test func anOptionalChild_TakesItsEventsWhileThere_AndDeclinesThemWhileNil() {
        #expect(screenReducer.apply(.detail(.increment), to: Screen()) == nil)
        var screen = screenReducer.apply(.showDetail, to: Screen())!
        screen = screenReducer.apply(.detail(.increment), to: screen)!
        #expect(screen.detail?.count == 1)
        screen = screenReducer.apply(.hideDetail, to: screen)!
        #expect(screenReducer.apply(.detail(.increment), to: screen) == nil)
    }

    @Test func forEach_AnEventGoesToTheElementWithItsId_AndOneForARemovedIdIsDeclined() {
        var screen = Screen()
        for event: ScreenEvent in [.addRow(1), .addRow(2), .addRow(3), .row(id: 2, event: .increment),
                                   .row(id: 2, event: .increment), .row(id: 3, event: .decrement)] {
            screen = screenReducer.apply(event, to: screen)!
        }
        #expect(screen.rows.map(\.count) == [0, 2, -1])
        screen = screenReducer.apply(.removeRow(2), to: screen)!
        #expect(screenReducer.apply(.row(id: 2, event: .increment), to: screen) == nil)
        #expect(screen.rows.map(\.id) == [1, 3])
    }

    @Test func aComposedLoop_IgnoresAnEventNoChildTakes_WithoutANewState() async {
        let loop = Spin(initialState: Screen(), feedbacks: [], reducer: screenReducer).start()
        let replies = await withCheckedContinuation { continuation in
            _ = loop.emit(batch: [.detail(.increment), .left(.increment)]) { continuation.resume(returning: $0) }
        }
        #expect(replies?.declined == [0])
        #expect(replies?.sequence == 1)
        #expect(loop.state.left.count == 1)
        loop.stop()
    }

    @Test func eventPathCase_ExtractsItsOwnCase_AndNotAnotherOfTheSamePayload() {
        let right = EventPath<ScreenEvent, CounterEvent>.right
        #expect(right.extract(.right(.decrement)) == .decrement)
        #expect(right.extract(.left(.decrement)) == nil)
        #expect(right.extract(.showDetail) == nil)
        let row = EventPath<ScreenEvent, (id: Int, event: CounterEvent)>.case(ScreenEvent.row)
        #expect(row.extract(.row(id: 4, event: .increment))?.id == 4)
        #expect(row.extract(.addRow(4)) == nil)
    }

    @Test func eventPathAppending_ReachesAGrandchild() {
        enum Outer: Sendable { case screen(ScreenEvent), other }
        let path = EventPath<Outer, ScreenEvent>.case(Outer.screen).appending(.left)
        guard case .screen(.left(.increment)) = path.embed(.increment) else {
            Issue.record("embedded in the wrong case")
            return
        }
        #expect(path.extract(.screen(.left(.decrement))) == .decrement)
        #expect(path.extract(.screen(.right(.decrement))) == nil)
        #expect(path.extract(.other) == nil)
    }
}

/// A child's effect for the feedback tests: at count 1 it waits for `gate` and then
/// increments; each start and each cancellation is recorded with the counter's id.
final class CounterEffects: Sendable {
    let started = Recorder<Int>()
    let cancelled = Recorder<Int>()
    let gate = Gate()

    var feedback: Feedback<Counter, CounterEvent> {
        Feedback(effect: { [started, cancelled, gate] (counter: Counter) async -> CounterEvent? in
            guard counter.count == 1 else { return nil }
            started.append(counter.id)
            await withTaskCancellationHandler { await gate.wait() } onCancel: { cancelled.append(counter.id) }
            return .increment
        })
    }
}

@Suite(.timeLimit(.minutes(1)))
struct CompositionFeedbackTests {
    @Test func aPulledBackFeedback_SeesItsChild_AndItsEventsAreWrappedIntoTheParents() async {
        let effects = CounterEffects()
        let loop = Spin(initialState: Screen(left: Counter(count: 1)), feedbacks: [
            effects.feedback.pullback(state: \Screen.left, event: .left),
        ], reducer: screenReducer).start()
        #expect(await eventually { effects.started.all == [0] })
        effects.gate.open()
        #expect(await loop.firstState { $0.left.count == 2 }?.right.count == 0)
        loop.stop()
    }

    /// DESIGN's Gear rule (a host attaches every Gear before any Spin's first state) holds
    /// for a child's Gear feedback too: its run exists from the loop's making, so an event
    /// pushed into the Gear before the loop delivered any state is caught.
    @Test func aChildsGearFeedback_IsAttachedBeforeTheFirstState_SoNothingPushedMeanwhileIsLost() async {
        let gear = Gear<Int>()
        let catching = Feedback<Counter, CounterEvent>(attachedTo: gear, propagating: { (step: Int) in
            step > 0 ? .increment : .decrement
        })
        let loop = Spin(initialState: Screen(), feedbacks: [catching.pullback(state: \Screen.right, event: .right)],
                        reducer: screenReducer).makeLoop()
        gear.propagate(1)
        gear.propagate(1)
        loop.start()
        #expect(await loop.firstState { $0.right.count == 2 }?.left.count == 0)
        loop.stop()
    }

    @Test func aSiblingsEvents_NeitherRestartNorCancelAChildsRunningEffect() async {
        let effects = CounterEffects()
        let loop = Spin(initialState: Screen(left: Counter(count: 1)), feedbacks: [
            effects.feedback.pullback(state: \Screen.left, event: .left),
        ], reducer: screenReducer).start()
        #expect(await eventually { effects.started.count == 1 })
        for event: ScreenEvent in [.right(.increment), .right(.increment), .rename("busy"), .addRow(1)] {
            _ = await loop.emitAndWait(event)
        }
        effects.gate.open()
        #expect(await loop.firstState { $0.left.count == 2 } != nil)
        #expect(effects.started.all == [0])
        #expect(effects.cancelled.all.isEmpty)
        loop.stop()
    }

    @Test func anOptionalChildsEffect_IsCancelledWhenTheChildGoes_AndARunStartsWhenItComesBack() async {
        let effects = CounterEffects()
        let loop = Spin(initialState: Screen(), feedbacks: [
            effects.feedback.optional().pullback(state: \Screen.detail, event: .detail),
        ], reducer: screenReducer).start()
        _ = await loop.emitAndWait(.showDetail)
        _ = await loop.emitAndWait(.detail(.increment))
        #expect(await eventually { effects.started.count == 1 })
        _ = await loop.emitAndWait(.hideDetail)
        #expect(await eventually { effects.cancelled.count == 1 })
        effects.gate.open()
        // The cancelled effect's increment is not applied (and would be declined: no detail).
        #expect(await loop.emitAndWait(.showDetail)?.state.detail == Counter())
        _ = await loop.emitAndWait(.detail(.increment))
        #expect(await loop.firstState { $0.detail?.count == 2 } != nil)
        #expect(effects.started.count == 2)
        #expect(loop.sequence == 6)
        loop.stop()
    }

    @Test func forEach_RemovingAnElement_CancelsItsEffects_AndLeavesTheOthersRunning() async {
        let effects = CounterEffects()
        let loop = Spin(initialState: Screen(), feedbacks: [
            effects.feedback.forEach(state: \Screen.rows, event: .row),
        ], reducer: screenReducer).start()
        for event: ScreenEvent in [.addRow(1), .addRow(2), .addRow(3), .row(id: 1, event: .increment),
                                   .row(id: 2, event: .increment)] {
            _ = await loop.emitAndWait(event)
        }
        #expect(await eventually { Set(effects.started.all) == [1, 2] })
        _ = await loop.emitAndWait(.removeRow(1))
        #expect(await eventually { effects.cancelled.all == [1] })
        effects.gate.open()
        let done = await loop.firstState { $0.rows.first?.count == 2 }
        #expect(done?.rows == [Counter(id: 2, count: 2), Counter(id: 3, count: 0)])
        // An element's events carry its id: the cancelled run of 1 sent none.
        _ = await loop.emitAndWait(.rename("done"))
        #expect(loop.sequence == 8)
        loop.stop()
    }

    @Test func stop_CancelsTheEffectsOfEveryChild() async {
        let effects = CounterEffects()
        let loop = Spin(initialState: Screen(left: Counter(count: 1), right: Counter(count: 1),
                                             rows: [Counter(id: 5, count: 1)]), feedbacks: [
            effects.feedback.pullback(state: \Screen.left, event: .left),
            effects.feedback.pullback(state: \Screen.right, event: .right),
            effects.feedback.forEach(state: \Screen.rows, event: .row),
        ], reducer: screenReducer).start()
        #expect(await eventually { effects.started.count == 3 })
        loop.stop()
        #expect(await eventually { effects.cancelled.count == 3 })
        #expect(effects.cancelled.all.sorted() == [0, 0, 5])
        effects.gate.open()
    }
}

// Harvest's effect mappings inside a parent: a wicket's transition table, lifted twice.

enum Wicket: Equatable, Sendable {
    case closed, opening, open
}

enum WicketEvent: Equatable, Sendable {
    case open, opened
}

struct Hinges: Sendable {}

let wicketTable = TransitionTable<Wicket, WicketEvent, Hinges>([
    .open   | .closed  => .opening | Effect { _ in .opened },
    .opened | .opening => .open,
])

struct House: Equatable, Sendable {
    var front = Wicket.closed
    var back = Wicket.closed
}

enum HouseEvent: Equatable, Sendable {
    case front(WicketEvent)
    case back(WicketEvent)
}

@Suite(.timeLimit(.minutes(1)))
struct CompositionTransitionTableTests {
    @Test func aLiftedTablesEffects_StartFromTheirChildsTransitions_AndReportToThatChild() async {
        let front = EventPath<HouseEvent, WicketEvent>.case(HouseEvent.front)
        let back = EventPath<HouseEvent, WicketEvent>.case(HouseEvent.back)
        let wickets = wicketTable.effects(environment: Hinges())
        let loop = Spin(initialState: House(), feedbacks: [
            wickets.pullback(state: \House.front, event: front),
            wickets.pullback(state: \House.back, event: back),
        ], reducer: Reducer.combine(wicketTable.reducer.pullback(state: \House.front, event: front),
                                    wicketTable.reducer.pullback(state: \House.back, event: back))).start()
        loop.emit(.back(.open))
        #expect(await loop.firstState { $0.back == .open } == House(front: .closed, back: .open))
        loop.emit(.front(.open))
        #expect(await loop.firstState { $0.front == .open } == House(front: .open, back: .open))
        // Each wicket's effect ran once, for its own transition: .open, .opened per wicket.
        #expect(loop.sequence == 4)
        loop.stop()
    }
}
