/// The state of a declarative machine: which state is active and the machine's data.
///
/// JSON (the state a server stores and streams): `{"value":"closed","context":{..}}`; a
/// nested active state gives `value` as an object, `{"door":{"opened":"ajar"}}`, and an
/// active parallel state an object of its regions, `{"p":{"bold":"on","italic":"off"}}`,
/// as XState does.
///
/// Events a `raise` action scheduled with a delay and not sent yet ride along:
/// `"scheduled": [{"key":1,"delay":500,"event":{"type":"TIMEOUT"}}]` (with the action's
/// `id` when it had one), present only when not empty. They are part of the state, so
/// a Spin that restarts from its journal or a snapshot sends them again (after their
/// whole delay, as an `after` timer starts anew).
///
/// Besides value and context, a state made by a transition remembers what that
/// transition did (`step`: the states it entered, the Gear events it propagates). That
/// is not part of the JSON, nor of `==`: feedbacks act on it once, when the state is new.
public struct MachineState: Sendable, Codable {
    /// The path of the active leaf state from the root (`["closed"]`, `["door", "opened", "ajar"]`);
    /// while a parallel state is active, the first of `leaves`. Setting it makes that
    /// path the only active leaf.
    public var value: [String] {
        get { shape.value }
        set { shape = Shape(value: newValue, step: shape.step, leafHint: nil) }
    }
    /// The paths of every active leaf state, in name order (their canonical order: the
    /// interpreter runs them in document order): one unless a parallel state is active,
    /// then one (at least) per region.
    public var leaves: [[String]] { shape.leaves ?? [shape.value] }
    /// The machine's data.
    public var context: [String: MachineValue]
    /// What the compound states with a history child remembered when they were last
    /// left: the state's path (`"a.b"`) → the active leaf's path then. JSON: `"history":
    /// {"a": "a.b.c"}`, present only when not empty (XState's `historyValue`).
    public var history: [String: [String]]
    /// The events `raise` actions scheduled with a delay that are still to be sent, in
    /// the order they were scheduled, each under its own `key` (see `MachineScheduledEvent`).
    public var scheduled: [MachineScheduledEvent] {
        get { waiting ?? [] }
        set { waiting = newValue.isEmpty ? nil : newValue }
    }
    /// `scheduled`, nil when empty: a state is copied several times per event, and a nil
    /// is copied without touching a reference count.
    private var waiting: [MachineScheduledEvent]?
    /// What the transition that made this state did; empty for a state made otherwise.
    public var step: MachineStep {
        get { shape.step }
        set { shape = shape.with(step: newValue) }
    }

    /// The same state with an empty step: where a macrostep that no transition began
    /// starts (an event no `on` takes, which an `always` transition answers).
    var startingAStep: MachineState {
        var copy = self
        copy.step = MachineStep()
        return copy
    }

    /// Value, step and where the interpreter found the leaf, behind one reference: a
    /// state is copied several times per event, and a transition that propagates
    /// nothing reuses a shape its machine made when it loaded.
    var shape: Shape

    /// A state with `value` (the active leaf's path) and `context`; `step` is for the
    /// interpreter, which records what a transition did.
    public init(value: [String], context: [String: MachineValue], step: MachineStep = MachineStep(),
                history: [String: [String]] = [:], scheduled: [MachineScheduledEvent] = []) {
        self.init(shape: Shape(value: value, step: step, leafHint: nil), context: context, history: history,
                  scheduled: scheduled)
    }

    /// A state whose active leaves are `leaves` (from the root, in any order: they are kept
    /// in name order; the configuration of a machine with parallel states), with `context`.
    public init(leaves: [[String]], context: [String: MachineValue], step: MachineStep = MachineStep(),
                history: [String: [String]] = [:], scheduled: [MachineScheduledEvent] = []) {
        self.init(shape: Shape(leaves: leaves.sorted { $0.lexicographicallyPrecedes($1) }, step: step),
                  context: context, history: history, scheduled: scheduled)
    }

    /// A state the interpreter made.
    init(shape: Shape, context: [String: MachineValue], history: [String: [String]] = [:],
         scheduled: [MachineScheduledEvent] = []) {
        self.shape = shape
        self.context = context
        self.history = history
        self.waiting = scheduled.isEmpty ? nil : scheduled
    }

    /// The state's value and step, and where its leaf's node is (`leafHint`: not part
    /// of the JSON nor of `==`, and ignored unless it names the leaf `value` names).
    final class Shape: Sendable {
        let value: [String]
        let step: MachineStep
        let leafHint: LeafHint?
        /// Every active leaf, in name order, when there are several (a parallel state is
        /// active); nil when `value` is the only one.
        let leaves: [[String]]?

        init(value: [String], step: MachineStep, leafHint: LeafHint?) {
            self.value = value
            self.step = step
            self.leafHint = leafHint
            self.leaves = nil
        }

