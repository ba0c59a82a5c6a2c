import Synchronization
import Dispatch

/// A feedback that catches events from a Gear and turns them into events of its loop.
/// It attaches in `start`, before the loop's first state, so nothing is lost.
final class GearCatchRunner<State: Sendable, Event: Sendable, GearEvent: Sendable>: FeedbackRunner {
    private let gear: Gear<GearEvent>
    private let transform: @Sendable (GearEvent) -> Event?
    private let context: FeedbackContext<Event>
    /// Set once by `start`, cancelled by `stop` (no lock: every awake Spin that catches
    /// a Gear has one of these runners).
    private let subscription = AtomicLazyReference<SpinSubscription>()

    init(gear: Gear<GearEvent>, transform: @escaping @Sendable (GearEvent) -> Event?, context: FeedbackContext<Event>) {
        self.gear = gear
        self.transform = transform
        self.context = context
    }

    func start() {
        // The handler holds the runner (one reference: no closure context per Spin); the
        // Gear lets it go when `stop` detaches it (until then its `LoopHandle` holds the loop).
        let token = gear.attachCatcher(owner: context.host.label) { [self] delivery, receipt in
            guard let event = transform(delivery.event) else { return .ignored }
            return context.host.submit(caught: event, receipt: receipt) ? .enqueued : .refused
        }
        _ = subscription.storeIfNil(token)
    }

    func receive(_ state: State) {}

    func stop() {
        // Cancelling twice is harmless.
        subscription.load()?.cancel()
    }

    var runningEffects: Int { 0 }
}

/// A feedback that pushes an event into a Gear for the states that call for one.
///
final class GearPropagateRunner<State: Sendable, Event: Sendable, GearEvent: Sendable>: FeedbackRunner {
    private let gear: Gear<GearEvent>
    private let transform: @Sendable (State) -> GearEvent?
    private let context: FeedbackContext<Event>
    /// Set by `stop`; a propagation still queued on `.execute(on:)` checks it.
    private let stopped = StopFlag()

    init(gear: Gear<GearEvent>, transform: @escaping @Sendable (State) -> GearEvent?, context: FeedbackContext<Event>) {
        self.gear = gear
        self.transform = transform
        self.context = context
    }

    func start() {}

    /// What made the event (`GearCause`) is read here, on the loop's executor, also when
    /// the transform runs on the feedback's own queue.
    func receive(_ state: State) {
        let gear = self.gear
        let transform = self.transform
        let label = context.host.label
        let stopped = self.stopped
        let cause = context.host.delivery?.cause
        if let queue = context.queue {
            queue.async {
                guard !stopped.isSet else { return }
                if let event = transform(state) { gear.propagate(event, from: label, cause: cause) }
            }
        } else if !stopped.isSet, let event = transform(state) {
            gear.propagate(event, from: label, cause: cause)
        }
    }

    func stop() { stopped.set() }

    var runningEffects: Int { 0 }
}

/// A one-way flag, readable from any thread.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
