import SpinCore
import SpinWire
import SpinJSON
import SpinConcurrency

/// The durable face of one hosted Spin: what the outside world may see of it.
///
/// A Spin applies events in memory first; its journal makes them durable a moment later
/// (at once, after a group commit, or after an fsync, as `storage.fsync` says). The feed
/// sits between the two: it holds each applied transition until the journal says it is
/// durable (`durable(through:)`), and only then
/// - hands it to the streams (no client ever sees a state a crash can take back),
/// - keeps it in the retained history (`storage.retainEvents`), which `?since=N` resumes
///   from, and
/// - acknowledges whoever waits for it (`whenDurable`: 202s, stream acks).
///
/// When storage fails, `fail` answers every waiter with the failure (`DurabilityError`,
/// which the API answers as 503 `storage_unavailable`) and the transitions still pending
/// are dropped by `rollback()` (the Spin goes back to the last durable state), so nothing
/// is acknowledged or streamed that was not made durable.
///
/// A feed without a journal (`immediate`) releases each transition as it is applied.
package final class SpinFeed: Sendable {
    package let name: String
    /// How many durable transitions the history keeps for resuming streams.
    package let retain: Int
    private let immediate: Bool
    private let shared: Protected<Shared>

    /// What a subscriber gets of each durable transition: its state message, and for a
    /// subscriber that asked for deltas, the patch message (nil: send the whole state).
    package typealias Live = @Sendable (HostedTransition, _ message: [UInt8], _ patch: [UInt8]?) -> Void

    /// How a subscription starts.
    package enum Start: Sendable {
        /// `{"type":"snapshot",..}` of the newest durable state.
        case snapshot(sequence: UInt64, state: JSONValue)
        /// Every durable transition after the client's `since`, in order (maybe none).
        case replay([HostedTransition])
    }

    private struct Shared {
        var epoch = ""
        var sequence: UInt64 = 0
        var state: JSONValue = .null
        /// Where the feed began last (`begin`): its state is the Spin's at that sequence
        /// (`state(at:)`) when no transition the history holds says so.
        var origin: (sequence: UInt64, state: JSONValue) = (0, .null)
        /// Applied, not yet durable, in sequence order.
        var pending: [HostedTransition] = []
        var history: TransitionRing
        var subscribers: [(id: UInt64, deltas: Bool, handler: Live, ended: (@Sendable () -> Void)?)] = []
        /// How many subscribers asked for patches (`?delta=json-patch`): while none does,
        /// no state is diffed.
        var deltaSubscribers = 0
        /// Set by `end`: this node no longer serves the Spin.
        var ended: DurabilityError? {
            get { endedBox?.error }
            set { endedBox = newValue.map(ErrorBox.init) }
        }
        var endedBox: ErrorBox?
        var nextID: UInt64 = 0
        var waiters: [Waiter] = []
        /// Set while storage fails: every acknowledgement asked for gets it, once the Spin
        /// is `rolledBack` (before, they wait, so that nobody hears "not applied" while
        /// the state still shows the event).
        var failure: DurabilityError? {
            get { failureBox?.error }
            set { failureBox = newValue.map(ErrorBox.init) }
        }
        var failureBox: ErrorBox?
        var rolledBack = false
    }

    /// An acknowledgement waiting for `sequence` to be durable, and the event loop it was
    /// asked for on (nil elsewhere), where it is told when a thread that is no loop's
    /// makes it durable (`tell`).
    private struct Waiter {
        let sequence: UInt64
        let home: (any TurnScheduler)?
        let acknowledge: @Sendable (DurabilityError?) -> Void
    }

    /// An error the feed holds, out of line: every awake Spin has a feed, and rarely one
    /// of these (a `DurabilityError` holds two strings, 32 bytes; a reference 8).
    private final class ErrorBox: Sendable {
        let error: DurabilityError
        init(_ error: DurabilityError) { self.error = error }
    }

    package init(name: String, retain: Int, immediate: Bool) {
        self.name = name
        self.retain = max(0, retain)
        self.immediate = immediate
        // One more than retained: the oldest is the state a compacted journal starts from.
        self.shared = Protected(Shared(history: TransitionRing(capacity: max(0, retain) + 1)))
    }

    /// Where the feed starts: the recovered (or initial) sequence and state, the history
    /// recovery replayed, and the epoch of this history. Before the Spin starts. A feed
    /// that goes on (its Spin was recovered again, its streams kept) keeps the history it
    /// has and takes only what follows it.
    package func begin(sequence: UInt64, state: JSONValue, history: [HostedTransition], epoch: String) {
        shared.withLock { shared in
            let held = shared.epoch == epoch ? shared.sequence : 0
            if shared.epoch != epoch, !shared.epoch.isEmpty {
                shared.history = TransitionRing(capacity: shared.history.capacity)
            }
            shared.sequence = sequence
            shared.state = state
            shared.epoch = epoch
            shared.origin = (sequence, state)
            for transition in history where transition.sequence <= sequence && transition.sequence > held {
                shared.history.append(transition)
            }
        }
    }

    /// The epoch of the history (see `Journal`): it changes only when the history did not
    /// simply grow.
    package var epoch: String { shared.withLock { $0.epoch } }

    /// The newest durable sequence and state.
    package var snapshot: (sequence: UInt64, state: JSONValue) {
        shared.withLock { ($0.sequence, $0.state) }
    }

    /// Transitions applied and not yet durable.
    package var pendingCount: Int { shared.withLock { $0.pending.count } }

    // MARK: Applied → durable

    /// A transition the Spin applied; on the Spin's executor, in order.
    package func applied(_ transition: HostedTransition) {
        guard immediate else {
            shared.withLock { $0.pending.append(transition) }
            return
        }
        let acknowledged = shared.withLock { shared -> [Waiter] in
            Self.release(transition, in: &shared)
            return Self.takeWaiters(through: transition.sequence, in: &shared)
        }
        Self.tell(acknowledged)
    }

    /// Everything applied up to `sequence` is durable: stream it, keep it, acknowledge it.
    package func durable(through sequence: UInt64) {
        let acknowledged = shared.withLock { shared -> [Waiter] in
            var released = 0
            for transition in shared.pending {
                guard transition.sequence <= sequence else { break }
                Self.release(transition, in: &shared)
                released += 1
            }
            shared.pending.removeFirstReleasing(released)
            return Self.takeWaiters(through: shared.sequence, in: &shared)
        }
        Self.tell(acknowledged)
    }

    /// Tells `waiters` their events are durable. On an event loop, or where no thread
    /// gathers hand-offs, at once. On a thread that is no loop's and gathers them (a
    /// journal's thread telling what a sync made durable, `HandOffs`), each goes back to the
    /// loop it was asked for on, in one batch per loop: the answers are made and written
    /// there, on the thread that holds their connections, with one hand-off for all of them.
    private static func tell(_ waiters: [Waiter]) {
        guard !waiters.isEmpty else { return }
        guard let gathering = HandOffs.current, EndOfTurn.current == nil else {
            for waiter in waiters { waiter.acknowledge(nil) }
            return
        }
        var byHome: [(home: any TurnScheduler, acknowledgements: [@Sendable (DurabilityError?) -> Void])] = []
        for waiter in waiters {
            guard let home = waiter.home else {
                waiter.acknowledge(nil)
                continue
            }
            if let index = byHome.firstIndex(where: { $0.home === home }) {
                byHome[index].acknowledgements.append(waiter.acknowledge)
            } else {
                byHome.append((home, [waiter.acknowledge]))
            }
        }
        for (home, acknowledgements) in byHome {
            gathering.add({ for acknowledge in acknowledgements { acknowledge(nil) } }, for: home)
        }
    }

    /// Subscribers are called under the lock, so that a new subscription's start and the
    /// live transitions after it have no gap and no overlap. They only post to their
    /// stream's mailbox (`StreamMailbox`), which hops to the connection's event loop at most
    /// once per batch.
    private static func release(_ transition: HostedTransition, in shared: inout Shared) {
        guard transition.sequence > shared.sequence else { return }
        let previous = (sequence: shared.sequence, state: shared.state)
        shared.sequence = transition.sequence
        shared.state = transition.state
        shared.history.append(transition)
        if let replacement = transition.replacement {
            // The history did not simply grow: a new epoch, and every stream a snapshot of it.
            if !replacement.epoch.isEmpty { shared.epoch = replacement.epoch }
            guard !shared.subscribers.isEmpty else { return }
            let snapshot = StreamMessage.snapshot(sequence: transition.sequence, epoch: shared.epoch, state: transition.state)
            for subscriber in shared.subscribers { subscriber.handler(transition, snapshot, nil) }
            return
        }
        guard !shared.subscribers.isEmpty else { return }
        // One state message for every stream, and one patch message for every stream that
        // asked for deltas: written once, their bytes shared.
        let message = StreamMessage.state(transition, epoch: shared.epoch)
        let patch = shared.deltaSubscribers > 0
            ? StatePatcher.message(for: transition, after: previous, epoch: shared.epoch) : nil
        for subscriber in shared.subscribers { subscriber.handler(transition, message, subscriber.deltas ? patch : nil) }
    }

    private static func takeWaiters(through sequence: UInt64, in shared: inout Shared) -> [Waiter] {
        guard shared.waiters.contains(where: { $0.sequence <= sequence }) else { return [] }
        let ready = shared.waiters.filter { $0.sequence <= sequence }
        if ready.count == shared.waiters.count { shared.waiters = [] } else { shared.waiters.removeAll { $0.sequence <= sequence } }
        return ready
    }

    /// Calls `acknowledge` once `sequence` is durable (at once if it is), or with the
    /// storage failure that keeps it from becoming durable. Must not block. Asked on an
    /// event loop, it is called there when a journal's thread makes it durable (`tell`).
    package func whenDurable(_ sequence: UInt64, _ acknowledge: @escaping @Sendable (DurabilityError?) -> Void) {
        let ready = shared.withLock { shared -> DurabilityError?? in
            if let failure = shared.failure, shared.rolledBack { return .some(failure) }
            // Without a journal, applied is durable: whoever asks was told it is applied.
            if immediate || shared.sequence >= sequence { return .some(nil) }
            shared.waiters.append(Waiter(sequence: sequence, home: EndOfTurn.current, acknowledge: acknowledge))
            return .none
        }
        if case .some(let error) = ready { acknowledge(error) }
    }

    // MARK: Storage failures

    /// Storage cannot write: new events are refused (`isFailing`), and every waiting and
    /// later acknowledgement gets `error` once the Spin is rolled back (at once when
    /// `rolledBack`: nothing was applied past what is durable), until `recovered()`.
    package func fail(_ error: DurabilityError, rolledBack: Bool = false) {
        shared.withLock { shared in
            shared.failure = error
            shared.rolledBack = false
        }
        if rolledBack { self.rolledBack() }
    }

    /// Drops what was applied and not made durable; returns the state the Spin goes back
    /// to. On the Spin's executor, before it applies anything new.
    package func rollback() -> (sequence: UInt64, state: JSONValue, dropped: Int) {
        shared.withLock { shared in
            defer { shared.pending = [] }
            return (shared.sequence, shared.state, shared.pending.count)
        }
    }

    /// The Spin shows its durable state again: refuse every waiting acknowledgement.
    package func rolledBack() {
        let (refused, failure) = shared.withLock { shared -> ([@Sendable (DurabilityError?) -> Void], DurabilityError?) in
            guard let failure = shared.failure else { return ([], nil) }
            shared.rolledBack = true
            defer { shared.waiters = [] }
            return (shared.waiters.map(\.acknowledge), failure)
        }
        for acknowledge in refused { acknowledge(failure) }
    }

    /// Storage works again.
    package func recovered() {
        shared.withLock { shared in
            shared.failure = nil
            shared.rolledBack = false
        }
    }

    package var isFailing: Bool { shared.withLock { $0.failure != nil } }

    /// This node no longer serves the Spin (`end`).
    package var hasEnded: Bool { shared.withLock { $0.ended != nil } }

    /// Whether a stream is subscribed, or an acknowledgement waits.
    package var isWatched: Bool { shared.withLock { !$0.subscribers.isEmpty || !$0.waiters.isEmpty } }

    /// Why the feed ended (`end`): the Spin moved away, was deleted (`deleted`), or went to
    /// sleep unwatched.
    package var endedBy: DurabilityError? { shared.withLock { $0.ended } }

    /// What the feed answers while failing (see `fail`): its storage failed, or the Spin goes
    /// back from a transition that did not encode or made too large a state.
    package var failure: DurabilityError? { shared.withLock { $0.failure } }

    /// This node stops serving the Spin (a cluster moved it): every waiting and later
    /// acknowledgement gets `error` (nothing past what is durable counts as acknowledged
    /// here; the new owner recovers what is durable), and every stream is told to close.
    /// Final.
    package func end(_ error: DurabilityError) {
        let (waiters, ended) = shared.withLock { shared -> ([@Sendable (DurabilityError?) -> Void], [@Sendable () -> Void]) in
            shared.ended = error
            shared.failure = error
            shared.rolledBack = true
            shared.pending = []
            defer {
                shared.waiters = []
                shared.subscribers = []
                shared.deltaSubscribers = 0
            }
            return (shared.waiters.map(\.acknowledge), shared.subscribers.compactMap(\.ended))
        }
        for acknowledge in waiters { acknowledge(error) }
        for close in ended { close() }
    }

    // MARK: Streams

    /// Subscribes a stream: `start` gets a snapshot of the newest durable state, or, when
    /// the client resumes (`since`, of this `epoch` if it names one) within the retained
    /// history, every durable transition after `since`; then `live` gets each new durable
    /// transition, in order, with its state message (`StreamMessage.state`, made once for
    /// all subscribers). Both are called under the feed's lock: they must only hand the
    /// work to another queue.
    ///
    /// `ended` is called (off the lock) when this node stops serving the Spin (`end`): the
    /// stream should close so that its client reconnects to the node that serves it now.
    ///
    /// With `deltas`, `live` also gets each transition's patch message (`StatePatcher`),
    /// made once for every such subscriber (under the lock, like the state message), or nil
    /// when the whole state is to be sent.
    package func subscribe(
        since: UInt64?, epoch: String?, deltas: Bool,
        start: @Sendable (Start, _ epoch: String) -> Void,
        live: @escaping Live,
        ended: (@Sendable () -> Void)? = nil
    ) -> SpinSubscription {
        let id = shared.withLock { shared -> UInt64? in
            guard shared.ended == nil else { return nil }
            // A resume across a replacement starts from a snapshot: the states before it are
            // of another epoch.
            if let since, epoch == nil || epoch == shared.epoch, let replay = shared.history.after(since, newest: shared.sequence),
               !replay.contains(where: { $0.replacement != nil }) {
                start(.replay(replay), shared.epoch)
            } else {
                start(.snapshot(sequence: shared.sequence, state: shared.state), shared.epoch)
            }
            shared.nextID += 1
            shared.subscribers.append((shared.nextID, deltas, live, ended))
            if deltas { shared.deltaSubscribers += 1 }
            return shared.nextID
        }
        guard let id else {
            ended?()
            return SpinSubscription {}
        }
        return SpinSubscription { [weak self] in
            self?.shared.withLock { shared in
                guard let index = shared.subscribers.firstIndex(where: { $0.id == id }) else { return }
                if shared.subscribers.remove(at: index).deltas { shared.deltaSubscribers -= 1 }
            }
        }
    }

    // MARK: Compaction

    /// The durable transitions after `sequence` that the history still holds (all of
    /// them), or nil when it no longer reaches back that far.
    package func retained(after sequence: UInt64) -> [HostedTransition]? {
        shared.withLock { $0.history.after(sequence, newest: $0.sequence) }
    }

    /// The oldest retained transition.
    package var oldestRetained: HostedTransition? { shared.withLock { $0.history.oldest } }

    // MARK: History

    /// The retained transitions from `first` through `last` (those the history still
    /// holds, in order; none when it holds none of them).
    package func retained(from first: UInt64, through last: UInt64) -> ArraySlice<HostedTransition> {
        shared.withLock { $0.history.range(from: first, through: min(last, $0.sequence)) }
    }

    /// The sequence of the oldest transition the history holds (nil: none), and the
    /// newest durable sequence.
    package var retainedBounds: (oldest: UInt64?, newest: UInt64) {
        shared.withLock { ($0.history.oldest?.sequence, $0.sequence) }
    }

    /// The state at `sequence` when the feed holds it: a retained transition's (with the
    /// version of the definition it was applied under), the newest durable state, or the
    /// one the feed began at (both of the version the Spin runs: nil).
    package func state(at sequence: UInt64) -> (state: JSONValue, version: Int32?)? {
        shared.withLock { shared in
            if let held = shared.history.range(from: sequence, through: sequence).first { return (held.state, held.version) }
            if sequence == shared.sequence { return (shared.state, nil) }
            return shared.origin.sequence == sequence ? (shared.origin.state, nil) : nil
        }
    }
}

