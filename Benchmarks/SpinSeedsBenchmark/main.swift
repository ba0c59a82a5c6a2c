// Events per second through running SpinLoops, for the seed-derived forms beside their
// plain Swift twins in the same run:
//
// - a JSON machine (SpinMachines) beside a Swift Spin with the same reducer over a
//   struct: a two-state toggle counting its toggles, and a one-state counter whose
//   transition has a guard;
// - a transition table Spin (`Spin(initialState:table:environment:)`) beside the same
//   logic as a plain reducer;
// - a `Feedback.react` beside the plain synchronous feedback that does the same.
//
//   swift run -c release spin-seeds-benchmark [events] [rounds] [only]
//
// `only` runs just the contenders whose name contains it, and prints their rates (to
// profile one: `perf record -g .build/release/spin-seeds-benchmark 200000 20 table`).
//
// Each figure is the median of `rounds` runs; ratios compare figures of this run only,
// since the machines are shared and noisy.
import Foundation
import SpinCore
import SpinMachines

let events = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let rounds = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 7 : 7
let only = CommandLine.arguments.count > 3 ? CommandLine.arguments[3] : nil

/// Emits `events` copies of `event` into a loop from another task and reads its states
/// until `isLast` holds; events per second.
func measure<State: Sendable, Event: Sendable>(_ spin: Spin<State, Event>, emitting event: Event,
                                               until isLast: @escaping @Sendable (State) -> Bool) async -> Double {
    let loop = spin.start()
    let states = loop.states
    let start = ContinuousClock.now
    Task.detached {
        for _ in 0..<events { loop.emit(event) }
    }
    for await state in states where isLast(state) { break }
    let elapsed = ContinuousClock.now - start
    loop.stop()
    let (seconds, attoseconds) = elapsed.components
    return Double(events) / (Double(seconds) + Double(attoseconds) / 1e18)
}

func machine(_ json: String) -> MachineDefinition {
    do {
        return try MachineDefinition(json: Array(json.utf8), file: "benchmark.json")
    } catch {
        fatalError("\(error)")
    }
}

/// Whether a machine state's `count` reached the number of events emitted.
@Sendable func machineDone(_ state: MachineState) -> Bool {
    state.context["count"] == .number(Double(events))
}

// MARK: The toggle: two states, each event flips them and counts.

struct Toggle: Sendable, Equatable {
    var on = false
    var count = 0
}
enum ToggleEvent: Sendable, Equatable { case toggle }

@Sendable func toggle(_ state: Toggle, _ event: ToggleEvent) -> Toggle {
    Toggle(on: !state.on, count: state.count + 1)
}

