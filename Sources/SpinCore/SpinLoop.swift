import Dispatch
import Synchronization

/// A running Spin: made by `Spin.start()` (or `makeLoop()` then `start()`), it runs
/// until `stop()`.
///
/// Events reach the loop through `emit` (from any thread), through its feedbacks and
/// through Gears; they are applied one at a time, in the order they arrive, by the
/// reducer on the loop's executor (a serial `DispatchQueue`). After each event every
/// observer sees the `Transition` (a journal writes it there) and every feedback sees the
/// new state; `state` and every `states` sequence get the new states in small batches,
/// at the latest when the loop has applied every event it had.
///
/// A running loop keeps itself alive (as a started subscription does); `stop()` cancels
/// every effect, finishes every `states` sequence, detaches from Gears and drops every
/// reference the loop's machinery holds to it, so a stopped loop is deallocated once
/// its last user lets go.
///
/// **Runaway guard.** A feedback loop can fail to settle: two levels set far apart make
/// two feedbacks answer each other for as long as it takes. `feedbackBudget` bounds the
/// events feedbacks and Gears may have applied in a row without an external event (one
/// given to `emit`): the one past it is not applied and the loop **suspends**. The events
/// of feedbacks and Gears waiting to be applied are bounded by the budget too (one more
/// suspends the loop: it produces faster than it applies), so no event rate grows memory
/// without bound. A suspended loop applies nothing, holds no pending event (those waiting
/// were dropped; external batches among them get `onApplied(nil)`), refuses external
/// events (`EmitResult.suspended`) and drops what feedbacks and Gears produce, while its
/// `state`, `states` and observers stay as they are. Effects already running go on; what
/// they produce is dropped. `resume(applying:)` applies the given external events first
/// (the correction of a runaway), or else gives the current state to every feedback again
/// so that their effects start again, and goes on applying events. `suspend(reason:)`
/// suspends it on purpose (a host whose storage fails), the same way.
public final class SpinLoop<State: Sendable, Event: Sendable>: Sendable {
    private enum Phase { case prepared, running, stopped }

    /// The default `feedbackBudget`: at the hundreds of thousands of events per second a
    /// loop applies, well under a second of work without any external event, which no
    /// loop that settles quickly needs (a converging `levels` pair takes two events per
    /// step of the gap between them), and a few MB of events at most while it runs.
    public static var defaultFeedbackBudget: Int { 100_000 }

    /// What a client batch's last event calls once the batch is applied (nil: dropped).
    private typealias Completion = @Sendable (BatchResult<State, Event>?) -> Void

    private struct Pending: Sendable {
        var event: Event
        var onApplied: Completion?
        /// False for the second and later events of an `emit(contentsOf:)` batch: a stop
        /// takes effect between batches, never inside one (all or nothing).
        var startsBatch = true
        /// False for every event of an `emit(contentsOf:)` batch but its last.
        var endsBatch = true
        /// On a batch's first event: collect `EventReply`s for its completion.
        var detailed = false
        /// For events of effects that a newer state cancels: still valid? Checked on the
        /// executor right before reducing, where states are delivered, so it is exact.
        var isCurrent: (@Sendable () -> Bool)?
        /// True for events given to `emit` (a client's), false for those of feedbacks
        /// and Gears, which the feedback budget counts.
        var isExternal: Bool
    }

    /// Everything shared between `emit`/`state`/`states`/`stop` callers and the executor.
    private struct Shared {
        var phase: Phase = .prepared
        var pending: [Pending] = []
        /// How many events in `pending` are external (what `emit`'s `limit` bounds) and
        /// how many come from feedbacks and Gears (what the budget bounds).
        var pendingExternal = 0
        var pendingFeedback = 0
        /// Set while suspended.
        var suspension: Suspension.Reason?
        var suspensionHandlers: [(id: UInt64, handler: @Sendable (Suspension?) -> Void)] = []
        /// True while a drain is scheduled or running (and while prepared), so that
        /// `emit` schedules at most one drain at a time.
        var draining = true
        var state: State
        var sequence: UInt64
        var nextID: UInt64 = 0
        var subscribers: [UInt64: StateChannel<State>] = [:]
        var observers: [(id: UInt64, handler: @Sendable (Transition<State, Event>) -> Void)] = []
        /// Observers waiting for the executor to give them their first snapshot.
        var joining: [Joiner] = []
    }