        init(leaves: [[String]], step: MachineStep) {
            self.value = leaves.first ?? []
            self.step = step
            self.leafHint = nil
            self.leaves = leaves.count > 1 ? leaves : nil
        }

        /// The same leaves with another step.
        func with(step: MachineStep) -> Shape {
            guard let leaves else { return Shape(value: value, step: step, leafHint: leafHint) }
            return Shape(leaves: leaves, step: step)
        }
    }

    /// The active state value as JSON: a string for a top-level state, objects for nested
    /// ones, an object of regions for a parallel state (XState's `StateValue`).
    public var valueJSON: MachineValue {
        guard let leaves = shape.leaves else {
            guard var result = value.last.map(MachineValue.string) else { return .null }
            for key in value.dropLast().reversed() { result = .object([key: result]) }
            return result
        }
        return Self.valueJSON(of: leaves[...], depth: 0)
    }

    /// The value of the leaves under one state (they share their first `depth` names).
    private static func valueJSON(of leaves: ArraySlice<[String]>, depth: Int) -> MachineValue {
        if leaves.count == 1, let leaf = leaves.first, leaf.count == depth + 1 { return .string(leaf[depth]) }
        var members: [String: MachineValue] = [:]
        for name in Set(leaves.compactMap { $0.count > depth ? $0[depth] : nil }) {
            members[name] = valueJSON(of: leaves.filter { $0.count > depth && $0[depth] == name }[...], depth: depth + 1)
        }
        return .object(members)
    }

    /// True when the state at `path` (from the root) is active: it is an active leaf or
    /// one of its ancestors.
    public func isActive(_ path: [String]) -> Bool {
        guard let leaves = shape.leaves else {
            return path.count <= value.count && Array(value.prefix(path.count)) == path
        }
        return leaves.contains { path.count <= $0.count && $0.starts(with: path) }
    }

    /// Every active state but the root, each once, in document order (ancestors first).
    var activePaths: [[String]] {
        var seen: Set<[String]> = []
        var paths: [[String]] = []
        for leaf in leaves {
            for length in stride(from: 1, through: leaf.count, by: 1) where seen.insert(Array(leaf.prefix(length))).inserted {
                paths.append(Array(leaf.prefix(length)))
            }
        }
        return paths
    }

    private enum Keys: String, CodingKey { case value, context, history, scheduled }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let node = try container.decode(MachineValue.self, forKey: .value)
        guard let leaves = Self.leaves(of: node, under: []), !leaves.isEmpty else {
            throw DecodingError.dataCorruptedError(
                forKey: .value, in: container,
                debugDescription: "a state value is a state name or an object {\"parent\": <value>, ..}")
        }
        shape = leaves.count == 1 ? Shape(value: leaves[0], step: MachineStep(), leafHint: nil)
            : Shape(leaves: leaves, step: MachineStep())
        context = try container.decodeIfPresent([String: MachineValue].self, forKey: .context) ?? [:]
        let remembered = try container.decodeIfPresent([String: String].self, forKey: .history) ?? [:]
        history = remembered.mapValues { $0.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
        let scheduled = try container.decodeIfPresent([MachineScheduledEvent].self, forKey: .scheduled) ?? []
        waiting = scheduled.isEmpty ? nil : scheduled
        guard Set(scheduled.map(\.key)).count == scheduled.count else {
            throw DecodingError.dataCorruptedError(forKey: .scheduled, in: container,
                                                   debugDescription: "two scheduled events have the same key")
        }
    }

