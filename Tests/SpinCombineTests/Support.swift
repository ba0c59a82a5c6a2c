import Dispatch
import OpenCombine
import SpinCombine
@testable import SpinConcurrency

/// A thread-safe list that tests append to from effects and subscribers.
final class Recorder<Element>: Sendable {
    private let items = Protected<[Element]>([])

    func append(_ element: Element) { items.withLock { $0.append(element) } }
    var all: [Element] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}

/// The counter of these tests: `Int` state, add events.
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

/// One `PassthroughSubject` per state an effect was called with, so that a test can send
/// into the publisher of a given state once it is subscribed, and see which ones were
/// cancelled.
final class Subjects: Sendable {
    private let subjects = Protected<[Int: PassthroughSubject<Step, Never>]>([:])
    /// The states whose publisher was subscribed, in order.
    let subscribed = Recorder<Int>()
    /// The states whose subscription was cancelled, in order.
    let cancelled = Recorder<Int>()

    /// The effect: a new subject for `state`.
    func publisher(for state: Int) -> AnyPublisher<Step, Never> {
        let subject = PassthroughSubject<Step, Never>()
        subjects.withLock { $0[state] = subject }
        return subject
            .handleEvents(receiveSubscription: { [subscribed] _ in subscribed.append(state) },
                          receiveCancel: { [cancelled] in cancelled.append(state) })
            .eraseToAnyPublisher()
    }

    /// Waits until the publisher of `state` is subscribed.
    func waitSubscribed(_ state: Int) async -> Bool {
        await eventually { subscribed.all.contains(state) }
    }

    func send(_ event: Step, forState state: Int) {
        subjects.withLock { $0[state] }?.send(event)
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

    /// Emits `event` and waits until it is applied; returns its state.
    func emitAndWait(_ event: Event) async -> State? {
        await withCheckedContinuation { continuation in
            let result = emit(contentsOf: [event]) { continuation.resume(returning: $0?.state) }
            if result != .accepted { continuation.resume(returning: nil) }
        }
    }
}
