import Dispatch
import SpinCore
@testable import SpinConcurrency


/// A thread-safe list that tests append to from effects and observers.
final class Recorder<Element: Sendable>: Sendable {
    private let items = Protected<[Element]>([])

    func append(_ element: Element) { items.withLock { $0.append(element) } }
    var all: [Element] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}

/// A one-shot signal an effect can wait on, released by the test.
final class Gate: Sendable {
    private let state = Protected<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resume = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Lets tests observe an object's lifetime.
final class Token: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

/// The trivial counter Spin of these tests: `Int` state, add events.
enum Step: Equatable, Sendable {
    case add(Int)
    case marker
}

func sum(_ state: Int, _ event: Step) -> Int {
    switch event {
    case .add(let n): state + n
    case .marker: state
    }
}

extension SpinLoop {
    /// Waits until the loop reaches a state satisfying `predicate` (the current one
    /// included) and returns it; nil if the loop stops first.
    func firstState(where predicate: @Sendable (State) -> Bool) async -> State? {
        for await state in states where predicate(state) {
            return state
        }
        return nil
    }

    /// Emits `event` and waits until it is applied; returns its transition.
    func emitAndWait(_ event: Event) async -> Transition<State, Event>? {
        await withCheckedContinuation { continuation in
            let result = emit(contentsOf: [event]) { continuation.resume(returning: $0) }
            if result != .accepted { continuation.resume(returning: nil) }
        }
    }
}

extension SpinLoop where State == Int, Event == Step {
    /// Applies `.add(1)` and holds the executor in an observer until `gate` opens, so
    /// that what is emitted meanwhile waits. Returns once the executor is held; cancel
    /// the subscription when done.
    func holdExecutor(until gate: Gate) async -> SpinSubscription {
        let started = Gate()
        let observation = observe { transition in
            guard transition.event == .add(1) else { return }
            started.open()
            let semaphore = DispatchSemaphore(value: 0)
            Task { await gate.wait(); semaphore.signal() }
            semaphore.wait()
        }
        emit(.add(1))
        await started.wait()
        return observation
    }
}

/// Polls `condition` until it holds or `timeout` passes (for effects of work already
/// queued elsewhere, like a task finishing after cancellation). Returns the last value.
/// 20 s: under the thread sanitizer, with the suites in parallel on two cores, a task can
/// wait seconds for a cooperative thread (a 5 s wait failed about once in ten runs).
func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// Runs `makeFeedback`'s feedback in a loop at 0 whose effect for state 0 waits for the
/// gate it is given and then hands over `.add(1)`, `.add(2)`, `.add(3)`. They are handed
/// over while the loop's executor is held at state 1, before that state reaches the
/// feedback (so before it cancels the effect). Returns the state once they are applied:
/// 7 when they all are, 1 when none is.
func stateAfterEventsHandedOverBeforeANewState(_ makeFeedback: (Gate) -> Feedback<Int, Step>) async -> Int? {
    let handOver = Gate()
    let loop = Spin(initialState: 0, feedbacks: [makeFeedback(handOver)], reducer: Reducer(sum)).start()
    let release = Gate()
    let hold = await loop.holdExecutor(until: release)
    handOver.open()
    _ = await eventually { loop.pendingEvents == 3 }
    release.open()
    hold.cancel()
    let state = await loop.emitAndWait(.marker)?.state
    loop.stop()
    return state
}

/// `.add(1)`, `.add(2)`, `.add(3)` once `gate` opens, if `condition`; else nothing.
func addingOneTwoThree(after gate: Gate, if condition: Bool = true) -> AsyncStream<Step> {
    AsyncStream { continuation in
        guard condition else { continuation.finish(); return }
        Task {
            await gate.wait()
            for n in 1...3 { continuation.yield(.add(n)) }
            continuation.finish()
        }
    }
}
