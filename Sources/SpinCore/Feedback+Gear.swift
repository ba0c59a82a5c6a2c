/// Feedbacks attached to a Gear (the mediator between Spins).
extension Feedback {
    /// Catches events of the Gear: each one the closure maps to an event is emitted
    /// into this feedback's loop.
    public init<GearEvent: Sendable>(
        attachedTo gear: Gear<GearEvent>,
        propagating transform: @escaping @Sendable (GearEvent) -> Event?
    ) {
        self.init { context in
            GearCatchRunner<State, Event, GearEvent>(gear: gear, transform: transform, context: context)
        }
    }

    /// Pushes an event into the Gear for every state the closure maps to one.
    public init<GearEvent: Sendable>(
        attachedTo gear: Gear<GearEvent>,
        propagating transform: @escaping @Sendable (State) -> GearEvent?
    ) {
        self.init { context in
            GearPropagateRunner<State, Event, GearEvent>(gear: gear, transform: transform, context: context)
        }
    }

    /// Short form: when the Gear carries `gearEvent`, emit `event` into this loop.
    public init<GearEvent: Sendable & Equatable>(
        attachedTo gear: Gear<GearEvent>,
        catching gearEvent: GearEvent,
        emitting event: Event
    ) {
        self.init(attachedTo: gear, propagating: { (caught: GearEvent) -> Event? in
            caught == gearEvent ? event : nil
        })
    }

    /// Short form: when this loop reaches `state`, push `gearEvent` into the Gear.
    public init<GearEvent: Sendable>(
        attachedTo gear: Gear<GearEvent>,
        catching state: State,
        propagating gearEvent: GearEvent
    ) where State: Equatable {
        self.init(attachedTo: gear, propagating: { (current: State) -> GearEvent? in
            current == state ? gearEvent : nil
        })
    }
}