    private enum EnqueueOutcome { case queued(schedule: Bool), dropped, suspended([Pending]) }

    private enum Registration { case stopped(UInt64, State), joined(UInt64, schedule: Bool) }

    private struct Joiner: Sendable {
        var id: UInt64
        var handler: @Sendable (Transition<State, Event>) -> Void
        var snapshot: @Sendable (UInt64, State) -> Void
    }

    /// The loop's executor: the reducer, observers and feedback delivery run here.
    public let queue: DispatchQueue
    /// The name the loop was made with (a hosted Spin's name), given to Gears as source.
    public let label: String?

    /// The most events feedbacks and Gears may have applied in a row without an external
    /// event, and the most of theirs that may wait to be applied; past either the loop
    /// suspends.
    public let feedbackBudget: Int

    private let shared: Protected<Shared>
    /// Bumped (under the lock) by `stop()` and by every suspension; the executor reads it
    /// before each event that starts a batch and drops the rest of a batch it took before.
    private let interruptions = Atomic<UInt64>(0)
    private let reducer: Reducer<State, Event>
    private let runners: [any FeedbackRunner<State>]
    /// The runners that also hear each applied event (a transition table's effects).
    private let transitionRunners: [any TransitionRunner<State, Event>]
    private let relay: Relay<State, Event>
    /// The state as the executor last made it; only touched on `queue`.
    /// Unchecked exclusivity: only the executor touches it, and the loop's step borrows
    /// it `inout` per event.
    @exclusivity(unchecked) nonisolated(unsafe) private var current: State
    nonisolated(unsafe) private var currentSequence: UInt64
    /// Events of feedbacks and Gears applied since the last external one; only on `queue`.
    nonisolated(unsafe) private var feedbackRun = 0
    /// The replies of the client batch `drain` is applying; only on `queue`. A property,
    /// not a local of `drain`: a generic local costs every drain, even one without a batch.
    nonisolated(unsafe) private var tally = Tally()
    /// Whether `tally` holds states reduced ahead; only on `queue`. A flag of its own: the
    /// loop is not specialised for `State`, and asking the generic `tally.ahead` whether
    /// it is empty looks up the type `[State?]` for every event.
    nonisolated(unsafe) private var lookingAhead = false
    /// Whether the feedbacks have been given the current state since the loop started or
    /// was last suspended (so that `start` and `resume` give it exactly once); on `queue`.
    nonisolated(unsafe) private var feedbacksHaveState = false

    init(spin: Spin<State, Event>, label: String?, sequence: UInt64, feedbackBudget: Int) {
        precondition(feedbackBudget > 0, "a feedback budget must be positive")
        self.queue = spin.executor ?? DispatchQueue(label: "spin.loop.\(label ?? String(describing: State.self))")
        self.label = label
        self.feedbackBudget = feedbackBudget
        self.reducer = spin.reducer
        self.current = spin.initialState
        self.currentSequence = sequence
        self.shared = Protected(Shared(state: spin.initialState, sequence: sequence))
        let relay = Relay<State, Event>()
        self.relay = relay
        let host = FeedbackHost<Event>(label: label, runsInline: false) { event, isCurrent in
            relay.loop?.enqueue(Pending(event: event, onApplied: nil, isCurrent: isCurrent, isExternal: false))
        }
        self.runners = spin.feedbacks.enumerated().map { index, feedback in
            feedback.makeRunner(FeedbackContext(host: host, index: index, executor: feedback.executor))
        }
        self.transitionRunners = runners.compactMap { $0 as? any TransitionRunner<State, Event> }
        relay.loop = self
        // Gear subscriptions and raw streams open before any state is delivered.
        for runner in runners { runner.start() }
    }

    // MARK: Running

    /// Delivers the initial state to the feedbacks and starts applying events (those
    /// emitted since `makeLoop()` first). Does nothing if already started or stopped.
    public func start() {
        let starts = shared.withLock { shared -> Bool in
            guard shared.phase == .prepared else { return false }
            shared.phase = .running
            return true
        }
        guard starts else { return }
        queue.async { [self] in
            giveFeedbacksTheStateIfSuspensionAllows()
            drain()
        }
    }

    /// Sends an event into the loop. It is applied after every event that reached the
    /// loop before it. Refused (and dropped) while the loop is suspended or stopped.
    @discardableResult
    public func emit(_ event: Event) -> EmitResult {
        accept(count: 1, { _ in event }, limit: .max, onApplied: nil)
    }

