import SpinCore

/// A todo list: items are added, toggled and removed by clients; a feedback archives the
/// done items once `archiveAfter` of them are done; every state's counts go out on a Gear.
public enum TodoList {
    /// One item. JSON: `{"id":1,"title":"milk","done":false}`.
    public struct Item: Codable, Equatable, Sendable {
        public var id: Int
        public var title: String
        public var done: Bool
    }

    /// State JSON: `{"items":[..],"nextID":n,"archived":n}`.
    public struct State: Codable, Equatable, Sendable {
        public var items: [Item] = []
        public var nextID = 1
        /// How many done items the feedback has archived so far.
        public var archived = 0

        public init() {}
    }

    /// Event JSON: `{"type":"add","title":"milk"}`, `{"type":"toggle","id":1}`,
    /// `{"type":"remove","id":1}`, `{"type":"cleanup"}`.
    public enum Event: TypeTaggedEvent, Equatable, Sendable {
        case add(title: String)
        case toggle(id: Int)
        case remove(id: Int)
        /// Archives the done items (the feedback sends it; clients may too).
        case cleanup

        public static let eventTypes: EventTypes<Event> = [
            .type("add", Event.add, .field("title", .string(minLength: 1))) { if case .add(let title) = $0 { title } else { nil } },
            .type("toggle", Event.toggle, .field("id")) { if case .toggle(let id) = $0 { id } else { nil } },
            .type("remove", Event.remove, .field("id")) { if case .remove(let id) = $0 { id } else { nil } },
            .type(.cleanup),
        ]
    }

    /// Adds, toggles, removes, or archives the done items; an unknown id changes nothing.
    public static func reduce(state: State, event: Event) -> State {
        var state = state
        switch event {
        case .add(let title):
            state.items.append(Item(id: state.nextID, title: title, done: false))
            state.nextID += 1
        case .toggle(let id):
            if let index = state.items.firstIndex(where: { $0.id == id }) { state.items[index].done.toggle() }
        case .remove(let id):
            state.items.removeAll { $0.id == id }
        case .cleanup:
            state.archived += state.items.count(where: \.done)
            state.items.removeAll(where: \.done)
        }
        return state
    }

    /// The Spin: the archiving feedback, the Gear feedback, the reducer.
    public static func spin(archiveAfter: Int = 3, gear: Gear<TodoGearEvent>) -> Spin<State, Event> {
        Spin(initialState: State()) {
            Feedback(effect: { (state: State) -> Event? in
                state.items.count(where: \.done) >= archiveAfter ? .cleanup : nil
            })
            Feedback(attachedTo: gear, propagating: { (state: State) -> TodoGearEvent? in
                let done = state.items.count(where: \.done)
                return .counts(open: state.items.count - done, done: done, archived: state.archived)
            })
            Reducer(reduce)
        }
    }
}

/// What Gear `todos` carries. JSON: `{"type":"counts","open":n,"done":n,"archived":n}`.
public enum TodoGearEvent: TypeTaggedEvent, Equatable, Sendable {
    case counts(open: Int, done: Int, archived: Int)

    public static let eventTypes: EventTypes<TodoGearEvent> = [
        .type("counts", TodoGearEvent.counts, .field("open"), .field("done"), .field("archived")) {
            if case .counts(let open, let done, let archived) = $0 { (open, done, archived) } else { nil }
        },
    ]
}

extension TodoList.State: JSONSchemaDescribable {
    /// `{"items":[{"id":1,"title":"milk","done":false}],"nextID":n,"archived":n}`: what the
    /// server publishes as the list's state schema (`GET /v1/spins/{name}/schema`).
    public static var jsonSchema: JSONSchema {
        .object(["items": .array(of: .object(["id": .integer(), "title": .string(), "done": .boolean])),
                 "nextID": .integer(), "archived": .integer()])
    }
}
