import Dispatch
import SpinConcurrency

/// The executor side of a loop: taking events in, applying them in order, publishing
/// the states, and putting the loop back to an earlier state.
extension SpinLoop {
    /// Takes an event of a feedback or Gear: dropped while suspended or stopped; one more
    /// than the budget waiting suspends the loop. False when it was not taken.
    @discardableResult
    func enqueue(_ pending: Pending) -> Bool {
        takeFeedback(count: 1) { $0.append(pending) }
    }

    /// Takes the events one Gear delivery made (`GearReceipt.commit`) as one batch: all
    /// or none (dropped while suspended or stopped; past the budget the loop suspends).
    func enqueue(batch: [Pending]) -> Bool {
        guard batch.count > 1 else { return batch.first.map { enqueue($0) } ?? true }
        return takeFeedback(count: batch.count) { pending in
            for (offset, var event) in batch.enumerated() {
                event.startsBatch = offset == 0
                event.endsBatch = offset == batch.count - 1
                pending.append(event)
            }
        }
    }

    /// Puts `count` events of feedbacks or Gears in the pending list (`append`), unless
    /// the loop is suspended or stopped, or they would take it past its budget (then it
    /// suspends); has them applied. False when none was taken.
    @inline(__always)
    private func takeFeedback(count: Int, _ append: (inout [Pending]) -> Void) -> Bool {
        let outcome = shared.withLock { shared -> EnqueueOutcome in
            guard shared.phase != .stopped, shared.suspension == nil else { return .dropped }
            guard shared.pendingFeedback + count <= feedbackBudget else {
                return .suspended(suspendLocked(&shared, .feedbackBudget(feedbackBudget)) ?? [])
            }
            append(&shared.pending)
            shared.pendingFeedback += count
            defer { shared.draining = true }
            return .queued(schedule: !shared.draining)
        }
        switch outcome {
        // Never at once: a feedback's or a Gear's event arrives on an effect's thread or
        // inside another loop's delivery (a Gear fans out synchronously), where applying
        // it would nest one loop's work in another's.
        case .queued(let schedule):
            if schedule { section.schedule { [self] in drain() } }
            return true
        case .dropped:
            return false
        case .suspended(let dropped):
            for pending in dropped { pending.onApplied?(nil) }
            return false
        }
    }

    /// The events of one Gear delivery to this loop, gathered by its receipt.
    final class CaughtBatch: CaughtEvents, @unchecked Sendable {
        // @unchecked: filled under the receipt's lock, read once by `enqueue`.
        private weak var loop: SpinLoop?
        private var pendings: [Pending] = []

        init(_ loop: SpinLoop) { self.loop = loop }

        func add(_ pending: Pending) { pendings.append(pending) }

        func enqueue() -> Bool { loop?.enqueue(batch: pendings) ?? false }
    }

    /// Has the pending events applied (`drain`), so that one pass applies what every
    /// request of a turn brought: on a thread that runs an event loop, at the end of its
    /// turn, in the section (at once when it is free, else by the thread in it). There,
    /// a loop whose home is another event loop that is busy is handed to it, with the
    /// rest of this turn's hand-offs to that loop, and applied at the end of the home's
    /// turn; an idle home is not woken for it (the thread at hand applies it, as it would
    /// for a loop without a home). Off event loops, on the loop's queue.
    func scheduleDrain() {
        guard section.inline, let turn = EndOfTurn.current else {
            return section.schedule { [self] in drain() }
        }
        turn.atEndOfTurn { [self] in
            guard let home, home !== turn, !home.isIdle else { return section.run { [self] in drain() } }
            home.enqueue { [self] in
                home.atEndOfTurn { [self] in section.run { [self] in drain() } }
            }
        }
    }