    /// Sends events into the loop as one batch: they are applied in order, one after the
    /// other, or not at all.
    ///
    /// - Parameters:
    ///   - limit: the batch is refused (nothing is enqueued) when the external events
    ///     waiting to be applied plus this batch would exceed it. A host uses it to bound
    ///     inboxes (the events of feedbacks and Gears are bounded by `feedbackBudget`).
    ///   - onApplied: called on the loop's executor with the transition of the last
    ///     event the batch applied, or with nil if the loop stopped or suspended before
    ///     (or a partial reducer declined every event: `emit(batch:...)` tells them apart).
    /// - Returns: `.accepted`, or why nothing was enqueued.
    @discardableResult
    public func emit(
        contentsOf events: [Event],
        limit: Int = .max,
        onApplied: (@Sendable (Transition<State, Event>?) -> Void)? = nil
    ) -> EmitResult {
        accept(count: events.count, { events[$0] }, limit: limit, onApplied: Self.lastApplied(onApplied))
    }

    /// Sends events into the loop as one batch, like `emit(contentsOf:limit:onApplied:)`,
    /// and answers with one reply per event: `onResult` gets, on the loop's executor,
    /// which events the reducer applied and which it declined (a partial reducer), with
    /// the sequence and state after the batch; or nil if the loop stopped or suspended
    /// before applying it.
    /// - Parameter detailedReplies: also collect Harvest-style replies with the states
    ///   before and after each event (`BatchResult.detailed`); that costs one entry per
    ///   event, so it is off by default.
    @discardableResult
    public func emit(
        batch events: [Event],
        limit: Int = .max,
        detailedReplies: Bool = false,
        onResult: @escaping @Sendable (BatchResult<State, Event>?) -> Void
    ) -> EmitResult {
        accept(count: events.count, { events[$0] }, limit: limit, onApplied: onResult, detailed: detailedReplies)
    }

    /// Adapts a completion that only wants the last applied transition.
    private static func lastApplied(_ onApplied: (@Sendable (Transition<State, Event>?) -> Void)?) -> Completion? {
        guard let onApplied else { return nil }
        return { (result: BatchResult<State, Event>?) in onApplied(result?.lastApplied) }
    }

    /// `count` events, the one at each offset given by `event`. Not generic over a
    /// collection: that cost a run-time metadata look-up per `emit` (the loop's `Event` is
    /// generic), and an array per single event a heap allocation; both showed in the
    /// loop's rate (spin-core-benchmark).
    private func accept(
        count: Int, _ event: (Int) -> Event, limit: Int, onApplied: Completion?, detailed: Bool = false
    ) -> EmitResult {
        guard count > 0 else { return .empty }
        let outcome = shared.withLock { shared -> (EmitResult, schedule: Bool) in
            guard shared.phase != .stopped else { return (.stopped, false) }
            guard shared.suspension == nil else { return (.suspended, false) }
            guard shared.pendingExternal <= limit - count else { return (.inboxFull, false) }
            for offset in 0..<count {
                let last = offset == count - 1
                shared.pending.append(Pending(event: event(offset), onApplied: last ? onApplied : nil,
                                              startsBatch: offset == 0, endsBatch: last,
                                              detailed: detailed && offset == 0, isExternal: true))
            }
            shared.pendingExternal += count
            defer { shared.draining = true }
            return (.accepted, !shared.draining)
        }
        if outcome.schedule { queue.async { [self] in drain() } }
        return outcome.0
    }

    // MARK: Suspending

    /// Suspends the loop (see the runaway guard above) until `resume()`. Returns false
    /// if it is already suspended or stopped.
    @discardableResult
    public func suspend(reason: String) -> Bool {
        suspend(.requested(reason))
    }

    /// Runs a suspended loop again, the feedback count starting from zero.
    ///
    /// - Parameters:
    ///   - events: external events applied first, as one batch, before anything the
    ///     feedbacks produce: the correction of a runaway (a `set`) gets in before the
    ///     runaway can spend its budget again. With none, the current state goes to every
    ///     feedback again, so that their effects start again; with some, the feedbacks
    ///     get the states those events make.
    ///   - onApplied: as for `emit(contentsOf:)`.
    /// - Returns: false if the loop was not suspended (or is stopped): nothing is enqueued.
    @discardableResult
    public func resume(
        applying events: [Event] = [], onApplied: (@Sendable (Transition<State, Event>?) -> Void)? = nil
    ) -> Bool {
        resume(events, onApplied: Self.lastApplied(onApplied))
    }

