import SpinCore

/// Stats of a todo list, fed by the list's Gear: it catches every `counts` and keeps them.
public enum Stats {
    /// State JSON: `{"open":n,"done":n,"archived":n,"updates":n}`.
    public struct State: Codable, Equatable, Sendable {
        public var open = 0
        public var done = 0
        public var archived = 0
        /// How many `counts` arrived.
        public var updates = 0

        public init() {}
    }

    /// Event JSON: `{"type":"counted","open":n,"done":n,"archived":n}` (made from the Gear's
    /// `counts`), `{"type":"reset"}`.
    public enum Event: TypeTaggedEvent, Equatable, Sendable {
        case counted(open: Int, done: Int, archived: Int)
        case reset

        public static let eventTypes: EventTypes<Event> = [
            .type("counted", Event.counted, .field("open"), .field("done"), .field("archived")) {
                if case .counted(let open, let done, let archived) = $0 { (open, done, archived) } else { nil }
            },
            .type(.reset),
        ]
    }

    /// Keeps the newest counts and how many arrived; `reset` starts from zero.
    public static func reduce(state: State, event: Event) -> State {
        switch event {
        case .counted(let open, let done, let archived):
            var next = State()
            (next.open, next.done, next.archived, next.updates) = (open, done, archived, state.updates + 1)
            return next
        case .reset:
            return State()
        }
    }

    /// The Spin: a feedback catching the Gear's counts, the reducer.
    public static func spin(gear: Gear<TodoGearEvent>) -> Spin<State, Event> {
        Spin(initialState: State()) {
            Feedback(attachedTo: gear, propagating: { (caught: TodoGearEvent) -> Event? in
                guard case .counts(let open, let done, let archived) = caught else { return nil }
                return .counted(open: open, done: done, archived: archived)
            })
            Reducer(reduce)
        }
    }
}
