// Events per second through a running SpinLoop (emit -> reduce -> states), beside a
// naive peer in the same run: an actor holding the state, fed by an AsyncStream and
// publishing every state on another AsyncStream.
//
//   swift run -c release spin-core-benchmark [events] [rounds]
//
// Each figure is the median of `rounds` runs; the ratio compares figures of this run
// only, since the machines are shared and noisy.
import Dispatch
import SpinCore

let events = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 200_000 : 200_000
let rounds = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 7 : 7

@Sendable func add(_ state: Int, _ event: Int) -> Int { state &+ event }

/// Emits `events` ones into a loop from another task and reads `states` until the last.
func measureLoop(_ spin: Spin<Int, Int>) async -> Double {
    let loop = spin.start()
    let states = loop.states
    let start = ContinuousClock.now
    Task.detached {
        for _ in 0..<events { loop.emit(1) }
    }
    for await state in states where state == events { break }
    let elapsed = ContinuousClock.now - start
    loop.stop()
    return Double(events) / elapsed.seconds
}

/// The naive peer: events in through an AsyncStream, an actor reduces, states out
/// through an AsyncStream.
actor NaiveStore {
    var state = 0
    func apply(_ event: Int) -> Int {
        state = add(state, event)
        return state
    }
}

func measureNaive() async -> Double {
    let (input, inputContinuation) = AsyncStream.makeStream(of: Int.self)
    let (output, outputContinuation) = AsyncStream.makeStream(of: Int.self)
    let store = NaiveStore()
    let pump = Task {
        for await event in input {
            outputContinuation.yield(await store.apply(event))
        }
        outputContinuation.finish()
    }
    let start = ContinuousClock.now
    Task.detached {
        for _ in 0..<events { inputContinuation.yield(1) }
    }
    for await state in output where state == events { break }
    let elapsed = ContinuousClock.now - start
    inputContinuation.finish()
    await pump.value
    return Double(events) / elapsed.seconds
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

func median(_ values: [Double]) -> Double {
    values.sorted()[values.count / 2]
}

let noFeedback = Spin(initialState: 0) { Reducer(add) }
let oneFeedback = Spin(initialState: 0) {
    Feedback(effect: { (state: Int) -> Int? in state < 0 ? 1 : nil })
    Reducer(add)
}

var loopRates: [Double] = []
var feedbackRates: [Double] = []
var naiveRates: [Double] = []
_ = await measureLoop(noFeedback)   // warm-up
_ = await measureNaive()
for _ in 0..<rounds {
    // Interleaved, so that a noisy moment hurts every contender alike.
    loopRates.append(await measureLoop(noFeedback))
    feedbackRates.append(await measureLoop(oneFeedback))
    naiveRates.append(await measureNaive())
}

let naive = median(naiveRates)
func row(_ name: String, _ rate: Double) -> String {
    let padded = name + String(repeating: " ", count: max(0, 44 - name.count))
    let ratio = String(Int((rate / naive * 100).rounded()))
    return "\(padded) \(String(Int(rate.rounded()))) ev/s   \(ratio)% of naive"
}
print("spin-core-benchmark: \(events) events, median of \(rounds) rounds")
print(row("SpinLoop, no feedback", median(loopRates)))
print(row("SpinLoop, one synchronous feedback", median(feedbackRates)))
print(row("naive: actor + AsyncStream in/out (peer)", naive))
