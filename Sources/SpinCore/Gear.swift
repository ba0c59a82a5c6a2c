
/// A mediator bus between Spins: feedbacks attached to a Gear push events into it and
/// catch the events others pushed.
///
/// Delivery is a synchronous fan-out: `propagate` calls every attached handler, in the
/// order they attached, before it returns. A handler attached to a loop only enqueues an
/// event on that loop, so propagating never waits for another Spin.
public final class Gear<Event: Sendable>: Sendable {
    private struct Subscribers {
        var nextID: UInt64 = 0
        var handlers: [(id: UInt64, handler: @Sendable (GearDelivery<Event>) -> Void)] = []
    }

    private let subscribers = Protected(Subscribers())

    public init() {}

    /// Delivers `event` to every attached feedback and observer.
    /// - Parameters:
    ///   - event: the event, delivered synchronously to each in turn.
    ///   - source: the label of the Spin it comes from, if known (the server
    ///     names its Spins; the Gear stream shows it).
    public func propagate(_ event: Event, from source: String? = nil) {
        let handlers = subscribers.withLock { $0.handlers }
        let delivery = GearDelivery(event: event, source: source)
        for entry in handlers {
            entry.handler(delivery)
        }
    }

    /// Attaches a handler that sees every event propagated from now on, with its source.
    /// Keep the subscription and `cancel()` it to detach.
    public func observe(_ handler: @escaping @Sendable (GearDelivery<Event>) -> Void) -> SpinSubscription {
        let id = subscribers.withLock { state -> UInt64 in
            state.nextID += 1
            state.handlers.append((state.nextID, handler))
            return state.nextID
        }
        return SpinSubscription { [weak self] in
            self?.subscribers.withLock { state in
                state.handlers.removeAll { $0.id == id }
            }
        }
    }

    /// The number of handlers attached now (feedbacks of running loops and observers).
    public var attachedCount: Int {
        subscribers.withLock { $0.handlers.count }
    }
}

/// A Gear event as observers see it: the event and the Spin that propagated it.
public struct GearDelivery<Event: Sendable>: Sendable {
    public let event: Event
    public let source: String?
}