let countOne = #"[ { "type": "assign", "set": { "count": { "add": 1 } } } ]"#
let toggleMachine = machine(#"""
{ "id": "toggle", "initial": "off", "context": { "count": 0 }, "states": {
    "off": { "on": { "toggle": { "target": "on", "actions": \#(countOne) } } },
    "on": { "on": { "toggle": { "target": "off", "actions": \#(countOne) } } } } }
"""#)

// MARK: The guarded counter: one state, a targetless transition under a guard.

struct Count: Sendable, Equatable {
    var count = 0
}
enum CountEvent: Sendable, Equatable { case increase }
let limit = 1_000_000_000

let guardedMachine = machine(#"""
{ "id": "counter", "initial": "counting", "context": { "count": 0 }, "states": {
    "counting": { "on": { "increase": {
        "guard": { "lt": [ "context.count", \#(limit) ] }, "actions": \#(countOne) } } } } }
"""#)
let guardedSwift = Spin(initialState: Count(), feedbacks: [], reducer: .partial { (state: Count, _: CountEvent) in
    state.count < limit ? Count(count: state.count + 1) : nil
})

// MARK: The transition table: the toggle as rows, beside the plain toggle reducer.

let toggleTable = TransitionTable<Toggle, ToggleEvent, Void>([
    TransitionRow(on: .exactly(.toggle), from: .matching { !$0.on }, to: { state, _ in Toggle(on: true, count: state.count + 1) }),
    TransitionRow(on: .exactly(.toggle), from: .matching { $0.on }, to: { state, _ in Toggle(on: false, count: state.count + 1) }),
])

// MARK: react: a feedback whose request is the state's mode, beside a plain feedback.

/// A counter with a mode: `watching` asks the feedback for one `started` event.
struct Watched: Sendable, Equatable {
    var count = 0
    var started = false
}
enum WatchedEvent: Sendable, Equatable { case tick, started }

@Sendable func watch(_ state: Watched, _ event: WatchedEvent) -> Watched {
    switch event {
    case .tick: Watched(count: state.count + 1, started: state.started)
    case .started: Watched(count: state.count, started: true)
    }
}
/// The request: the mode while not started (so the effect runs once), else none.
@Sendable func mode(_ state: Watched) -> String? { state.started ? nil : "watching" }

let reactSpin = Spin(initialState: Watched()) {
    Feedback.react(request: mode, effect: { (_: String) async -> WatchedEvent? in .started })
    Reducer(watch)
}
let plainFeedbackSpin = Spin(initialState: Watched()) {
    Feedback(effect: { (state: Watched) -> WatchedEvent? in mode(state).map { _ in .started } })
    Reducer(watch)
}

// MARK: The run

struct Contender {
    let name: String
    let run: () async -> Double
    var rates: [Double] = []
}

var contenders = [
    Contender(name: "toggle: JSON machine") {
        await measure(toggleMachine.spin(), emitting: MachineEvent(type: "toggle"), until: machineDone)
    },
    Contender(name: "toggle: Swift Spin (reducer over a struct)") {
        await measure(Spin(initialState: Toggle()) { Reducer(toggle) }, emitting: .toggle) { $0.count == events }
    },
    Contender(name: "guarded counter: JSON machine") {
        await measure(guardedMachine.spin(), emitting: MachineEvent(type: "increase"), until: machineDone)
    },
    Contender(name: "guarded counter: Swift Spin (partial reducer)") {
        await measure(guardedSwift, emitting: .increase) { $0.count == events }
    },
    Contender(name: "toggle: transition table Spin") {
        await measure(Spin(initialState: Toggle(), table: toggleTable, environment: ()), emitting: .toggle) {
            $0.count == events
        }
    },
    Contender(name: "toggle: the table's reducer alone (no effects)") {
        await measure(Spin(initialState: Toggle(), feedbacks: [], reducer: toggleTable.reducer), emitting: .toggle) {
            $0.count == events
        }
    },
    Contender(name: "counter + react feedback (request: the mode)") {
        await measure(reactSpin, emitting: .tick) { $0.count == events }
    },
    Contender(name: "counter + plain synchronous feedback") {
        await measure(plainFeedbackSpin, emitting: .tick) { $0.count == events }
    },
]

if let only {
    contenders.removeAll { !$0.name.contains(only) }
}
for contender in contenders { _ = await contender.run() }  // warm-up
for _ in 0..<rounds {
    // Interleaved, so that a noisy moment hurts every contender alike.
    for index in contenders.indices { contenders[index].rates.append(await contenders[index].run()) }
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
let rate = Dictionary(uniqueKeysWithValues: contenders.map { ($0.name, median($0.rates)) })

print("spin-seeds-benchmark: \(events) events, median of \(rounds) rounds")
if only != nil {
    for contender in contenders { print(contender.name, Int(median(contender.rates).rounded()), "ev/s") }
    exit(0)
}
func row(_ name: String, _ ratio: String = "") {
    let padded = name + String(repeating: " ", count: max(0, 48 - name.count))
    print("\(padded) \(String(Int(rate[name]!.rounded()))) ev/s   \(ratio)")
}
func ratio(_ name: String, over base: String, _ label: String) -> String {
    "\(label) \(Double(Int((rate[name]! / rate[base]! * 100).rounded())) / 100)"
}
let names = contenders.map(\.name)
row(names[0], ratio(names[0], over: names[1], "machine/Swift"))
row(names[1])
row(names[2], ratio(names[2], over: names[3], "machine/Swift"))
row(names[3])
row(names[4], ratio(names[4], over: names[1], "table/plain reducer"))
row(names[5], ratio(names[5], over: names[1], "table reducer/plain reducer"))
row(names[6], ratio(names[6], over: names[7], "react/plain feedback"))
row(names[7])
