import Foundation
import SpinJSON

/// A declarative machine: states, transitions, actions and guards written as JSON in
/// the shape of an XState machine config, validated and ready to interpret.
///
/// ```json
/// { "id": "door", "initial": "closed", "context": { "opens": 0 },
///   "states": {
///     "closed": { "on": { "OPEN": { "target": "opened",
///                    "actions": [ { "type": "assign", "set": { "opens": { "add": 1 } } } ] } } },
///     "opened": { "after": { "300": "closed" }, "on": { "CLOSE": "closed" } } } }
/// ```
///
/// Loading validates everything at once and throws a `MachineValidationError` listing
/// each issue with its file and JSON path. `transition(_:_:)` is the pure step function;
/// `spin(gears:clock:)` makes a Spin of it. See docs/MACHINES.md
/// for the whole format.
public struct MachineDefinition: Sendable {
    /// Everything the definition holds, in one object: a copy of a definition (each Spin
    /// of a kind keeps one in its reducer and its feedbacks, a server its hooks) is one
    /// reference, not a copy of every field in each closure that captures it.
    private var body: Body

    /// The file name issues are reported with (as given when loading).
    public var file: String { body.file }
    /// The machine's `id`, if it has one.
    public var id: String? { body.id }
    /// The declared Gears: name → (Gear event type → machine event type) for `catch`.
    public var gears: [String: [String: String]] { body.gears }
    /// The state the machine starts in: its initial states entered, their entry actions'
    /// assignments applied to `context` (their Gear events are not sent: a machine that
    /// starts, or restarts, propagates nothing).
    public var initialState: MachineState { body.initialState }
    /// The JSON text the machine was parsed from, byte for byte (members in the order the
    /// file writes them): what a server shows as the machine's definition.
    public var source: [UInt8] { body.source }
    /// Every state node by its path from the root; the root is `[]`.
    var nodes: [[String]: StateNode] { body.nodes }
    /// The same nodes by number: what a state made by `transition` remembers of its
    /// leaf (its shape's `leafHint`), so that the next event finds the leaf's node
    /// without hashing its path.
    var nodeList: [StateNode] { body.nodeList }
    /// What tells this machine's hints from another's.
    var identity: MachineIdentity { body.identity }
    /// Whether the root's `on` has entries: only then is the root looked at for an event.
    var rootHandlesEvents: Bool { body.rootHandlesEvents }
    /// Whether some state has `always` transitions: only then does every step look for them.
    var hasAlways: Bool { body.hasAlways }
    /// Each state's place in document order: the root first, a state before its children,
    /// siblings in the order the file writes them (XState's order of regions).
    var documentOrder: [[String]: Int] { body.documentOrder }
    /// Whether some state is parallel (the root too), has initial-transition actions, or
    /// re-enters the root (`"reenter": true` to `#<machine id>`, or in the root's own
    /// `on`): then `transition` works
    /// on every active leaf and on the states entered by default
    /// (`MachineDefinition+Parallel`, SCXML's algorithm), else on the one active leaf.
    var stepsEveryLeaf: Bool { body.stepsEveryLeaf }
    /// Whether the root is a parallel state (`{"type": "parallel", "states": ..}`): its
    /// regions are the top-level states, and the machine is done when every one is.
    var parallelRoot: Bool { body.parallelRoot }
    /// Whether some action is a `raise` with a delay or a `cancel`: only then does the
    /// machine's Spin run their timers.
    var schedulesEvents: Bool { body.schedulesEvents }
    /// The type of the event a compound or parallel state's completion raises, by the
    /// state's path, and back: `xstate.done.state.<the state's id>`, as XState v5 names
    /// it, the id being the state's own `id` or the machine's id (`(machine)` when it has
    /// none) and the path, joined with dots (`xstate.done.state.m.foo`).
    var doneEvents: DoneEvents { body.doneEvents }

    struct DoneEvents: Sendable {
        private let types: [[String]: String]
        private let paths: [String: [String]]

