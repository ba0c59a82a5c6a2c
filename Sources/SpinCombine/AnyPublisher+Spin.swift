import OpenCombine
import SpinCore
import SpinConcurrency

/// A Spin as a publisher of its states, as Spin.Swift's `AnyPublisher.stream(from:)`:
///
/// ```swift
/// AnyPublisher
///     .stream(from: levelsSpin)
///     .sink(receiveCompletion: { _ in }, receiveValue: { _ in })
///     .store(in: &cancellables)
/// ```
extension AnyPublisher where Failure == Never, Output: Sendable {
    /// A publisher of `spin`'s states that runs a loop of it per subscription, while
    /// subscribed: the subscription starts a loop and sends its current state first,
    /// then every new one, in order, from the loop's executor; cancelling the
    /// subscription stops the loop (every effect cancelled). The publisher never
    /// completes: a loop runs until it is stopped.
    public static func stream<Event: Sendable>(from spin: Spin<Output, Event>) -> AnyPublisher<Output, Never> {
        SpinStatesPublisher(spin: spin).eraseToAnyPublisher()
    }

    /// Subscribes to `stream(from: spin)` with unlimited demand: the loop runs until the
    /// returned cancellable is cancelled or released.
    public static func start<Event: Sendable>(spin: Spin<Output, Event>) -> AnyCancellable {
        stream(from: spin).sink { _ in }
    }
}

/// The publisher behind `AnyPublisher.stream(from:)`.
struct SpinStatesPublisher<State: Sendable, Event: Sendable>: Publisher {
    typealias Output = State
    typealias Failure = Never

    let spin: Spin<State, Event>

    func receive<Downstream: Subscriber>(subscriber: Downstream) where Downstream.Input == State, Downstream.Failure == Never {
        let subscription = SpinStatesSubscription(loop: spin.makeLoop(), subscriber: subscriber)
        subscriber.receive(subscription: subscription)
        subscription.run()
    }
}

/// One subscription of `SpinStatesPublisher`: its loop, and the states the subscriber has
/// not asked for yet. States wait (in order, none dropped) until the subscriber asks for
/// them; a subscriber that asks for nothing holds every state its loop makes.
///
/// `@unchecked Sendable`: `subscriber` is only called by the one thread that set
/// `delivering` under the lock, so its calls never overlap (Combine's rule); the rest is
/// in `contents` or immutable.
final class SpinStatesSubscription<State: Sendable, Event: Sendable, Downstream: Subscriber>: Subscription,
    @unchecked Sendable where Downstream.Input == State, Downstream.Failure == Never {
    private struct Contents {
        var waiting: [State] = []
        var demand = Subscribers.Demand.none
        var delivering = false
        var cancelled = false
        var observation: SpinSubscription?
    }

    private let loop: SpinLoop<State, Event>
    private let subscriber: Downstream
    private let contents = Protected(Contents())

    init(loop: SpinLoop<State, Event>, subscriber: Downstream) {
        self.loop = loop
        self.subscriber = subscriber
    }

    /// Starts the loop, unless the subscriber cancelled when it received the subscription.
    func run() {
        let observation = loop.observe(startingWith: { [weak self] _, state in self?.send(state) },
                                       { [weak self] transition in self?.send(transition.state) })
        let cancelled = contents.withLock { contents -> Bool in
            if !contents.cancelled { contents.observation = observation }
            return contents.cancelled
        }
        if cancelled {
            observation.cancel()
        } else {
            loop.start()
        }
    }

    func request(_ demand: Subscribers.Demand) {
        contents.withLock { $0.demand += demand }
        deliver()
    }

    func cancel() {
        let observation = contents.withLock { contents -> SpinSubscription? in
            contents.cancelled = true
            contents.waiting = []
            defer { contents.observation = nil }
            return contents.observation
        }
        observation?.cancel()
        loop.stop()
    }

    private func send(_ state: State) {
        contents.withLock { contents in
            if !contents.cancelled { contents.waiting.append(state) }
        }
        deliver()
    }

    /// Hands waiting states to the subscriber while it asks for them, one thread at a time.
    private func deliver() {
        while true {
            let next = contents.withLock { contents -> State? in
                guard !contents.delivering, !contents.cancelled, contents.demand > 0,
                      !contents.waiting.isEmpty else { return nil }
                contents.delivering = true
                contents.demand -= 1
                return contents.waiting.removeFirst()
            }
            guard let next else { return }
            let more = subscriber.receive(next)
            contents.withLock { contents in
                contents.demand += more
                contents.delivering = false
            }
        }
    }
}
