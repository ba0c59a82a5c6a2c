import SpinConcurrency

/// A mediator bus between Spins: feedbacks attached to a Gear push events into it and
/// catch the events others pushed.
///
/// Delivery is a synchronous fan-out: `propagate` calls every attached handler, in the
/// order they attached, before it returns. A handler attached to a loop only enqueues an
/// event on that loop, so propagating never waits for another Spin.
///
/// A host may take the fan-out over (`route(through:)`, what the Spin server does to make
/// Gear delivery durable): `propagate` then hands each event to the host, with what made
/// it (`GearCause`), and the host hands it on to each catching loop later
/// (`deliver(_:from:to:receipt:)`).
public final class Gear<Event: Sendable>: Sendable {
    private struct Subscribers {
        var nextID: UInt64 = 0
        var handlers: [Handler] = []
        /// The catching handlers of each labelled loop, in attach order, once more than
        /// `indexedFrom` handlers are attached: a host's delivery to one loop then looks at
        /// its own, however many loops share the Gear. Below that (a Gear per user or
        /// device: one or two loops) `handlers` is scanned, and no index is kept.
        var catchers: [String: [Handler]]?
        /// Set by `route(through:)`: takes every propagated event instead of the handlers.
        var router: (@Sendable (Event, String?, GearCause?) -> Void)?

        static var indexedFrom: Int { 8 }

        /// The catching handlers of the loop labelled `owner`, in attach order.
        func catching(_ owner: String) -> [Handler] {
            if let catchers { return catchers[owner] ?? [] }
            return handlers.filter { $0.catches && $0.owner == owner }
        }

        mutating func add(_ handler: Handler) {
            handlers.append(handler)
            if catchers != nil {
                if handler.catches, let owner = handler.owner { catchers![owner, default: []].append(handler) }
            } else if handlers.count > Self.indexedFrom {
                var index: [String: [Handler]] = [:]
                for handler in handlers where handler.catches {
                    if let owner = handler.owner { index[owner, default: []].append(handler) }
                }
                catchers = index
            }
        }

        mutating func remove(id: UInt64, owner: String?, catches: Bool) {
            handlers.removeAll { $0.id == id }
            guard catches, let owner, catchers != nil else { return }
            catchers![owner]?.removeAll { $0.id == id }
            if catchers![owner]?.isEmpty == true { catchers![owner] = nil }
        }
    }

    private struct Handler {
        let id: UInt64
        /// For a catching feedback, the label of its loop (a hosted Spin's name); nil for
        /// an observer.
        let owner: String?
        let catches: Bool
        let handle: @Sendable (GearDelivery<Event>, GearReceipt?) -> GearCatch
    }

    private let subscribers = Protected(Subscribers())

    public init() {}

    /// Delivers `event` to every attached feedback and observer.
    /// - Parameters:
    ///   - event: the event, delivered synchronously to each in turn.
    ///   - source: the label of the Spin it comes from, if known (the server
    ///     names its Spins; the Gear stream shows it).
    public func propagate(_ event: Event, from source: String? = nil) {
        propagate(event, from: source, cause: nil)
    }

    /// `propagate(_:from:)` by a feedback of a loop, which says what made the event
    /// (`GearCause`): a host that routes the Gear (`route(through:)`) gets it.
    package func propagate(_ event: Event, from source: String?, cause: GearCause?) {
        let (handlers, router) = subscribers.withLock { ($0.handlers, $0.router) }
        if let router { return router(event, source, cause) }
        let delivery = GearDelivery(event: event, source: source)
        for entry in handlers {
            _ = entry.handle(delivery, nil)
        }
    }

    /// Attaches a handler that sees every event propagated from now on, with its source.
    /// Keep the subscription and `cancel()` it to detach.
    public func observe(_ handler: @escaping @Sendable (GearDelivery<Event>) -> Void) -> SpinSubscription {
        attach(owner: nil, catches: false) { delivery, _ in
            handler(delivery)
            return .ignored
        }
    }

    /// Attaches a catching feedback of the loop labelled `owner`: `handler` turns a
    /// delivery into an event of that loop (with the receipt, when the host gave one)
    /// and says what became of it.
    package func attachCatcher(
        owner: String?, _ handler: @escaping @Sendable (GearDelivery<Event>, GearReceipt?) -> GearCatch
    ) -> SpinSubscription {
        attach(owner: owner, catches: true, handler)
    }

    private func attach(owner: String?, catches: Bool,
                        _ handle: @escaping @Sendable (GearDelivery<Event>, GearReceipt?) -> GearCatch) -> SpinSubscription {
        let id = subscribers.withLock { state -> UInt64 in
            state.nextID += 1
            state.add(Handler(id: state.nextID, owner: owner, catches: catches, handle: handle))
            return state.nextID
        }
        return SpinSubscription { [weak self] in
            self?.subscribers.withLock { $0.remove(id: id, owner: owner, catches: catches) }
        }
    }

    /// The number of handlers attached now (feedbacks of running loops and observers).
    public var attachedCount: Int {
        subscribers.withLock { $0.handlers.count }
    }

    // MARK: Routed delivery (a host's)

    /// From now on every propagated event goes to `router` (with its source and cause)
    /// instead of the attached handlers; `deliver` hands it to a catching loop. A second
    /// call replaces the first.
    package func route(through router: @escaping @Sendable (Event, String?, GearCause?) -> Void) {
        subscribers.withLock { $0.router = router }
    }

    /// Whether `route(through:)` took the fan-out over.
    package var isRouted: Bool { subscribers.withLock { $0.router != nil } }

    /// The labels of the loops whose feedbacks catch events of this Gear now.
    package var catchingOwners: Set<String> {
        subscribers.withLock { state in
            if let catchers = state.catchers { return Set(catchers.keys) }
            return Set(state.handlers.lazy.filter(\.catches).compactMap(\.owner))
        }
    }

