// The contenders of spin-seeds-benchmark, one per run, for instruction counts:
//
//   valgrind --tool=callgrind .build/release/spin-seeds-callgrind EVENTS NAME
//
// NAME: plain, table, tablereducer, machine, guarded, guardedswift, react, plainfeedback.
// Each run emits EVENTS events twice (two loops); (Ir at 2E - Ir at E) / 2E is the cost
// of one event, start-up excluded. The main is synchronous: valgrind 3.19 stops with an
// internal error on a program whose async main parks the main thread in dispatch_main
// (rt_sigsuspend), as spin-seeds-benchmark's does. No timing here: counts only.
import Foundation
import SpinCore
import SpinMachines

let events = Int(CommandLine.arguments[1])!
let which = CommandLine.arguments[2]

struct Toggle: Sendable, Equatable { var on = false; var count = 0 }
enum ToggleEvent: Sendable, Equatable { case toggle }
@Sendable func toggle(_ state: Toggle, _ event: ToggleEvent) -> Toggle { Toggle(on: !state.on, count: state.count + 1) }

/// Starts `spin`, emits `events` copies of `event` from a thread, and waits on `states`
/// for the state `isLast` accepts.
func run<State: Sendable, Event: Sendable>(_ spin: Spin<State, Event>, _ event: Event, _ isLast: @escaping @Sendable (State) -> Bool) {
    let done = DispatchSemaphore(value: 0)
    let loop = spin.start()
    let states = loop.states
    Task.detached {
        for await state in states where isLast(state) { break }
        done.signal()
    }
    Thread.detachNewThread { for _ in 0..<events { loop.emit(event) } }
    done.wait()
    loop.stop()
}

let countOne = #"[ { "type": "assign", "set": { "count": { "add": 1 } } } ]"#
let json = #"""
{ "id": "toggle", "initial": "off", "context": { "count": 0 }, "states": {
    "off": { "on": { "toggle": { "target": "on", "actions": \#(countOne) } } },
    "on": { "on": { "toggle": { "target": "off", "actions": \#(countOne) } } } } }
"""#
let guarded = #"""
{ "id": "counter", "initial": "counting", "context": { "count": 0 }, "states": {
    "counting": { "on": { "increase": {
        "guard": { "lt": [ "context.count", 1000000000 ] }, "actions": \#(countOne) } } } } }
"""#
let table = TransitionTable<Toggle, ToggleEvent, Void>([
    TransitionRow(on: .exactly(.toggle), from: .matching { !$0.on }, to: { state, _ in Toggle(on: true, count: state.count + 1) }),
    TransitionRow(on: .exactly(.toggle), from: .matching { $0.on }, to: { state, _ in Toggle(on: false, count: state.count + 1) }),
])
@Sendable func machineDone(_ state: MachineState) -> Bool { state.context["count"] == .number(Double(events)) }

struct Watched: Sendable, Equatable { var count = 0; var started = false }
enum WatchedEvent: Sendable, Equatable { case tick, started }
@Sendable func watch(_ state: Watched, _ event: WatchedEvent) -> Watched {
    switch event {
    case .tick: Watched(count: state.count + 1, started: state.started)
    case .started: Watched(count: state.count, started: true)
    }
}
@Sendable func mode(_ state: Watched) -> String? { state.started ? nil : "watching" }

for _ in 0..<2 {
    switch which {
    case "plain": run(Spin(initialState: Toggle()) { Reducer(toggle) }, .toggle) { $0.count == events }
    case "table": run(Spin(initialState: Toggle(), table: table, environment: ()), .toggle) { $0.count == events }
    case "tablereducer": run(Spin(initialState: Toggle(), feedbacks: [], reducer: table.reducer), .toggle) { $0.count == events }
    case "machine":
        let m = try! MachineDefinition(json: Array(json.utf8), file: "b.json")
        run(m.spin(), MachineEvent(type: "toggle"), machineDone)
    case "guarded":
        let m = try! MachineDefinition(json: Array(guarded.utf8), file: "b.json")
        run(m.spin(), MachineEvent(type: "increase"), machineDone)
    case "guardedswift":
        run(Spin(initialState: Toggle(), feedbacks: [], reducer: .partial { (state: Toggle, _: ToggleEvent) in
            state.count < 1_000_000_000 ? Toggle(on: state.on, count: state.count + 1) : nil
        }), .toggle) { $0.count == events }
    case "react":
        run(Spin(initialState: Watched()) {
            Feedback.react(request: mode, effect: { (_: String) async -> WatchedEvent? in .started })
            Reducer(watch)
        }, .tick) { $0.count == events }
    case "plainfeedback":
        run(Spin(initialState: Watched()) {
            Feedback(effect: { (state: Watched) -> WatchedEvent? in mode(state).map { _ in .started } })
            Reducer(watch)
        }, .tick) { $0.count == events }
    default: fatalError(which)
    }
}
print("ok")