/// The newest `capacity` transitions, oldest first.
struct TransitionRing: Sendable {
    let capacity: Int
    private var items: [HostedTransition] = []
    /// Index of the oldest item kept; items before it are dropped lazily.
    private var head = 0

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { items.count - head }
    var oldest: HostedTransition? { head < items.count ? items[head] : nil }

    mutating func append(_ transition: HostedTransition) {
        guard capacity > 0 else { return }
        items.append(transition)
        if count > capacity { head += 1 }
        // Drop the dead prefix once it is as large as what is kept: amortised O(1).
        if head >= capacity {
            items.removeFirst(head)
            head = 0
        }
    }

    /// The transitions kept from `first` through `last` (clamped to what is kept).
    func range(from first: UInt64, through last: UInt64) -> ArraySlice<HostedTransition> {
        guard let oldest, let newest = items.last?.sequence, first <= last, last >= oldest.sequence, first <= newest else {
            return []
        }
        let start = head + Int(max(first, oldest.sequence) - oldest.sequence)
        let end = head + Int(min(last, newest) - oldest.sequence)
        return items[start...end]
    }

    /// The transitions after `sequence`, when that is gapless from what is kept: nil if
    /// the ring no longer holds `sequence + 1` (or `sequence` is ahead of `newest`).
    func after(_ sequence: UInt64, newest: UInt64) -> [HostedTransition]? {
        guard sequence <= newest else { return nil }
        if sequence == newest { return [] }
        guard let oldest, oldest.sequence <= sequence + 1 else { return nil }
        let start = head + Int(sequence + 1 - oldest.sequence)
        return Array(items[start...])
    }
}