    /// Whether a feedback of the loop labelled `owner` catches events of this Gear now.
    package func isCaught(by owner: String) -> Bool {
        subscribers.withLock { state in
            if let catchers = state.catchers { return catchers[owner] != nil }
            return state.handlers.contains { $0.catches && $0.owner == owner }
        }
    }

    /// Hands `event` to the catching feedbacks of the loop labelled `owner` (none to
    /// observers), with `receipt`: what they made of it, `.ignored` when that loop has no
    /// catching feedback here or none maps the event.
    package func deliver(_ event: Event, from source: String?, to owner: String, receipt: GearReceipt?) -> GearCatch {
        let handlers = subscribers.withLock { $0.catching(owner) }
        let delivery = GearDelivery(event: event, source: source)
        var outcome = GearCatch.ignored
        for entry in handlers { outcome = outcome.combined(with: entry.handle(delivery, receipt)) }
        return outcome
    }
}

/// A Gear event as observers see it: the event and the Spin that propagated it.
public struct GearDelivery<Event: Sendable>: Sendable {
    public let event: Event
    public let source: String?
}

/// What made a loop's feedback propagate a Gear event: the loop was giving its feedbacks
/// the state at `sequence`, either the one the event at `sequence` just made (`fresh`) or
/// one it gave again (the state a loop starts from, or runs on from after a suspension).
/// A host that makes Gear events durable records a fresh one with that transition and
/// sends nothing for a state given again (it sent it when the state was new).
package struct GearCause: Sendable, Equatable {
    package var sequence: UInt64
    package var fresh: Bool

    package init(sequence: UInt64, fresh: Bool) {
        self.sequence = sequence
        self.fresh = fresh
    }
}

/// What a catching loop made of a routed delivery (`Gear.deliver`): how many events its
/// catching feedbacks enqueued (each carries the receipt), and whether one was refused
/// (the loop takes no event now: suspended or stopped). Neither: no catching feedback of
/// the loop maps the event.
package struct GearCatch: Sendable, Equatable {
    package var enqueued = 0
    package var refused = false

    package init(enqueued: Int = 0, refused: Bool = false) {
        self.enqueued = enqueued
        self.refused = refused
    }

    /// Nothing enqueued, nothing refused.
    package static var ignored: GearCatch { GearCatch() }
    /// One event enqueued.
    package static var enqueued: GearCatch { GearCatch(enqueued: 1) }
    /// Refused.
    package static var refused: GearCatch { GearCatch(refused: true) }

    /// What two catching feedbacks of one loop made of it together.
    package func combined(with other: GearCatch) -> GearCatch {
        GearCatch(enqueued: enqueued + other.enqueued, refused: refused || other.refused)
    }
}

/// Goes with a Gear event a host delivers to a catching loop (`Gear.deliver`): the event
/// the loop makes of it carries the receipt (`Transition.gearReceipt`), and the loop
/// tells it, on its executor, whether it applied that event or its reducer declined it.
/// An event the loop drops (it suspended or stopped first) tells it nothing.
///
/// A receipt made `collecting` gathers the events the catching feedbacks make of one
/// delivery (several when a loop has several catching feedbacks on the Gear, or lifted
/// children that catch), and `commit()` enqueues them into their loop together, as one
/// batch: applied all or none, never cut by a suspension, journaled in one write. A host
/// that records the delivery as consumed with those events needs that.
package final class GearReceipt: Sendable {
    /// The Gear's name, the Spin that propagated the event, and the event's position in
    /// that Spin's outbox.
    package let gear: String
    package let source: String
    package let position: UInt64
    private let outcome: @Sendable (GearReceiptOutcome) -> Void
    /// While collecting: the events caught so far, per loop (nil: enqueued as they come).
    private let collected: Protected<[ObjectIdentifier: any CaughtEvents]>?

    package init(gear: String, source: String, position: UInt64, collecting: Bool = false,
                 outcome: @escaping @Sendable (GearReceiptOutcome) -> Void) {
        self.gear = gear
        self.source = source
        self.position = position
        self.outcome = outcome
        self.collected = collecting ? Protected([:]) : nil
    }

    /// Called by the loop, on its executor.
    func tell(_ result: GearReceiptOutcome) { outcome(result) }

    /// Whether events made with this receipt wait for `commit()`.
    var isCollecting: Bool { collected != nil }

    /// Adds an event to the batch of the loop `key` (`make` starts it).
    func collect<Batch: CaughtEvents>(in key: ObjectIdentifier, make: () -> Batch, _ add: (Batch) -> Void) {
        collected?.withLock { batches in
            if let batch = batches[key] as? Batch { return add(batch) }
            let batch = make()
            add(batch)
            batches[key] = batch
        }
    }

    /// Enqueues what was collected, each loop's events as one batch. False when a loop
    /// refused them (it is suspended or stopped): then none of that loop's were taken.
    package func commit() -> Bool {
        guard let collected else { return true }
        let batches = collected.withLock { batches in
            defer { batches = [:] }
            return Array(batches.values)
        }
        var taken = true
        for batch in batches where !batch.enqueue() { taken = false }
        return taken
    }
}

/// The events one loop's catching feedbacks made of one delivery (`GearReceipt.collect`).
protocol CaughtEvents: AnyObject, Sendable {
    /// Enqueues them as one batch; false when the loop took none.
    func enqueue() -> Bool
}

/// What a loop did with an event that carried a `GearReceipt`.
package enum GearReceiptOutcome: Sendable, Equatable {
    /// Applied, as the event at `sequence`.
    case applied(sequence: UInt64)
    /// The reducer declined it in the state at `sequence`.
    case declined(sequence: UInt64)
}