    /// Applies every pending event, including those added while it runs. In `section`.
    ///
    /// Events are taken in batches: one lock to take what is pending, then for each event
    /// reduce, observers, `onApplied` and feedbacks; the new states are published to
    /// `state` and `states` once per `publishEvery` events, before any `onApplied`, and at
    /// the end of the batch (one lock per chunk instead of one per event).
    ///
    /// An event a partial reducer declines is skipped: no sequence, no transition, no
    /// state. A client's batch is taken whole, so with a partial reducer it is reduced
    /// first (`Tally.lookAhead`) and its last applied event carries `endsBatch`.
    func drain() {
        var batch: [Pending] = []
        var published: [State] = []
        while true {
            let (observers, late, joiners, epoch) = shared.withLock { shared in
                let joiners = shared.joining
                shared.joining = []
                for joiner in joiners { shared.observers.append(Observer(id: joiner.id, handler: joiner.handler)) }
                if shared.phase == .stopped || shared.pending.isEmpty {
                    shared.draining = false
                } else {
                    swap(&batch, &shared.pending)
                    shared.pendingExternal = 0
                    shared.pendingFeedback = 0
                }
                return (shared.observers, shared.lateObservers, joiners, interruptions.load(ordering: .relaxed))
            }
            for joiner in joiners { joiner.snapshot(currentSequence, current) }
            if batch.isEmpty { return }
            // Asked once per batch: iterating even an empty generic array per event costs
            // a type look-up each time.
            let lateObservers = late.isEmpty ? nil : late
            var interrupted = false
            // Whether the event belongs to a client batch that gets a reply or spans
            // several events (only those are tallied: a feedback's event costs nothing).
            var tallied = false
            var talliedAny = false
            // Read once per drain, not per event (each read retains a closure or an array).
            let step = reducer.step
            let transitionRunners = transitionRunners.isEmpty ? nil : transitionRunners
            for index in batch.indices {
                let pending = batch[index]
                // A stop or a suspension since the batch was taken drops the rest of it,
                // never part of a client's batch (all or nothing).
                if pending.startsBatch, !interrupted, interruptions.load(ordering: .relaxed) != epoch {
                    interrupted = true
                    publish(&published)
                }
                if interrupted {
                    pending.onApplied?(nil)
                    continue
                }
                if pending.startsBatch {
                    tallied = pending.onApplied != nil || !pending.endsBatch
                    if tallied {
                        tally = Tally(start: index, detailed: pending.detailed)
                        lookingAhead = false
                        talliedAny = true
                    }
                }
                // Feedback semantics (SpinCore.docc, Feedbacks): an effect cancelled by a newer state since it
                // produced this event does not get it applied.
                if let isCurrent = pending.isCurrent, !isCurrent() { continue }
                // Counted per batch: a Gear delivery's events are applied all or none.
                guard !pending.startsBatch || isWithinBudget(external: pending.isExternal) else {
                    // Whoever reads "suspended" reads the state the loop stopped at.
                    publish(&published)
                    _ = suspend(.feedbackBudget(feedbackBudget))
                    continue
                }
                var endsBatch = pending.endsBatch
                let next: State
                // Whether `current` is already the new state.
                var steppedInPlace = false
                if let step, !tallied, transitionRunners == nil {
                    // Nobody needs the state the event leaves (no reply, no table effects):
                    // the step works on `current` itself, with no copy of it. Untallied,
                    // the event has no `onApplied` to tell of a decline.
                    guard step(&current, pending.event) else {
                        pending.receipt?.tell(.declined(sequence: currentSequence))
                        continue
                    }
                    next = current
                    steppedInPlace = true
                } else if let step {
                    var stepped = current
                    if tallied, pending.startsBatch, !pending.endsBatch, let partial = reducer.partial {
                        tally.lookAhead(batch, from: index, state: current, partial)
                        lookingAhead = true
                    }
                    let applies: Bool
                    if lookingAhead, let ahead = tally.reduced(at: index) {
                        if let state = ahead.state { stepped = state }
                        applies = ahead.state != nil
                        endsBatch = ahead.endsBatch
                    } else {
                        applies = step(&stepped, pending.event)
                    }
                    guard applies else {
                        pending.receipt?.tell(.declined(sequence: currentSequence))
                        if tallied { tally.decline(index, pending.event, state: current) }
                        if let onApplied = pending.onApplied {
                            publish(&published)
                            onApplied(tally.result(at: index, sequence: currentSequence, state: current))
                        }
                        continue
                    }
                    next = stepped
                } else {
                    // A plain reducer: no optional, no copy of the old state (the hot path).
                    next = reducer.reduce(current, pending.event)
                }
                let transition = Transition(event: pending.event, state: next, sequence: currentSequence + 1,
                                            endsBatch: endsBatch, origin: pending.origin, gearReceipt: pending.receipt)
                // Told while `current` is still the state the event left.
                if tallied { tally.apply(transition, from: current, isLastApplied: endsBatch && !pending.endsBatch) }
                if let transitionRunners {
                    for runner in transitionRunners { runner.applied(pending.event, from: current, to: next) }
                }
                if !steppedInPlace { current = next }
                currentSequence += 1
                // Before anyone sees the state, as the runaway guard stops the loop.
                if let suspendsAt, let reason = suspendsAt(next) { _ = suspend(.requested(reason)) }
                for observer in observers { observer.handler(transition) }
                pending.receipt?.tell(.applied(sequence: currentSequence))
                published.append(next)
                // Whoever is told "applied" must be able to read it back at once.
                if published.count == Self.publishEvery || pending.onApplied != nil { publish(&published) }
                if let onApplied = pending.onApplied {
                    onApplied(tally.result(at: index, sequence: currentSequence, state: next, last: transition))
                }
                if hasRunners {
                    delivery.cause = GearCause(sequence: currentSequence, fresh: true)
                    for runner in runners { runner.receive(next) }
                }
                if let lateObservers {
                    for observer in lateObservers { observer.handler(transition) }
                }
            }
            publish(&published)
            batch.removeAll(keepingCapacity: true)
            // No reply outlives its drain (the next batch's indices start again at 0).
            if talliedAny {
                tally = Tally()
                lookingAhead = false
            }
        }
    }

