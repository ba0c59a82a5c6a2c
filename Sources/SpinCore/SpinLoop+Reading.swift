import Dispatch

/// What a loop lets others read and watch: its state, sequence, `states` and observers.
extension SpinLoop {
    /// The current state: the initial one, or the last one the reducer made.
    public var state: State {
        shared.withLock { $0.state }
    }

    /// The number of events applied (plus the sequence the loop was made at).
    public var sequence: UInt64 {
        shared.withLock { $0.sequence }
    }

    /// The state together with its sequence, read at once.
    public var snapshot: (sequence: UInt64, state: State) {
        shared.withLock { ($0.sequence, $0.state) }
    }

    /// Events waiting to be applied (external ones and those of feedbacks and Gears),
    /// not counting the batch the executor is applying.
    public var pendingEvents: Int {
        shared.withLock { $0.pending.count }
    }

    /// Effects its feedbacks started and that have not finished (a request in flight, a
    /// timer running, a stream open): a host that lets idle loops go waits for none.
    package var runningEffects: Int {
        runners.reduce(0) { $0 + $1.runningEffects }
    }

    /// `states` sequences subscribed now.
    public var subscriberCount: Int {
        shared.withLock { $0.subscribers.count }
    }

    public var isStopped: Bool {
        shared.withLock { $0.phase == .stopped }
    }

    /// The current state first, then every new state, until the loop stops (a stopped
    /// loop's sequence gives its last state and ends). Each call makes a new,
    /// independent subscription: iterate it once, or drop it.
    public var states: SpinStates<State> {
        let channel = StateChannel<State>()
        let id = shared.withLock { shared -> UInt64? in
            channel.push(CollectionOfOne(shared.state))
            guard shared.phase != .stopped else { return nil }
            shared.nextID += 1
            shared.subscribers[shared.nextID] = channel
            return shared.nextID
        }
        guard let id else {
            channel.finish()
            return SpinStates(channel: channel, registration: StatesRegistration {})
        }
        return SpinStates(channel: channel, registration: StatesRegistration { [weak self] in
            self?.shared.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        })
    }

    /// Calls `handler` on the loop's executor for every event applied once the
    /// registration has reached the executor (at the latest with the next event), in
    /// order, before the feedbacks, `state` and `states` see the new state. The handler
    /// must not block: the loop waits for it. Cancel the subscription to detach.
    public func observe(_ handler: @escaping @Sendable (Transition<State, Event>) -> Void) -> SpinSubscription {
        observe(startingWith: { _, _ in }, handler)
    }

    /// Calls `handler` on the loop's executor for every event applied from the next one
    /// the executor takes on, in order, after the feedbacks were given the new state (so
    /// after what they do at once with it, such as propagating a Gear event). A host
    /// journals a transition there with the Gear events its state sent. The handler must
    /// not block. Register it before the loop starts to see every transition.
    package func observeAfterFeedbacks(_ handler: @escaping @Sendable (Transition<State, Event>) -> Void) -> SpinSubscription {
        let id = shared.withLock { shared -> UInt64? in
            guard shared.phase != .stopped else { return nil }
            shared.nextID += 1
            shared.lateObservers.append(Observer(id: shared.nextID, handler: handler))
            return shared.nextID
        }
        guard let id else { return SpinSubscription {} }
        return SpinSubscription { [weak self] in
            self?.shared.withLock { $0.lateObservers.removeAll { $0.id == id } }
        }
    }

    /// `observe(_:)` and `observeAfterFeedbacks(_:)` at once, under one subscription (what
    /// a host that journals a transition with the Gear events its state sent registers
    /// for every Spin: one registration, not two and a third to cancel both).
    package func observe(_ handler: @escaping @Sendable (Transition<State, Event>) -> Void,
                         afterFeedbacks late: @escaping @Sendable (Transition<State, Event>) -> Void) -> SpinSubscription {
        join(snapshot: { _, _ in }, handler, late: late)
    }

    /// Like `observe(_:)`, but first gives `snapshot` the sequence and state the handler's
    /// transitions start from, read on the executor: no transition is missed or seen
    /// twice between the snapshot and the handler (a stream sends exactly this).
    /// Both are called on the loop's executor; for a stopped loop, `snapshot` is called
    /// at once with the last state and the handler never.
    public func observe(
        startingWith snapshot: @escaping @Sendable (_ sequence: UInt64, _ state: State) -> Void,
        _ handler: @escaping @Sendable (Transition<State, Event>) -> Void
    ) -> SpinSubscription {
        join(snapshot: snapshot, handler, late: nil)
    }

    /// Registers `handler` to join at the executor's next turn (after `snapshot`), and
    /// `late` (an observer after the feedbacks) at once, under one id and one subscription.
    private func join(snapshot: @escaping @Sendable (_ sequence: UInt64, _ state: State) -> Void,
                      _ handler: @escaping @Sendable (Transition<State, Event>) -> Void,
                      late: (@Sendable (Transition<State, Event>) -> Void)?) -> SpinSubscription {
        let registration = shared.withLock { shared -> Registration in
            guard shared.phase != .stopped else { return .stopped(shared.sequence, shared.state) }
            shared.nextID += 1
            shared.joining.append(Joiner(id: shared.nextID, handler: handler, snapshot: snapshot))
            if let late { shared.lateObservers.append(Observer(id: shared.nextID, handler: late)) }
            let schedule = !shared.draining
            shared.draining = true
            return .joined(shared.nextID, schedule: schedule)
        }
        switch registration {
        case .stopped(let sequence, let state):
            snapshot(sequence, state)
            return SpinSubscription {}
        case .joined(let id, let schedule):
            if schedule { scheduleDrain() }
            return SpinSubscription { [weak self] in
                self?.shared.withLock { shared in
                    shared.observers.removeAll { $0.id == id }
                    shared.joining.removeAll { $0.id == id }
                    shared.lateObservers.removeAll { $0.id == id }
                }
            }
        }
    }
}