    /// `resume(applying:onApplied:)` with the replies of `emit(batch:...)`: `onResult`
    /// gets the batch's result, or nil if the loop stopped or suspended again first.
    @discardableResult
    public func resume(
        applyingBatch events: [Event], onResult: @escaping @Sendable (BatchResult<State, Event>?) -> Void
    ) -> Bool {
        resume(events, onApplied: onResult)
    }

    private func resume(_ events: [Event], onApplied: Completion?) -> Bool {
        shared.withLock { shared -> Bool in
            guard shared.phase != .stopped, shared.suspension != nil else { return false }
            shared.suspension = nil
            for (offset, event) in events.enumerated() {
                let last = offset == events.count - 1
                shared.pending.append(Pending(event: event, onApplied: last ? onApplied : nil,
                                              startsBatch: offset == 0, endsBatch: last, isExternal: true))
            }
            shared.pendingExternal += events.count
            // Queued under the lock, so that it runs after the suspension's own block.
            queue.async { [self] in
                // Before `start()`, start gives the state; nothing is applied before it.
                guard self.shared.withLock({ $0.phase == .running }) else { return }
                for entry in self.shared.withLock({ $0.suspensionHandlers }) { entry.handler(nil) }
                feedbackRun = 0
                if events.isEmpty {
                    giveFeedbacksTheStateIfSuspensionAllows()
                } else {
                    feedbacksHaveState = true
                }
                drain()
            }
            return true
        }
    }

    /// True from the moment the loop suspends. A suspension by the budget publishes the
    /// state it stopped at first; after `suspend(reason:)` (or too many pending feedback
    /// events) `state` may still catch up with the events the executor was applying, up to
    /// the end of that batch; `onSuspensionChange` gets the final sequence.
    public var isSuspended: Bool {
        shared.withLock { $0.suspension != nil }
    }

    /// Why the loop is suspended and at which sequence, or nil while it is not.
    public var suspension: Suspension? {
        shared.withLock { shared in shared.suspension.map { Suspension(reason: $0, sequence: shared.sequence) } }
    }

    /// Calls `handler` on the loop's executor once per suspension, with the sequence the
    /// loop holds once the suspension took effect, and with nil once per `resume()` of a
    /// started loop, before the feedbacks get the state again. Cancel the subscription
    /// to detach.
    public func onSuspensionChange(_ handler: @escaping @Sendable (Suspension?) -> Void) -> SpinSubscription {
        let id = shared.withLock { shared -> UInt64 in
            shared.nextID += 1
            shared.suspensionHandlers.append((shared.nextID, handler))
            return shared.nextID
        }
        return SpinSubscription { [weak self] in
            self?.shared.withLock { $0.suspensionHandlers.removeAll { $0.id == id } }
        }
    }

    private func suspend(_ reason: Suspension.Reason) -> Bool {
        let dropped = shared.withLock { shared in suspendLocked(&shared, reason) }
        guard let dropped else { return false }
        for pending in dropped { pending.onApplied?(nil) }
        return true
    }

    /// Marks the loop suspended and takes every pending event out (the caller gives the
    /// external batches among them `onApplied(nil)` outside the lock); nil when it is
    /// already suspended or stopped.
    private func suspendLocked(_ shared: inout Shared, _ reason: Suspension.Reason) -> [Pending]? {
        guard shared.phase != .stopped, shared.suspension == nil else { return nil }
        shared.suspension = reason
        interruptions.add(1, ordering: .relaxed)
        let dropped = shared.pending
        shared.pending = []
        shared.pendingExternal = 0
        shared.pendingFeedback = 0
        // Queued under the lock, so that a `resume()` right after runs after it.
        queue.async { [self] in announce(reason) }
        return dropped
    }

    /// On `queue`, after the batch the executor was applying: tells the handlers.
    private func announce(_ reason: Suspension.Reason) {
        feedbacksHaveState = false
        let handlers = shared.withLock { $0.suspensionHandlers }
        let suspension = Suspension(reason: reason, sequence: currentSequence)
        for entry in handlers { entry.handler(suspension) }
    }