    /// `Tally.last`, boxed.
    final class Last {
        let transition: Transition<State, Event>
        init(_ transition: Transition<State, Event>) { self.transition = transition }
    }

    /// The replies of the client batch being applied. In `section`, inside `drain`.
    struct Tally {
        /// The batch's first index in the drained events.
        var start = 0
        /// Offsets of the declined events (empty, never allocated, while all apply).
        var declined: [Int] = []
        /// With a partial reducer and several events: each event's new state (nil:
        /// declined), reduced ahead, and the index of the last one that applies.
        var ahead: [State?] = []
        var lastApplied: Int?
        /// The transition of the batch's last applied event, once met, when that is not
        /// the batch's last event (its declined tail: rare). Out of line: every loop
        /// keeps a `Tally`, and a transition is 80 bytes.
        var last: Last?
        var details: [EventReply<State, Event>]?

        init() {}

        init(start: Int, detailed: Bool) {
            self.start = start
            self.details = detailed ? [] : nil
        }

        /// Reduces the whole batch that starts at `start`, so that the loop knows which
        /// of its events is the last one applied before it tells observers of the first.
        mutating func lookAhead(_ batch: [Pending], from start: Int, state: State,
                                _ partial: (State, Event) -> State?) {
            var state = state
            var index = start
            repeat {
                let next = partial(state, batch[index].event)
                ahead.append(next)
                if let next {
                    state = next
                    lastApplied = index
                }
                index += 1
            } while !batch[index - 1].endsBatch
        }

        /// The state reduced ahead for `index`, and whether it ends the batch; nil when
        /// the batch was not reduced ahead.
        func reduced(at index: Int) -> (state: State?, endsBatch: Bool)? {
            guard index >= start, index - start < ahead.count else { return nil }
            return (ahead[index - start], index == lastApplied)
        }