        init(paths: some Sequence<[String]>, machineID: String?, stateIDs: [String: [String]]) {
            let named = Dictionary(stateIDs.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
            var types: [[String]: String] = [:]
            for path in paths {
                types[path] = MachineEvent.doneStatePrefix + (named[path] ?? ([machineID ?? "(machine)"] + path).joined(separator: "."))
            }
            self.types = types
            self.paths = Dictionary(types.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        }

        /// The done event's type of the state at `path`.
        func type(of path: [String]) -> String {
            types[path] ?? MachineEvent.doneStatePrefix + path.joined(separator: ".")
        }

        /// The state whose done event `type` is, if any.
        func path(of type: String) -> [String]? { paths[type] }
    }

    /// The fields above, set once (see `body`).
    private final class Body: Sendable {
        let file: String
        let id: String?
        let gears: [String: [String: String]]
        let initialState: MachineState
        let source: [UInt8]
        let nodes: [[String]: StateNode]
        let nodeList: [StateNode]
        let identity: MachineIdentity
        let rootHandlesEvents: Bool
        let hasAlways: Bool
        let documentOrder: [[String]: Int]
        let stepsEveryLeaf: Bool
        let parallelRoot: Bool
        let schedulesEvents: Bool
        let doneEvents: DoneEvents
        let versioning: Versioning

        init(file: String, id: String?, gears: [String: [String: String]], initialState: MachineState, source: [UInt8],
             nodes: [[String]: StateNode], nodeList: [StateNode], identity: MachineIdentity, rootHandlesEvents: Bool,
             hasAlways: Bool, documentOrder: [[String]: Int], stepsEveryLeaf: Bool, parallelRoot: Bool,
             schedulesEvents: Bool, doneEvents: DoneEvents, versioning: Versioning) {
            self.file = file
            self.id = id
            self.gears = gears
            self.initialState = initialState
            self.source = source
            self.nodes = nodes
            self.nodeList = nodeList
            self.identity = identity
            self.rootHandlesEvents = rootHandlesEvents
            self.hasAlways = hasAlways
            self.documentOrder = documentOrder
            self.stepsEveryLeaf = stepsEveryLeaf
            self.parallelRoot = parallelRoot
            self.schedulesEvents = schedulesEvents
            self.doneEvents = doneEvents
            self.versioning = versioning
        }

        /// The same body starting in `initialState`.
        func starting(in initialState: MachineState) -> Body {
            Body(file: file, id: id, gears: gears, initialState: initialState, source: source, nodes: nodes,
                 nodeList: nodeList, identity: identity, rootHandlesEvents: rootHandlesEvents, hasAlways: hasAlways,
                 documentOrder: documentOrder, stepsEveryLeaf: stepsEveryLeaf, parallelRoot: parallelRoot,
                 schedulesEvents: schedulesEvents, doneEvents: doneEvents, versioning: versioning)
        }
    }

    /// The machine's version, how Spins of older versions become Spins of this one, and
    /// the event types its states take (what a pending delayed `raise` carried over from
    /// an older version is checked against).
    struct Versioning: Sendable {
        var version: Int
        var migrations: [Int: MachineMigration]
        var handledEvents: Set<String>
    }
    /// See `Versioning`.
    var versioning: Versioning { body.versioning }

    /// Parses and validates a machine.
    /// - Parameters:
    ///   - json: the JSON text.
    ///   - file: the name issues are reported with (`machines/door.json`).
    ///   - hostGears: the names of the Gears the host provides; every Gear in `gears`
    ///     must be one of them. Nil skips that check.
    /// - Throws: `MachineValidationError` with every issue found.
    public init(json: some Sequence<UInt8>, file: String, hostGears: Set<String>? = nil) throws(MachineValidationError) {
        let bytes = Array(json)
        // A UTF-8 byte order mark is no part of the JSON text (RFC 8259 §8.1 lets a
        // reader ignore it).
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        let document: JSONValue
        do {
            document = try JSONValue(parsing: text)
        } catch {
            let detail = "\(TextPosition(offset: error.offset, in: text)): \(error.reason)"
            throw MachineValidationError(issues: [MachineIssue(file: file, path: "", kind: .syntax(detail))])
        }
        var parser = MachineParser(file: file)
        let parsed = parser.parse(document, hostGears: hostGears)
        guard parser.issues.isEmpty, let parsed else {
            throw MachineValidationError(issues: parser.issues)
        }
        let identity = MachineIdentity()
        let (nodes, nodeList) = Self.planned(parsed.nodes, identity: identity)
        let stepsEveryLeaf = nodes.values.contains { node in
            node.kind == .parallel || !node.initialActions.isEmpty
                || node.transitions.contains { $0.reenter && ($0.targets.contains([]) || node.path.isEmpty) }
        }
        let schedulesEvents = nodes.values.contains { node in
            let transitions = node.transitions
            return (node.entry + node.exit + node.initialActions + transitions.flatMap(\.actions)).contains { action in
                switch action {
                case .raise(_, _, let delay, _): delay != nil
                case .cancel: true
                default: false
                }
            }
        }
        // Started below, with the definition's own steps.
        body = Body(file: file, id: parsed.id, gears: parsed.gears,
                    initialState: MachineState(value: [], context: parsed.context), source: bytes, nodes: nodes,
                    nodeList: nodeList, identity: identity, rootHandlesEvents: !(nodes[[]]?.on.isEmpty ?? true),
                    hasAlways: nodes.values.contains { !$0.always.isEmpty }, documentOrder: parsed.documentOrder,
                    stepsEveryLeaf: stepsEveryLeaf, parallelRoot: nodes[[]]?.kind == .parallel,
                    schedulesEvents: schedulesEvents,
                    doneEvents: DoneEvents(paths: nodes.keys, machineID: parsed.id, stateIDs: parsed.stateIDs),
                    versioning: Versioning(version: parsed.version, migrations: parsed.migrations,
                                           handledEvents: parsed.handledEvents))
        var started: MachineState
        if stepsEveryLeaf {
            started = parallelStart(context: parsed.context)
        } else {
            let raised: [MachineEvent]
            (started, raised) = Self.start(nodes: nodes, context: parsed.context)
            // The initial chain may end in a final state whose parent's `onDone` goes on.
            if hasAlways || !raised.isEmpty || started.step.entered.last.flatMap({ nodes[$0]?.kind }) == .final {
                started = settled(started, after: MachineEvent(type: MachineEvent.initType), raised: raised)
            }
        }
        // The initial state keeps the events its entry actions scheduled (its Spin sends
        // them) and none of its step.
        var step = started.step
        let scheduled = isDone(started) ? [] : Self.scheduled([], after: &step)
        if stepsEveryLeaf {
            body = body.starting(in: MachineState(leaves: started.leaves, context: started.context,
                                                  history: started.history, scheduled: scheduled))
        } else {
            body = body.starting(in: MachineState(shape: leafNode(of: started)?.restingShape
                                                      ?? started.shape.with(step: MachineStep()),
                                                  context: started.context, history: started.history,
                                                  scheduled: scheduled))
        }
    }

    /// Reads, parses and validates the machine in the file at `path`.
    /// - Parameter name: the name issues are reported with; the path when nil.
    public init(contentsOfFile path: String, name: String? = nil, hostGears: Set<String>? = nil) throws(MachineValidationError) {
        let bytes: Data
        do {
            bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw MachineValidationError(issues: [MachineIssue(file: name ?? path, path: "",
                                                               kind: .unreadable("\(error)"))])
        }
        try self.init(json: bytes, file: name ?? path, hostGears: hostGears)
    }

    /// The path of every state from the root (`["door", "opened"]`), sorted.
    public var statePaths: [[String]] {
        nodes.keys.filter { !$0.isEmpty }.sorted { $0.lexicographicallyPrecedes($1) }
    }
}

// MARK: - The parsed form

/// One state of a machine (or the root, path `[]`).
/// A class, not a struct: a look-up in `nodes` then copies one reference, not seven fields.
final class StateNode: Sendable {
    enum Kind: Sendable { case atomic, compound, parallel, final, history }

