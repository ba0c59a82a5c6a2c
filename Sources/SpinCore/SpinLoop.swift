import Dispatch
import Synchronization
import SpinConcurrency

/// A running Spin: made by `Spin.start()` (or `makeLoop()` then `start()`), it runs
/// until `stop()`.
///
/// Events reach the loop through `emit` (from any thread), through its feedbacks and
/// through Gears; they are applied one at a time, in the order they arrive, by the
/// reducer on the loop's executor. After each event every observer sees the `Transition`
/// (a journal writes it there) and every feedback sees the new state; `state` and every
/// `states` sequence get the new states in small batches, at the latest when the loop
/// has applied every event it had.
///
/// **The executor** is the loop's serial section (`SerialSection`): its work runs one
/// piece at a time, in order, never two at once, as on a serial queue. Where it runs:
/// events emitted on a thread that runs an event loop (`EndOfTurn`: the server's network
/// threads) are applied at the end of a turn, every event the turn's requests brought in
/// one pass, by the loop's **home** while it is busy: one of the process's event loops,
/// given to each loop in turn as it is made (`EndOfTurn.nextHome()`). Events emitted on
/// the home's thread are applied at the end of its own turn, with no other thread woken;
/// another event loop hands them over once per turn, with the rest of what its turn
/// hands to the home, and the home applies them at the end of its current turn. So on
/// busy loops a Spin's work stays on one thread and no two network threads contend for
/// it. A home that is idle is not woken for them: the thread at hand applies them. (In
/// the section: when the thread in it is another, that one applies them.) Everything
/// else (events emitted elsewhere,
/// those of feedbacks and Gears, a start, a resume, a restore) runs on the loop's
/// `queue`, as does everything of a loop given an executor of its own (`executeOn:`).
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
    enum Phase { case prepared, running, stopped }

    /// The default `feedbackBudget`: at the hundreds of thousands of events per second a
    /// loop applies, well under a second of work without any external event, which no
    /// loop that settles quickly needs (a converging `levels` pair takes two events per
    /// step of the gap between them), and a few MB of events at most while it runs.
    public static var defaultFeedbackBudget: Int { 100_000 }

    /// What a client batch's last event calls once the batch is applied (nil: dropped).
    typealias Completion = @Sendable (BatchResult<State, Event>?) -> Void

    struct Pending: Sendable {
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
        /// Who sent the event (`Transition.origin`).
        var origin: String? = nil
        /// For an event a host delivered from a routed Gear: its receipt
        /// (`Transition.gearReceipt`), told whether the event applied or was declined.
        var receipt: GearReceipt? = nil
    }

    /// Everything shared between `emit`/`state`/`states`/`stop` callers and the executor.
    struct Shared {
        var phase: Phase = .prepared
        var pending: [Pending] = []
        /// How many events in `pending` are external (what `emit`'s `limit` bounds) and
        /// how many come from feedbacks and Gears (what the budget bounds).
        var pendingExternal = 0
        var pendingFeedback = 0
        /// Set while suspended.
        var suspension: Suspension.Reason?
        var suspensionHandlers: [SuspensionHandler] = []
        /// True while a drain is scheduled or running (and while prepared), so that
        /// `emit` schedules at most one drain at a time.
        var draining = true
        var state: State
        var sequence: UInt64
        var nextID: UInt64 = 0
        var subscribers: [UInt64: StateChannel<State>] = [:]
        var observers: [Observer] = []
        /// Observers called after the feedbacks were given the transition's state
        /// (`observeAfterFeedbacks`).
        var lateObservers: [Observer] = []
        /// Observers waiting for the executor to give them their first snapshot.
        var joining: [Joiner] = []
    }

    enum EnqueueOutcome { case queued(schedule: Bool), dropped, suspended([Pending]) }

    enum Registration { case stopped(UInt64, State), joined(UInt64, schedule: Bool) }

    /// An observer, registered as `id`. Structs, not tuples, in the lists: a closure kept
    /// in a tuple of a generic array is wrapped in a thunk (one more allocation per
    /// observer of every loop).
    struct Observer: Sendable {
        var id: UInt64
        var handler: @Sendable (Transition<State, Event>) -> Void
    }

    struct SuspensionHandler: Sendable {
        var id: UInt64
        var handler: @Sendable (Suspension?) -> Void
    }

    struct Joiner: Sendable {
        var id: UInt64
        var handler: @Sendable (Transition<State, Event>) -> Void
        var snapshot: @Sendable (UInt64, State) -> Void
    }

    /// Where the loop's work runs when no event loop's thread runs it (see "The
    /// executor"); everything, for a loop given `executeOn:`.
    public let queue: DispatchQueue
    /// The loop's executor: the reducer, observers and feedback delivery run in it, one
    /// piece of work at a time.
    let section: SerialSection
    /// The event loop whose thread applies what network threads emit (see "The
    /// executor"); nil without event loops in the process, or with an executor of its own.
    let home: (any TurnScheduler)?
    /// The name the loop was made with (a hosted Spin's name), given to Gears as source.
    public let label: String?

    /// The most events feedbacks and Gears may have applied in a row without an external
    /// event, and the most of theirs that may wait to be applied; past either the loop
    /// suspends.
    public let feedbackBudget: Int

    let shared: Protected<Shared>
    /// Bumped (under the lock) by `stop()` and by every suspension; the executor reads it
    /// before each event that starts a batch and drops the rest of a batch it took before.
    let interruptions = Atomic<UInt64>(0)
    let reducer: Reducer<State, Event>
    /// A state the loop must stop at (`Spin.makeLoop(...suspendingAt:)`); nil for most.
    let suspendsAt: (@Sendable (State) -> String?)?
    let runners: [any FeedbackRunner<State>]
    /// `!runners.isEmpty`, once: asking the array of existentials per event looks its
    /// type up every time.
    let hasRunners: Bool
    /// The runners that also hear each applied event (a transition table's effects).
    let transitionRunners: [any TransitionRunner<State, Event>]
    let handle: LoopHandle<State, Event>
    /// Which state the feedbacks are being given (`FeedbackHost.delivery`); set in `section`.
    let delivery = StateDelivery()
    /// The state as the executor last made it; only touched in `section`.
    /// Unchecked exclusivity: only the executor touches it, and the loop's step borrows
    /// it `inout` per event.
    @exclusivity(unchecked) nonisolated(unsafe) var current: State
    nonisolated(unsafe) var currentSequence: UInt64
    /// Events of feedbacks and Gears applied since the last external one; only in `section`.
    nonisolated(unsafe) var feedbackRun = 0
    /// The replies of the client batch `drain` is applying; only in `section`. A property,
    /// not a local of `drain`: a generic local costs every drain, even one without a batch.
    nonisolated(unsafe) var tally = Tally()
    /// Whether `tally` holds states reduced ahead; only in `section`. A flag of its own: the
    /// loop is not specialised for `State`, and asking the generic `tally.ahead` whether
    /// it is empty looks up the type `[State?]` for every event.
    nonisolated(unsafe) var lookingAhead = false
    /// Whether the feedbacks have been given the current state since the loop started or
    /// was last suspended (so that `start` and `resume` give it exactly once); in `section`.
    nonisolated(unsafe) var feedbacksHaveState = false

    /// - Parameter home: the event loop that applies what network threads emit; by
    ///   default the process's next (`EndOfTurn.nextHome()`), none with an executor.
    init(spin: Spin<State, Event>, label: String?, sequence: UInt64, feedbackBudget: Int,
         suspendsAt: (@Sendable (State) -> String?)? = nil, home: (any TurnScheduler)?? = nil) {
        precondition(feedbackBudget > 0, "a feedback budget must be positive")
        let queue = spin.executor ?? DispatchQueue(label: "spin.loop.\(label ?? String(describing: State.self))")
        self.queue = queue
        self.section = SerialSection(queue: queue, inline: spin.executor == nil)
        self.home = spin.executor == nil ? home ?? EndOfTurn.nextHome() : nil
        self.label = label
        self.feedbackBudget = feedbackBudget
        self.reducer = spin.reducer
        self.suspendsAt = suspendsAt
        self.current = spin.initialState
        self.currentSequence = sequence
        self.shared = Protected(Shared(state: spin.initialState, sequence: sequence))
        let handle = LoopHandle<State, Event>()
        self.handle = handle
        let host = FeedbackHost<Event>(
            label: label, runsInline: false, delivery: delivery,
            submitCaught: { event, receipt in
                guard let loop = handle.loop else { return false }
                let pending = Pending(event: event, onApplied: nil, isExternal: false, receipt: receipt)
                guard let receipt, receipt.isCollecting else { return loop.enqueue(pending) }
                receipt.collect(in: ObjectIdentifier(loop), make: { CaughtBatch(loop) }) { $0.add(pending) }
                return true
            }
        ) { event, isCurrent in
            handle.loop?.enqueue(Pending(event: event, onApplied: nil, isCurrent: isCurrent, isExternal: false))
        }
        self.runners = spin.feedbacks.enumerated().map { index, feedback in
            feedback.makeRunner(FeedbackContext(host: host, index: index, executor: feedback.executor))
        }
        self.transitionRunners = runners.compactMap { $0 as? any TransitionRunner<State, Event> }
        self.hasRunners = !runners.isEmpty
        handle.loop = self
        // Gear subscriptions and raw streams open before any state is delivered (lifted
        // feedbacks make their children's runs from the initial state for that).
        for runner in runners { runner.start(initial: spin.initialState) }
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
        section.schedule { [self] in
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
    ///   - events: the batch, in the order it is applied.
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
    /// - Parameters:
    ///   - events: the batch, in the order it is applied.
    ///   - limit: as for `emit(contentsOf:limit:onApplied:)`: the batch is refused when
    ///     the external events waiting plus this batch would exceed it.
    ///   - detailedReplies: also collect Harvest-style replies with the states before and
    ///     after each event (`BatchResult.detailed`); that costs one entry per event, so
    ///     it is off by default.
    ///   - origin: who sent the events; each transition they make carries it
    ///     (`Transition.origin`).
    ///   - onResult: the batch's replies, or nil if it was not applied.
    /// - Returns: `.accepted`, or why nothing was enqueued.
    @discardableResult
    public func emit(
        batch events: [Event],
        limit: Int = .max,
        detailedReplies: Bool = false,
        origin: String? = nil,
        onResult: @escaping @Sendable (BatchResult<State, Event>?) -> Void
    ) -> EmitResult {
        accept(count: events.count, { events[$0] }, limit: limit, onApplied: onResult, detailed: detailedReplies,
               origin: origin)
    }

    /// Adapts a completion that only wants the last applied transition.
    static func lastApplied(_ onApplied: (@Sendable (Transition<State, Event>?) -> Void)?) -> Completion? {
        guard let onApplied else { return nil }
        return { (result: BatchResult<State, Event>?) in onApplied(result?.lastApplied) }
    }

    /// `count` events, the one at each offset given by `event`. Not generic over a
    /// collection: that cost a run-time metadata look-up per `emit` (the loop's `Event` is
    /// generic), and an array per single event a heap allocation; both showed in the
    /// loop's rate (spin-core-benchmark).
    func accept(
        count: Int, _ event: (Int) -> Event, limit: Int, onApplied: Completion?, detailed: Bool = false,
        origin: String? = nil
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
                                              detailed: detailed && offset == 0, isExternal: true, origin: origin))
            }
            shared.pendingExternal += count
            defer { shared.draining = true }
            return (.accepted, !shared.draining)
        }
        if outcome.schedule { scheduleDrain() }
        return outcome.0
    }


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
                shared.lateObservers = []
                shared.joining = []
                shared.suspensionHandlers = []
            }
            return (Array(shared.subscribers.values), shared.pending, shared.joining, (shared.sequence, shared.state))
        }
        handle.loop = nil
        for runner in runners { runner.stop() }
        for subscriber in subscribers { subscriber.finish() }
        for pending in dropped { pending.onApplied?(nil) }
        for joiner in joiners { joiner.snapshot(last.0, last.1) }
    }

    /// Stops the loop (`stop()`) and returns once its executor is done with what it was
    /// applying. `stop()` takes effect between client batches and does not wait: a batch
    /// the executor had begun is still applied whole, its observers and `onApplied`
    /// called, after `stop()` returned. After this call every event the loop ever
    /// accepted has been applied (observers saw it, `onApplied` got it) or dropped
    /// (`onApplied(nil)`), and no observer is called again: a host can then make durable
    /// what was applied and send on what was not. Blocks: never call it on the loop's
    /// executor (from a reducer, an observer or a feedback's delivery).
    package func stopAndWait() {
        stop()
        section.sync {}
    }
}

/// The loop as its feedbacks hold it: their effects reach the loop through this handle,
/// which lets go of the loop when it stops, so a stopped loop is not kept alive by an
/// effect still finishing. A reference to the lock's one object: copies share the loop
/// they hold.
struct LoopHandle<State: Sendable, Event: Sendable>: Sendable {
    private let target = Protected<SpinLoop<State, Event>?>(nil)

    var loop: SpinLoop<State, Event>? {
        get { target.withLock { $0 } }
        nonmutating set { target.withLock { $0 = newValue } }
    }
}
