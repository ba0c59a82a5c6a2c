import Dispatch
import OpenCombine
import SpinCombine
import Testing
@testable import SpinConcurrency

/// A subscriber that asks for states one batch at a time, as a test says.
final class PacedSubscriber<Input>: Subscriber, @unchecked Sendable {
    typealias Failure = Never

    let received = Recorder<Input>()
    private let subscription = Protected<(any Subscription)?>(nil)
    private let initial: Subscribers.Demand

    init(initial: Subscribers.Demand) {
        self.initial = initial
    }

    func receive(subscription: any Subscription) {
        self.subscription.withLock { $0 = subscription }
        subscription.request(initial)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        received.append(input)
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}

    func request(_ demand: Subscribers.Demand) {
        subscription.withLock { $0 }?.request(demand)
    }

    func cancel() {
        subscription.withLock { $0 }?.cancel()
    }
}

/// `AnyPublisher.stream(from:)` and `start(spin:)`: a Spin as a publisher of its states.
@Suite(.timeLimit(.minutes(1)))
struct StreamPublisherTests {
    /// A counter that counts itself up to `limit`, one add per state.
    private func counter(to limit: Int) -> Spin<Int, Step> {
        Spin(initialState: 0) {
            Feedback(effect: { (state: Int) -> Step? in state < limit ? .add(1) : nil })
            Reducer(sum)
        }
    }

    @Test func stream_SendsTheInitialStateFirst_ThenEveryStateInOrder() async {
        let states = Recorder<Int>()
        let cancellable = AnyPublisher.stream(from: counter(to: 50)).sink { states.append($0) }
        #expect(await eventually { states.count == 51 })
        #expect(states.all == Array(0...50))
        cancellable.cancel()
    }

    @Test func stream_EachSubscriptionRunsItsOwnLoop() async {
        let first = Recorder<Int>()
        let second = Recorder<Int>()
        let states = AnyPublisher.stream(from: counter(to: 3))
        let one = states.sink { first.append($0) }
        let two = states.sink { second.append($0) }
        #expect(await eventually { first.count == 4 && second.count == 4 })
        #expect(first.all == [0, 1, 2, 3])
        #expect(second.all == [0, 1, 2, 3])
        one.cancel()
        two.cancel()
    }

    @Test func stream_HoldsStatesUntilTheSubscriberAsks_AndDropsNone() async {
        let subscriber = PacedSubscriber<Int>(initial: .max(1))
        AnyPublisher.stream(from: counter(to: 5)).subscribe(subscriber)
        #expect(await eventually { subscriber.received.count == 1 })
        try? await Task.sleep(for: .milliseconds(50))
        #expect(subscriber.received.all == [0])
        subscriber.request(.max(2))
        #expect(await eventually { subscriber.received.count == 3 })
        subscriber.request(.unlimited)
        #expect(await eventually { subscriber.received.count == 6 })
        #expect(subscriber.received.all == [0, 1, 2, 3, 4, 5])
        subscriber.cancel()
    }

    @Test func cancellingTheSubscription_StopsTheLoop_AndCancelsItsEffects() async {
        let subjects = Subjects()
        let spin = Spin(initialState: 0) {
            Feedback(effect: subjects.publisher(for:))
            Reducer(sum)
        }
        let states = Recorder<Int>()
        let cancellable = AnyPublisher.stream(from: spin).sink { states.append($0) }
        #expect(await subjects.waitSubscribed(0))
        subjects.send(.add(1), forState: 0)
        #expect(await subjects.waitSubscribed(1))
        cancellable.cancel()
        #expect(await eventually { subjects.cancelled.all == [0, 1] })
        subjects.send(.add(1), forState: 1)
        try? await Task.sleep(for: .milliseconds(20))
        #expect(states.all == [0, 1])
    }

    @Test func aSubscriberThatCancelsAtOnce_StartsNoLoop() async {
        let started = Recorder<Int>()
        let spin = Spin(initialState: 0) {
            Feedback(effect: { (state: Int) -> Step? in started.append(state); return nil })
            Reducer(sum)
        }
        let subscriber = PacedSubscriber<Int>(initial: .none)
        let cancelling = AnyPublisher.stream(from: spin).handleEvents(receiveSubscription: { $0.cancel() })
        cancelling.subscribe(subscriber)
        try? await Task.sleep(for: .milliseconds(30))
        #expect(started.all.isEmpty)
        #expect(subscriber.received.all.isEmpty)
    }

    @Test func start_RunsTheLoop_AndReleasingTheCancellableStopsIt() async {
        let subjects = Subjects()
        let spin = Spin(initialState: 0) {
            Feedback(effect: subjects.publisher(for:))
            Reducer(sum)
        }
        var cancellable: AnyCancellable? = AnyPublisher.start(spin: spin)
        #expect(await subjects.waitSubscribed(0))
        #expect(cancellable != nil)
        cancellable = nil
        #expect(await eventually { subjects.cancelled.all == [0] })
    }
}