    let path: [String]
    let kind: Kind
    /// The initial child (compound states and the root).
    let initial: String?
    /// The names of a parallel state's regions, in document order (empty otherwise).
    let regions: [String]
    /// Event type → candidate transitions, first enabled wins.
    let on: [String: [TransitionSpec]]
    /// `on` as a list when it is short: comparing a few short strings costs less than
    /// hashing the event's type.
    /// (Two arrays, read by index: no entry is copied while looking.)
    private let fewTypes: [String]?
    private let fewCandidates: [[TransitionSpec]]
    private static var fewEvents: Int { 4 }

    /// The `"*"` transitions, tried for any event after those of its own type (XState v5's
    /// wildcard); nil when the state has none.
    let wildcard: [TransitionSpec]?

    /// The partial descriptors (`"mouse.*"`) and their transitions, longest first, tried
    /// after the event's own type and before the wildcard (XState v5's order).
    let partials: [(descriptor: String, transitions: [TransitionSpec])]

    /// Every transition of the state: `on`, `after`, `onDone` and `always`.
    var transitions: [TransitionSpec] {
        Array(on.values.joined()) + after.flatMap(\.transitions) + onDone + always
    }

    /// The candidate transitions for events of `type`, if any (not the wildcard's).
    func candidates(for type: String) -> [TransitionSpec]? {
        guard let fewTypes else { return on[type] }
        for index in fewTypes.indices where fewTypes[index] == type { return fewCandidates[index] }
        return nil
    }

