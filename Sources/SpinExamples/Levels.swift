import SpinCore

/// The levels of Spin.Swift's README: a left and a right level (10 and 20 at start) that
/// two feedbacks make converge to the same value.
///
/// No event traps: levels live in `range` (±1 000 000 000), `set` outside it is refused
/// when decoded (422 over HTTP, naming the field) and when encoded (its schema says so
/// both ways), and clamped by the reducer when made in Swift, and a
/// step that would leave the range leaves the level where it is, so no arithmetic can
/// overflow whatever the state. The range is far from `Int`'s limits, not small enough
/// for every gap to converge quickly: levels set further apart than the feedback budget
/// (100 000 events in the server) are a runaway the loop's guard suspends.
public enum Levels {
    /// What a level may be: ±1 000 000 000, a billion steps from `Int`'s limits.
    public static let range = -1_000_000_000...1_000_000_000

    /// State JSON: `{"left":l,"right":r}`.
    public struct State: Codable, Equatable, Sendable {
        public var left: Int
        public var right: Int

        public init(left: Int, right: Int) {
            self.left = left
            self.right = right
        }
    }

    /// Event JSON: `{"type":"increaseLeft"}` ... and `{"type":"set","left":l,"right":r}`.
    public enum Event: TypeTaggedEvent, Equatable, Sendable {
        case increaseLeft
        case decreaseLeft
        case increaseRight
        case decreaseRight
        /// Starts again from new values.
        case set(left: Int, right: Int)

        public static let eventTypes: EventTypes<Event> = [
            .type(.increaseLeft), .type(.decreaseLeft), .type(.increaseRight), .type(.decreaseRight),
            .type("set", Event.set, .field("left", .integer(in: Levels.range)), .field("right", .integer(in: Levels.range))) {
                if case .set(let left, let right) = $0 { (left, right) } else { nil }
            },
        ]
    }

    /// Moves one level by one step; converged levels stay put (the stop condition), but
    /// `set` always applies (clamped to `range`). A step never takes a level out of
    /// `range`: at its edge the level stays put.
    public static func reduce(state: State, event: Event) -> State {
        if case .set(let left, let right) = event { return State(left: clamp(left), right: clamp(right)) }
        guard state.left != state.right else { return state }
        switch event {
        case .increaseLeft: return State(left: up(state.left), right: state.right)
        case .decreaseLeft: return State(left: down(state.left), right: state.right)
        case .increaseRight: return State(left: state.left, right: up(state.right))
        case .decreaseRight: return State(left: state.left, right: down(state.right))
        case .set: return state
        }
    }

    /// One step up, unless that leaves `range` (the comparison keeps `+ 1` from overflowing
    /// even for a level outside the range, read from old stored data).
    static func up(_ level: Int) -> Int { level < range.upperBound ? level + 1 : level }
    static func down(_ level: Int) -> Int { level > range.lowerBound ? level - 1 : level }
    static func clamp(_ level: Int) -> Int { min(max(level, range.lowerBound), range.upperBound) }

    /// Regulates the left level toward the right one.
    public static func leftEffect(state: State) -> Event? {
        guard state.left != state.right else { return nil }
        return state.left < state.right ? .increaseLeft : .decreaseLeft
    }

    /// Regulates the right level toward the left one.
    public static func rightEffect(state: State) -> Event? {
        guard state.left != state.right else { return nil }
        return state.right < state.left ? .increaseRight : .decreaseRight
    }

    public static let initialState = State(left: 10, right: 20)

    /// The declarative (DSL) form.
    public static func spin(initialState: State = initialState) -> Spin<State, Event> {
        Spin(initialState: initialState) {
            Feedback(effect: leftEffect)
            Feedback(effect: rightEffect)
            Reducer(reduce)
        }
    }

    /// The builder form: the same Spin.
    public static func builderSpin(initialState: State = initialState) -> Spin<State, Event> {
        Spinner
            .initialState(initialState)
            .feedback(Feedback(effect: leftEffect))
            .feedback(Feedback(effect: rightEffect))
            .reducer(Reducer(reduce))
    }
}

extension Levels.State: JSONSchemaDescribable {
    /// `{"left":l,"right":r}`.
    public static var jsonSchema: JSONSchema { .object(["left": .integer(), "right": .integer()]) }
}