        mutating func decline(_ index: Int, _ event: Event, state: State) {
            declined.append(index - start)
            details?.append(.ignored(event, state: state))
        }

        mutating func apply(_ transition: Transition<State, Event>, from: State, isLastApplied: Bool) {
            if isLastApplied { last = Last(transition) }
            details?.append(.applied(from: from, transition))
        }

        func result(at index: Int, sequence: UInt64, state: State,
                    last: Transition<State, Event>? = nil) -> BatchResult<State, Event> {
            BatchResult(count: index - start + 1, declined: declined, lastApplied: last ?? self.last?.transition,
                        sequence: sequence, state: state, detailed: details)
        }
    }

    /// Counts the events of feedbacks and Gears applied in a row (an external event starts
    /// the count again); false for the one past the budget. In `section`.
    /// Takes a flag, not the `Pending`: passing that generic struct looks its type up.
    func isWithinBudget(external: Bool) -> Bool {
        if external {
            feedbackRun = 0
            return true
        }
        guard feedbackRun < feedbackBudget else { return false }
        feedbackRun += 1
        return true
    }

    /// How many applied states may wait before `state` and `states` get them.
    static var publishEvery: Int { 64 }

    /// Makes `current` the loop's `state` and hands `states` to every subscriber.
    func publish(_ states: inout [State]) {
        guard !states.isEmpty else { return }
        let (current, sequence) = (self.current, self.currentSequence)
        shared.withLock { shared in
            // After a stop the state is still kept true (it was applied); only the ended
            // `states` sequences get nothing more.
            shared.state = current
            shared.sequence = sequence
            for subscriber in shared.subscribers.values { subscriber.push(states) }
        }
        states.removeAll(keepingCapacity: true)
    }

    /// Makes `state` the loop's state at the next sequence, without an event of the Spin's:
    /// what a host does when it moves a Spin to a state of its past (a restore), which it
    /// records as a transition of its own. On the executor, after the events it is
    /// applying: `record` is told the new sequence first (observers see no transition:
    /// the host gives its own to whoever it observes for), then `state` and `states` show
    /// it and the feedbacks are given it as after any applied event, then `afterFeedbacks`
    /// runs. The runaway guard (`suspendingAt`) judges the state as it judges any. A loop
    /// that stopped or was suspended by then takes nothing: `record` is told nil.
    public func replaceState(
        with state: State,
        record: @escaping @Sendable (_ sequence: UInt64?) -> Void,
        afterFeedbacks: @escaping @Sendable () -> Void = {}
    ) {
        section.schedule { [self] in
            guard shared.withLock({ $0.phase != .stopped && $0.suspension == nil }) else { return record(nil) }
            current = state
            currentSequence += 1
            feedbackRun = 0
            if let suspendsAt, let reason = suspendsAt(state) { _ = suspend(.requested(reason)) }
            record(currentSequence)
            var states = [state]
            publish(&states)
            if hasRunners {
                delivery.cause = GearCause(sequence: currentSequence, fresh: true)
                for runner in runners { runner.receive(state) }
            }
            afterFeedbacks()
        }
    }

    /// Puts the loop back to an earlier state: what a host does when the events applied
    /// after it could not be stored. On the executor, after the events it is applying:
    /// `rollback` gives the state and its sequence (nil keeps the current ones); `state`
    /// and `states` show it, observers see no transition, and the feedbacks get it with
    /// the next state they are given. Then `done` runs, on the executor.
    public func restore(
        to rollback: @escaping @Sendable () -> (state: State, sequence: UInt64)?,
        then done: @escaping @Sendable () -> Void = {}
    ) {
        section.schedule { [self] in
            if let (state, sequence) = rollback() {
                current = state
                currentSequence = sequence
                var states = [state]
                publish(&states)
            }
            done()
        }
    }
}