    /// Delayed transitions, by delay in ms, ascending.
    let after: [AfterEntry]
    let entry: [MachineAction]
    let exit: [MachineAction]
    /// The transitions taken when a final child of this compound state is entered.
    let onDone: [TransitionSpec]
    /// Eventless transitions (`always`): taken, first enabled, whenever the state is
    /// active after a step, before the next event.
    let always: [TransitionSpec]
    /// A top-level final state under a compound root: entering it completes the machine
    /// (a parallel root completes when every region is done instead).
    let completesMachine: Bool
    /// The actions of an initial transition written as an object (`"initial": {"target":
    /// "a", "actions": [..]}`): run after this state's entry when it is entered by
    /// default (as a target, an initial child or a region), as XState v5 does.
    let initialActions: [MachineAction]
    /// A history state: deep (the leaf last active under its parent) or shallow (that
    /// leaf's child of the parent), and the absolute path entered while its parent has
    /// no record (its `target`, else the parent's initial child).
    let historyDeep: Bool
    let historyDefault: [String]?
    /// A history state without a `target` in a compound state with an `initial`: its
    /// default is the parent's initial transition, so entering it by default enters the
    /// parent by default (the parent's initial actions run), as XState v5 does.
    let historyTakesParentInitial: Bool
    /// A compound state with a history child: leaving it records the active leaf.
    let recordsHistory: Bool
    /// The shape of a state whose leaf this is, made by a transition that enters
    /// nothing and propagates nothing (nil until the machine is planned).
    let restingShape: MachineState.Shape?

    init(path: [String], kind: Kind, initial: String?, on: [String: [TransitionSpec]], after: [AfterEntry],
         entry: [MachineAction], exit: [MachineAction], onDone: [TransitionSpec] = [], always: [TransitionSpec] = [],
         history: (deep: Bool, defaultTarget: [String])? = nil, historyTakesParentInitial: Bool = false,
         recordsHistory: Bool = false,
         restingShape: MachineState.Shape? = nil, regions: [String] = [], initialActions: [MachineAction] = [],
         inParallelRoot: Bool = false) {
        self.regions = regions
        self.initialActions = initialActions
        self.historyDeep = history?.deep ?? false
        self.historyDefault = history?.defaultTarget
        self.historyTakesParentInitial = historyTakesParentInitial
        self.recordsHistory = recordsHistory
        self.onDone = onDone
        self.always = always
        self.completesMachine = kind == .final && path.count == 1 && !inParallelRoot
        self.restingShape = restingShape
        let few = on.count <= Self.fewEvents ? Array(on) : nil
        self.fewTypes = few?.map(\.key)
        self.fewCandidates = few?.map(\.value) ?? []
        self.wildcard = on[MachineEvent.wildcardType]
        self.partials = on.filter { $0.key.hasSuffix(".*") }.map { (descriptor: $0.key, transitions: $0.value) }
            .sorted { ($0.descriptor.count, $1.descriptor) > ($1.descriptor.count, $0.descriptor) }
        self.path = path
        self.kind = kind
        self.initial = initial
        self.on = on
        self.after = after
        self.entry = entry
        self.exit = exit
    }
}

/// The transitions of one `after` key.
struct AfterEntry: Sendable {
    let delay: Int
    let transitions: [TransitionSpec]
}

/// One candidate transition. A class: choosing one copies one reference, not five.
final class TransitionSpec: Sendable {
    /// The absolute path of the target (the first of `targets`); nil for a targetless
    /// (self) transition.
    let target: [String]?
    /// Every target, in the order written: one, or several in different regions of a
    /// parallel state (`"target": ["#a1", "#b2"]`, SCXML's target list); empty without.
    let targets: [[String]]
    /// `"reenter": true`: a target that is the source or inside it exits and re-enters
    /// the source (XState v5); without it such a transition leaves the source active.
    let reenter: Bool
    let actions: [MachineAction]
    let guardCondition: MachineGuard?
    /// What taking it enters, worked out once the machine is loaded (nil: no target).
    /// For a history target, what entering its default target does.
    let plan: TargetPlan?
    /// A history target: its parent and kind, for the plan of what the parent recorded.
    let history: (parent: [String], deep: Bool)?