    /// On `queue`: gives the current state to every feedback, unless a suspension holds
    /// the loop or they have it already.
    private func giveFeedbacksTheStateIfSuspensionAllows() {
        let gives = shared.withLock { $0.phase == .running && $0.suspension == nil }
        guard gives, !feedbacksHaveState else { return }
        feedbacksHaveState = true
        for runner in runners { runner.receive(current) }
    }

    /// Stops the loop: cancels every effect, finishes every `states` sequence, detaches
    /// from Gears and drops pending events (their `onApplied` get nil). Idempotent; may
    /// be called from any thread, the loop's executor included.
    public func stop() {
        let (subscribers, dropped, joiners, last) = shared.withLock { shared in
            guard shared.phase != .stopped else { return ([StateChannel<State>](), [Pending](), [Joiner](), (shared.sequence, shared.state)) }
            shared.phase = .stopped
            interruptions.add(1, ordering: .relaxed)
            defer {
                shared.subscribers = [:]
                shared.pending = []
                shared.pendingExternal = 0
                shared.pendingFeedback = 0
                shared.observers = []
                shared.joining = []
                shared.suspensionHandlers = []
            }
            return (Array(shared.subscribers.values), shared.pending, shared.joining, (shared.sequence, shared.state))
        }
        relay.loop = nil
        for runner in runners { runner.stop() }
        for subscriber in subscribers { subscriber.finish() }
        for pending in dropped { pending.onApplied?(nil) }
        for joiner in joiners { joiner.snapshot(last.0, last.1) }
    }

    // MARK: Reading

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

    /// Like `observe(_:)`, but first gives `snapshot` the sequence and state the handler's
    /// transitions start from, read on the executor: no transition is missed or seen
    /// twice between the snapshot and the handler (a stream sends exactly this).
    /// Both are called on the loop's executor; for a stopped loop, `snapshot` is called
    /// at once with the last state and the handler never.
    public func observe(
        startingWith snapshot: @escaping @Sendable (_ sequence: UInt64, _ state: State) -> Void,
        _ handler: @escaping @Sendable (Transition<State, Event>) -> Void
    ) -> SpinSubscription {
        let registration = shared.withLock { shared -> Registration in
            guard shared.phase != .stopped else { return .stopped(shared.sequence, shared.state) }
            shared.nextID += 1
            shared.joining.append(Joiner(id: shared.nextID, handler: handler, snapshot: snapshot))
            let schedule = !shared.draining
            shared.draining = true
            return .joined(shared.nextID, schedule: schedule)
        }
        switch registration {
        case .stopped(let sequence, let state):
            snapshot(sequence, state)
            return SpinSubscription {}
        case .joined(let id, let schedule):
            if schedule { queue.async { [self] in drain() } }
            return SpinSubscription { [weak self] in
                self?.shared.withLock { shared in
                    shared.observers.removeAll { $0.id == id }
                    shared.joining.removeAll { $0.id == id }
                }
            }
        }
    }

    // MARK: Executor side

    /// Takes an event of a feedback or Gear: dropped while suspended or stopped; one more
    /// than the budget waiting suspends the loop.
    private func enqueue(_ pending: Pending) {
        let outcome = shared.withLock { shared -> EnqueueOutcome in
            guard shared.phase != .stopped, shared.suspension == nil else { return .dropped }
            guard shared.pendingFeedback < feedbackBudget else {
                return .suspended(suspendLocked(&shared, .feedbackBudget(feedbackBudget)) ?? [])
            }
            shared.pending.append(pending)
            shared.pendingFeedback += 1
            defer { shared.draining = true }
            return .queued(schedule: !shared.draining)
        }
        switch outcome {
        case .queued(let schedule): if schedule { queue.async { [self] in drain() } }
        case .dropped: break
        case .suspended(let dropped): for pending in dropped { pending.onApplied?(nil) }
        }
    }