    /// The leaf paths a state value names (members in name order, the canonical order of
    /// a state's leaves); nil when it is neither a name nor an object of values.
    private static func leaves(of value: MachineValue, under path: [String]) -> [[String]]? {
        switch value {
        case .string(let leaf): return [path + [leaf]]
        // An atomic region of a parallel state: `{"p": {"region": {}, ..}}`, as XState writes it.
        case .object(let members) where members.isEmpty: return path.isEmpty ? nil : [path]
        case .object(let members):
            var leaves: [[String]] = []
            for key in members.keys.sorted() {
                guard let inner = members[key].flatMap({ Self.leaves(of: $0, under: path + [key]) }) else { return nil }
                leaves += inner
            }
            return leaves
        default: return nil
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(valueJSON, forKey: .value)
        try container.encode(MachineValue.object(context), forKey: .context)
        if !history.isEmpty {
            try container.encode(MachineValue.object(history.mapValues { .string($0.joined(separator: ".")) }), forKey: .history)
        }
        if !scheduled.isEmpty { try container.encode(scheduled, forKey: .scheduled) }
    }
}

extension MachineState: Equatable {
    /// Leaves, context, history and scheduled events; `step` is not compared.
    public static func == (lhs: MachineState, rhs: MachineState) -> Bool {
        lhs.value == rhs.value && lhs.shape.leaves == rhs.shape.leaves && lhs.context == rhs.context && lhs.history == rhs.history
            && lhs.waiting == rhs.waiting
    }
}

/// What one transition did besides changing value and context: the record its feedbacks
/// act on (timers of entered states start, Gear events go out).
public struct MachineStep: Sendable, Hashable {
    /// The paths of the states the transition entered, outermost first (a self-transition
    /// without target enters none; a transition that re-enters a state lists it).
    public var entered: [[String]]
    /// The Gear events the transition's actions propagate, in order.
    public var propagations: [MachinePropagation]
    /// True when the event set off more than `MachineDefinition.microstepLimit` steps
    /// (`always` transitions that keep being enabled): the state is where the machine
    /// stopped, and a host suspends the Spin.
    public var unsettled: Bool
    /// The events `raise` actions with a `delay` scheduled, in order; in the step of a
    /// state `transition` returned, each with the `key` it has in the state's `scheduled`.
    public var scheduled: [MachineScheduledEvent]
    /// The ids `cancel` actions named, in order (a `raise` later in the same step with
    /// the same id is not cancelled by them: it takes the place of the one they cancel).
    public var cancelled: [String]
    /// True when the state holds more delayed events than `MachineDefinition.scheduledLimit`
    /// after this step: a host suspends the Spin.
    public var overScheduled = false

    /// A record of entered states and propagations (empty by default).
    public init(entered: [[String]] = [], propagations: [MachinePropagation] = [], unsettled: Bool = false,
                scheduled: [MachineScheduledEvent] = [], cancelled: [String] = []) {
        self.entered = entered
        self.propagations = propagations
        self.unsettled = unsettled
        self.scheduled = scheduled
        self.cancelled = cancelled
    }
}

extension MachineStep {
    /// Adds what a later microstep of the same event did. A `cancel` there also takes
    /// out what this step scheduled under the same id, so that applying `cancelled`
    /// first and `scheduled` after gives what running the actions in order gave.
    mutating func append(_ later: MachineStep) {
        entered += later.entered
        propagations += later.propagations
        if !later.cancelled.isEmpty {
            let ids = Set(later.cancelled)
            scheduled.removeAll { $0.id.map(ids.contains) ?? false }
        }
        scheduled += later.scheduled
        cancelled += later.cancelled
    }
}

/// One `raise` action with a `delay`: the event the machine gets when it elapses,
/// unless a `cancel` with the same `id` comes first.
///
/// JSON (in a state's `scheduled`): `{"key":1,"id":"t","delay":500,"event":{"type":"TIMEOUT"}}`.
public struct MachineScheduledEvent: Sendable, Hashable, Codable {
    /// What the state's `scheduled` knows it by, and the event that sends it names
    /// (`MachineEvent.scheduled(_:)`): unique among the events a state has scheduled.
    /// 0 until `transition` gives it one.
    public var key: Int
    /// The `raise` action's `id`: a later `raise` with the same one takes its place, a
    /// `cancel` with it takes it out.
    public var id: String?
    /// Milliseconds.
    public var delay: Int
    public var event: MachineEvent

    public init(key: Int = 0, id: String? = nil, delay: Int, event: MachineEvent) {
        self.key = key
        self.id = id
        self.delay = delay
        self.event = event
    }

    /// The largest key a state may hold: 2^53, the last whole number a JSON reader
    /// keeps exactly.
    static let largestKey = 1 << 53

    private enum Keys: String, CodingKey { case key, id, delay, event }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        key = try container.decode(Int.self, forKey: .key)
        id = try container.decodeIfPresent(String.self, forKey: .id)
        delay = try container.decode(Int.self, forKey: .delay)
        event = try container.decode(MachineEvent.self, forKey: .event)
        // Keys travel as JSON numbers (exact up to 2^53) and the next one is one more.
        guard (1...Self.largestKey).contains(key) else {
            throw DecodingError.dataCorruptedError(forKey: .key, in: container,
                                                   debugDescription: "a key is a whole number from 1 to 2^53")
        }
        guard (0..<1_000_000_000).contains(delay) else {
            throw DecodingError.dataCorruptedError(forKey: .delay, in: container,
                                                   debugDescription: "a delay is a whole number of milliseconds from 0 to 999999999")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(key, forKey: .key)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encode(delay, forKey: .delay)
        try container.encode(event, forKey: .event)
    }
}

/// One `gear.propagate` action as a transition ran it: the Gear and the event.
public struct MachinePropagation: Sendable, Hashable {
    /// The Gear's name, as the machine's `gears` declares it.
    public var gear: String
    /// The event pushed into it.
    public var event: MachineEvent

    /// A propagation of `event` into the Gear named `gear`.
    public init(gear: String, event: MachineEvent) {
        self.gear = gear
        self.event = event
    }
}