    init(targets: [[String]], reenter: Bool, actions: [MachineAction], guardCondition: MachineGuard?,
         plan: TargetPlan? = nil, history: (parent: [String], deep: Bool)? = nil) {
        self.history = history
        self.target = targets.first
        self.targets = targets
        self.reenter = reenter
        self.actions = actions
        self.guardCondition = guardCondition
        self.plan = plan
    }
}

/// What a transition with a target does besides its own actions, the same every time
/// it is taken from its source state: worked out when the machine loads, not per event.
/// A class: taking the transition copies one reference.
final class TargetPlan: Sendable {
    /// How many leading path segments stay active: states below that depth are exited.
    let domain: Int
    /// The leaf entered (the target, then its initial children), the paths of the
    /// states entered (outermost first) and the leaf's number, as the new state's shape.
    let shape: MachineState.Shape
    /// Their entry actions, outermost first, as one list (and when the leaf is a
    /// top-level final state, the exit actions of it and of the root after them).
    let entryActions: [MachineAction]
    /// Whether entering the leaf sets off a transition by itself (its parent's `onDone`).
    let settles: Bool

    init(domain: Int, shape: MachineState.Shape, entryActions: [MachineAction], settles: Bool) {
        self.settles = settles
        self.domain = domain
        self.shape = shape
        self.entryActions = entryActions
    }
}

/// One loaded machine, told apart by reference (`===`): a state's hint names the
/// machine whose node list its number indexes.
final class MachineIdentity: Sendable {}

/// Where a state made by `MachineDefinition.transition` found its leaf: the machine
/// and the leaf's number in its `nodeList`. Checked against the state's `value` before use.
struct LeafHint: Sendable {
    let machine: MachineIdentity
    let index: Int
}

/// An action of an `entry`, `exit` or transition `actions` list.
enum MachineAction: Sendable {
    /// `{"type":"assign","set":{key: value form}}`, keys sorted.
    case assign([(key: String, value: ValueForm)])
    /// `{"type":"gear.propagate","gear":g,"event":{"type":t, field: value form}}`.
    case propagate(gear: String, type: String, fields: [(key: String, value: ValueForm)])
    /// `{"type":"raise","event":{"type":t, field: value form},"delay"?:ms,"id"?:s}`: the
    /// event is taken before the next one, or sent to the machine after `delay` ms.
    case raise(type: String, fields: [(key: String, value: ValueForm)], delay: Int?, id: String?)
    /// `{"type":"cancel","id":s}`: the delayed raise with that id is not sent.
    case cancel(id: String)
}

/// How an action computes a value.
enum ValueForm: Sendable {
    case literal(MachineValue)
    case from(Reference)
    /// The current value of the assigned key (0 when it is not a number) plus this.
    case add(Double)
}

/// `event.<path>` or `context.<path>`.
struct Reference: Sendable {
    enum Root: Sendable { case event, context }
    let root: Root
    let path: [String]
}

/// A guard condition.
indirect enum MachineGuard: Sendable {
    enum Comparison: String, Sendable, CaseIterable { case eq, neq, lt, lte, gt, gte }
    enum Operand: Sendable {
        case literal(MachineValue)
        case reference(Reference)
    }

    case compare(Comparison, Operand, Operand)
    case and([MachineGuard])
    case or([MachineGuard])
    case not(MachineGuard)
    /// True while the state at this path (from the root) is active.
    case isIn([String])
}