    /// Applies every pending event, including those added while it runs. On `queue`.
    ///
    /// Events are taken in batches: one lock to take what is pending, then for each event
    /// reduce, observers, `onApplied` and feedbacks; the new states are published to
    /// `state` and `states` once per `publishEvery` events, before any `onApplied`, and at
    /// the end of the batch (one lock per chunk instead of one per event).
    ///
    /// An event a partial reducer declines is skipped: no sequence, no transition, no
    /// state. A client's batch is taken whole, so with a partial reducer it is reduced
    /// first (`Tally.lookAhead`) and its last applied event carries `endsBatch`.
    private func drain() {
        var batch: [Pending] = []
        var published: [State] = []
        while true {
            let (observers, joiners, epoch) = shared.withLock { shared in
                let joiners = shared.joining
                shared.joining = []
                shared.observers += joiners.map { ($0.id, $0.handler) }
                if shared.phase == .stopped || shared.pending.isEmpty {
                    shared.draining = false
                } else {
                    swap(&batch, &shared.pending)
                    shared.pendingExternal = 0
                    shared.pendingFeedback = 0
                }
                return (shared.observers, joiners, interruptions.load(ordering: .relaxed))
            }
            for joiner in joiners { joiner.snapshot(currentSequence, current) }
            if batch.isEmpty { return }
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
                guard isWithinBudget(external: pending.isExternal) else {
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
                    guard step(&current, pending.event) else { continue }
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
                                            endsBatch: endsBatch)
                // Told while `current` is still the state the event left.
                if tallied { tally.apply(transition, from: current, isLastApplied: endsBatch && !pending.endsBatch) }
                if let transitionRunners {
                    for runner in transitionRunners { runner.applied(pending.event, from: current, to: next) }
                }
                if !steppedInPlace { current = next }
                currentSequence += 1
                for observer in observers { observer.handler(transition) }
                published.append(next)
                // Whoever is told "applied" must be able to read it back at once.
                if published.count == Self.publishEvery || pending.onApplied != nil { publish(&published) }
                if let onApplied = pending.onApplied {
                    onApplied(tally.result(at: index, sequence: currentSequence, state: next, last: transition))
                }
                for runner in runners { runner.receive(next) }
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

    /// The replies of the client batch being applied. On `queue`, inside `drain`.
    private struct Tally {
        /// The batch's first index in the drained events.
        var start = 0
        /// Offsets of the declined events (empty, never allocated, while all apply).
        var declined: [Int] = []
        /// With a partial reducer and several events: each event's new state (nil:
        /// declined), reduced ahead, and the index of the last one that applies.
        var ahead: [State?] = []
        var lastApplied: Int?
        /// The transition of the batch's last applied event, once met.
        var last: Transition<State, Event>?
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
            if isLastApplied { last = transition }
            details?.append(.applied(from: from, transition))
        }

        func result(at index: Int, sequence: UInt64, state: State,
                    last: Transition<State, Event>? = nil) -> BatchResult<State, Event> {
            BatchResult(count: index - start + 1, declined: declined, lastApplied: last ?? self.last,
                        sequence: sequence, state: state, detailed: details)
        }
    }

    /// Counts the events of feedbacks and Gears applied in a row (an external event starts
    /// the count again); false for the one past the budget. On `queue`.
    /// Takes a flag, not the `Pending`: passing that generic struct looks its type up.
    private func isWithinBudget(external: Bool) -> Bool {
        if external {
            feedbackRun = 0
            return true
        }
        guard feedbackRun < feedbackBudget else { return false }
        feedbackRun += 1
        return true
    }

    /// How many applied states may wait before `state` and `states` get them.
    private static var publishEvery: Int { 64 }

    /// Makes `current` the loop's `state` and hands `states` to every subscriber.
    private func publish(_ states: inout [State]) {
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
}

/// Holds a loop for its feedbacks until the loop stops: effects reach the loop through
/// it, so a stopped loop is not kept alive by an effect still finishing.
private final class Relay<State: Sendable, Event: Sendable>: Sendable {
    private let target = Protected<SpinLoop<State, Event>?>(nil)

    var loop: SpinLoop<State, Event>? {
        get { target.withLock { $0 } }
        set { target.withLock { $0 = newValue } }
    }
}

extension SpinLoop {
    /// Puts the loop back to an earlier state: what a host does when the events applied
    /// after it could not be stored. On the executor, after the events it is applying:
    /// `rollback` gives the state and its sequence (nil keeps the current ones); `state`
    /// and `states` show it, observers see no transition, and the feedbacks get it with
    /// the next state they are given. Then `done` runs, on the executor.
    public func restore(
        to rollback: @escaping @Sendable () -> (state: State, sequence: UInt64)?,
        then done: @escaping @Sendable () -> Void = {}
    ) {
        queue.async { [self] in
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
