/// Turns the JSON of a machine into its parsed form, collecting every issue (it goes on
/// after one, so that a user sees all of them at once). Objects are walked in key order,
/// so issues come in the same order on every run.
struct MachineParser {
    struct Parsed {
        var id: String?
        var context: [String: MachineValue]
        var gears: [String: [String: String]]
        var nodes: [[String]: StateNode]
        /// Each state's place in document order (the root first, a state before its
        /// children, siblings in the order the file writes them).
        var documentOrder: [[String]: Int]
    }

    static let machineKeys: Set<String> = ["id", "type", "initial", "context", "states", "gears", "description",
                                           "on", "entry", "exit", "always"]
    static let stateKeys: Set<String> = ["id", "type", "initial", "states", "on", "entry", "exit", "after", "onDone", "always",
                                         "description"]
    static let transitionKeys: Set<String> = ["target", "actions", "guard", "description", "reenter"]

    let file: String
    /// The order the file writes states in.
    let statesOrder: StatesOrder
    private(set) var issues: [MachineIssue] = []
    /// Every state path declared, known before transitions are parsed (targets may point forward).
    private var declared: Set<[String]> = []
    /// The states that have an `id`, by id: `#id` targets them.
    private var stateIDs: [String: [String]] = [:]
    private var machineID: String?
    /// Gears declared in `gears`.
    private var declaredGears: Set<String> = []
    /// Event types some `on` handles.
    private var handledEvents: Set<String> = []
    /// The ids of delayed `raise` actions, and where each `cancel` names one.
    private var raiseIDs: Set<String> = []
    private var cancels: [(id: String, at: JSONPath)] = []
    /// Where each `raise` names an event type, checked once every `on` is known.
    private var raisedTypes: [(type: String, at: JSONPath)] = []
    /// The paths guards and actions read, checked once every `assign` is known.
    private var references = MachineReferences()
    /// The fields of the event the transitions being parsed see; nil when unknown.
    private var eventFields: Set<String>?

    private var documentOrder: [[String]: Int] = [[]: 0]
    /// Whether the machine's root is parallel (its top-level final states are regions).
    private var parallelRoot = false
    /// Transitions with several targets, checked once every state's kind is known.
    private var targetLists: [(source: [String], targets: [[String]], at: JSONPath)] = []

    init(file: String, statesOrder: StatesOrder) {
        self.file = file
        self.statesOrder = statesOrder
    }

    mutating func parse(_ root: MachineValue, hostGears: Set<String>?) -> Parsed? {
        guard case .object(let machine) = root else {
            issues.append(MachineIssue(file: file, path: "", kind: .notJSON("the top level is not an object")))
            return nil
        }
        checkKeys(machine, allowed: Self.machineKeys, at: JSONPath())
        if let id = machine["id"] {
            machineID = string(id, at: JSONPath().key("id"))
        }
        var context: [String: MachineValue] = [:]
        if let value = machine["context"] {
            if case .object(let members) = value { context = members } else {
                issue(JSONPath().key("context"), .expected("an object"))
            }
        }
        let gears = parseGears(machine["gears"], hostGears: hostGears)

        let statesObject = objectMembers(machine["states"], at: JSONPath().key("states")) ?? [:]
        declare(statesObject, under: [], at: JSONPath().key("states"))
        var nodes: [[String]: StateNode] = [:]
        // `"type": "parallel"` at the top: the top-level states are regions (XState v5).
        var rootKind = StateNode.Kind.compound
        if let type = machine["type"].flatMap({ string($0, at: JSONPath().key("type")) }) {
            switch type {
            case "parallel":
                rootKind = .parallel
                if regionNames(statesObject, under: []).isEmpty {
                    issue(JSONPath().key("states"), .badValue("a parallel state has its regions in \"states\""))
                }
            case "compound": break
            default: issue(JSONPath().key("type"), .badValue("the machine's type is \"parallel\" or \"compound\""))
            }
        }
        parallelRoot = rootKind == .parallel
        var rootInitial: (name: String?, actions: [MachineAction]) = (nil, [])
        if rootKind == .compound {
            rootInitial = parseInitial(machine["initial"], children: statesObject, parent: [], at: JSONPath())
        } else if machine["initial"] != nil {
            issue(JSONPath().key("initial"), .unknownKey)
        }
        nodes[[]] = StateNode(path: [], kind: rootKind, initial: rootInitial.name,
                              on: parseOn(machine["on"], source: [], at: JSONPath().key("on")), after: [],
                              entry: parseActions(machine["entry"], at: JSONPath().key("entry")),
                              exit: parseActions(machine["exit"], at: JSONPath().key("exit")),
                              always: parseAlways(machine["always"], source: [], at: JSONPath().key("always")),
                              regions: rootKind == .parallel ? regionNames(statesObject, under: []) : [],
                              initialActions: rootInitial.actions)
        parseStates(statesObject, under: [], at: JSONPath().key("states"), into: &nodes)

        for (id, at) in cancels where !raiseIDs.contains(id) { issue(at, .unknownRaiseID(id)) }
        for (type, at) in raisedTypes where !handles(type) { issue(at, .unhandledEvent(type)) }
        // A wildcard handles every event a Gear could bring.
        for (name, catches) in gears.sorted(by: { $0.key < $1.key }) {
            for (gearType, eventType) in catches.sorted(by: { $0.key < $1.key }) where !handles(eventType) {
                issue(JSONPath().key("gears").key(name).key("catch").key(gearType), .unhandledEvent(eventType))
            }
        }
        // Unreachable states are looked for only in a machine whose structure holds: a
        // wrong target would make others unreachable too.
        checkTargetLists(nodes)
        let structureHolds = issues.isEmpty
        issues += references.issues(file: file, context: context)
        if structureHolds {
            checkReachability(nodes)
            checkEventlessLoops(nodes)
        }
        return Parsed(id: machineID, context: context, gears: gears, nodes: nodes, documentOrder: documentOrder)
    }

    // MARK: States

    private mutating func declare(_ states: [String: MachineValue], under parent: [String], at path: JSONPath) {
        for name in statesOrder.names(states, under: parent) {
            let value = states[name]!
            declared.insert(parent + [name])
            if case .object(let members) = value, case .string(let id)? = members["id"] {
                if stateIDs[id] != nil || id == machineID {
                    issue(path.key(name).key("id"), .duplicateID(id))
                } else {
                    stateIDs[id] = parent + [name]
                }
            }
            if case .object(let members) = value, case .object(let children)? = members["states"] {
                declare(children, under: parent + [name], at: path.key(name).key("states"))
            }
        }
    }

    /// - Parameter deepHistoryAbove: whether a state above has a deep history
    ///   child: then every region below records its leaf when left, so that the deep
    ///   history restores each region (`MachineDefinition+Parallel`, `effectiveTargets`).
    private mutating func parseStates(_ states: [String: MachineValue], under parent: [String], at path: JSONPath,
                                      into nodes: inout [[String]: StateNode], deepHistoryAbove: Bool = false) {
        for name in statesOrder.names(states, under: parent) {
            let statePath = parent + [name]
            let at = path.key(name)
            documentOrder[statePath] = documentOrder.count
            guard let members = objectMembers(states[name], at: at) else { continue }
            if case .string("history")? = members["type"] {
                nodes[statePath] = parseHistory(members, at: statePath, under: nodes[parent], json: at)
                continue
            }
            checkKeys(members, allowed: Self.stateKeys, at: at)
            if let id = members["id"] { _ = string(id, at: at.key("id")) }
            let children = members["states"].flatMap { objectMembers($0, at: at.key("states")) } ?? [:]
            var kind: StateNode.Kind = children.isEmpty ? .atomic : .compound
            if let type = members["type"].flatMap({ string($0, at: at.key("type")) }) {
                switch type {
                case "final":
                    kind = .final
                    if members["on"] != nil || members["after"] != nil || members["states"] != nil {
                        issue(at, .finalWithTransitions)
                    }
                case "parallel":
                    kind = .parallel
                    // A history child is no region: a parallel state needs one other child at least.
                    if regionNames(children, under: statePath).isEmpty {
                        issue(at.key("states"), .badValue("a parallel state has its regions in \"states\""))
                    }
                case "atomic", "compound": break
                default: issue(at.key("type"), .unknownStateType(type))
                }
            }
            let initial = kind == .compound ? parseInitial(members["initial"], children: children, parent: statePath, at: at)
                : (name: nil, actions: [])
            // A state with a history child records its (first) leaf when left; so does every
            // region below a deep history, for the deep history to restore each region.
            let historyChildren = children.values.compactMap { child -> Bool? in
                guard case .object(let members) = child, case .string("history")? = members["type"] else { return nil }
                return members["history"] == .string("deep")
            }
            let inRegion = nodes[parent]?.kind == .parallel
            let recordsHistory = ((kind == .compound || kind == .parallel) && !historyChildren.isEmpty) || (inRegion && deepHistoryAbove)
            if kind != .compound, members["initial"] != nil { issue(at.key("initial"), .unknownKey) }
            let nested = kind == .compound || kind == .parallel
            if !nested, members["onDone"] != nil { issue(at.key("onDone"), .unknownKey) }
            if kind == .final, members["always"] != nil { issue(at, .finalWithTransitions) }
            var onDone: [TransitionSpec] = []
            if nested, let value = members["onDone"] {
                eventFields = ["type"]
                onDone = parseTransitions(value, source: statePath, at: at.key("onDone"))
                eventFields = nil
            }
            nodes[statePath] = StateNode(
                path: statePath, kind: kind, initial: initial.name,
                on: parseOn(members["on"], source: statePath, at: at.key("on")),
                after: parseAfter(members["after"], source: statePath, at: at.key("after")),
                entry: parseActions(members["entry"], at: at.key("entry")),
                exit: parseActions(members["exit"], at: at.key("exit")), onDone: onDone,
                always: parseAlways(members["always"], source: statePath, at: at.key("always")),
                recordsHistory: recordsHistory,
                regions: kind == .parallel ? regionNames(children, under: statePath) : [], initialActions: initial.actions,
                inParallelRoot: parallelRoot)
            if nested {
                parseStates(children, under: statePath, at: at.key("states"), into: &nodes,
                            deepHistoryAbove: deepHistoryAbove || historyChildren.contains(true))
            }
        }
    }

    /// `{"type":"history","history":"shallow"|"deep","target"?:..}`: a pseudo-state of a
    /// compound state; a transition to it enters what its parent recorded when last left,
    /// else its `target` (else the parent's initial child).
    private mutating func parseHistory(_ members: [String: MachineValue], at statePath: [String], under parent: StateNode?,
                                       json at: JSONPath) -> StateNode? {
        checkKeys(members, allowed: ["type", "history", "target", "id", "description"], at: at)
        guard statePath.count > 1, let parent else {
            issue(at.key("type"), .badValue("a history state belongs to a compound state, not to the machine's root"))
            return nil
        }
        guard parent.kind == .compound || parent.kind == .parallel else { return nil }
        var deep = false
        if let value = members["history"] {
            switch value {
            case .string("shallow"): deep = false
            case .string("deep"): deep = true
            default: issue(at.key("history"), .expected("\"shallow\" or \"deep\""))
            }
        }
        // A parallel state's history enters every region (its `regions`) when it has no record.
        var target = parent.initial.map { parent.path + [$0] } ?? (parent.kind == .parallel ? parent.path : nil)
        let takesParentInitial = members["target"] == nil && parent.initial != nil
        if let value = members["target"], let name = string(value, at: at.key("target")) {
            target = resolve(name, from: statePath, at: at.key("target"))
            if let resolved = target, !(resolved.count > parent.path.count && resolved.starts(with: parent.path)) {
                issue(at.key("target"), .badValue("a history state's target is inside its parent"))
            }
        }
        return StateNode(path: statePath, kind: .history, initial: nil, on: [:], after: [], entry: [], exit: [],
                         history: target.map { (deep, $0) }, historyTakesParentInitial: takesParentInitial)
    }

    /// `"initial": "a"`, or XState v5's initial transition `{"target": "a", "actions": [..]}`
    /// whose actions run when the state is entered by default.
    private mutating func parseInitial(_ value: MachineValue?, children: [String: MachineValue], parent: [String],
                                       at path: JSONPath) -> (name: String?, actions: [MachineAction]) {
        guard let value else {
            issue(path.key("initial"), .missingInitial)
            return (nil, [])
        }
        var at = path.key("initial")
        var actions: [MachineAction] = []
        var target = value
        if case .object(let members) = value {
            checkKeys(members, allowed: ["target", "actions", "description"], at: at)
            actions = parseActions(members["actions"], at: at.key("actions"))
            at = at.key("target")
            guard let written = members["target"] else {
                issue(at, .missingInitial)
                return (nil, actions)
            }
            target = written
        }
        guard let name = string(target, at: at) else { return (nil, actions) }
        guard children[name] != nil else {
            issue(at, .unknownState(name))
            return (nil, actions)
        }
        return (name, actions)
    }

    /// A parallel state's regions: its children but history states, in document order.
    private func regionNames(_ children: [String: MachineValue], under parent: [String]) -> [String] {
        statesOrder.names(children, under: parent).filter { name in
            if case .object(let members)? = children[name], case .string("history")? = members["type"] { return false }
            return true
        }
    }

    // MARK: Transitions

    private mutating func parseOn(_ value: MachineValue?, source: [String], at path: JSONPath) -> [String: [TransitionSpec]] {
        guard let value, let members = objectMembers(value, at: path) else { return [:] }
        var on: [String: [TransitionSpec]] = [:]
        for type in members.keys.sorted() {
            if type.hasPrefix(MachineEvent.reservedPrefix) {
                issue(path.key(type), .reservedEvent(type))
                continue
            }
            // `*` is the wildcard, or the last name of a partial descriptor (`mouse.*`); elsewhere
            // XState v5 does not match it either.
            if type != MachineEvent.wildcardType, type.contains("*"),
               !(type.hasSuffix(".*") && type.count > 2 && !type.dropLast(2).contains("*")) {
                issue(path.key(type), .badValue("\"*\" is the wildcard alone or the last name of a descriptor, as in \"mouse.*\""))
                continue
            }
            handledEvents.insert(type)
            on[type] = parseTransitions(members[type]!, source: source, at: path.key(type))
        }
        return on
    }

    /// Whether some `on` takes events of `type`: by that key, a partial descriptor that
    /// matches it (`"mouse.*"`), or the wildcard.
    private func handles(_ type: String) -> Bool {
        handledEvents.contains(type) || handledEvents.contains(MachineEvent.wildcardType)
            || handledEvents.contains { $0.hasSuffix(".*") && MachineEvent.partialDescriptor($0, matches: type) }
    }

    private mutating func parseAfter(_ value: MachineValue?, source: [String], at path: JSONPath) -> [AfterEntry] {
        guard let value, let members = objectMembers(value, at: path) else { return [] }
        var entries: [AfterEntry] = []
        for key in members.keys.sorted() {
            guard key.allSatisfy(\.isASCII), let delay = Int(key), delay > 0, !key.hasPrefix("+") else {
                issue(path.key(key), .badDelay(key))
                continue
            }
            eventFields = MachineReferences.afterEventFields
            entries.append(AfterEntry(delay: delay, transitions: parseTransitions(members[key]!, source: source, at: path.key(key))))
            eventFields = nil
        }
        return entries.sorted { $0.delay < $1.delay }
    }

    /// A target string, a transition object, or an array of transition objects.
    private mutating func parseTransitions(_ value: MachineValue, source: [String], at path: JSONPath) -> [TransitionSpec] {
        switch value {
        case .string(let target):
            return [TransitionSpec(targets: resolve(target, from: source, at: path).map { [$0] } ?? [], reenter: false,
                                   actions: [], guardCondition: nil)]
        case .object:
            return parseTransition(value, source: source, at: path).map { [$0] } ?? []
        case .array(let elements):
            return elements.enumerated().compactMap { index, element in
                parseTransition(element, source: source, at: path.index(index))
            }
        default:
            issue(path, .expected("a target state, a transition object or an array of them"))
            return []
        }
    }

    private mutating func parseTransition(_ value: MachineValue, source: [String], at path: JSONPath) -> TransitionSpec? {
        guard let members = objectMembers(value, at: path) else { return nil }
        checkKeys(members, allowed: Self.transitionKeys, at: path)
        var targets: [[String]] = []
        if case .array(let names)? = members["target"] {
            // Several targets, one per region of a parallel state (SCXML's target list).
            if names.isEmpty { issue(path.key("target"), .expected("a target state or a non-empty array of them")) }
            for (index, value) in names.enumerated() {
                if let name = string(value, at: path.key("target").index(index)),
                   let target = resolve(name, from: source, at: path.key("target").index(index)) {
                    targets.append(target)
                }
            }
            if names.count > 1 { targetLists.append((source, targets, path.key("target"))) }
        } else if let value = members["target"], let name = string(value, at: path.key("target")) {
            targets = resolve(name, from: source, at: path.key("target")).map { [$0] } ?? []
        }
        var reenter = false
        if let value = members["reenter"] {
            if case .bool(let flag) = value { reenter = flag } else { issue(path.key("reenter"), .expected("true or false")) }
        }
        return TransitionSpec(targets: targets, reenter: reenter,
                              actions: parseActions(members["actions"], at: path.key("actions")),
                              guardCondition: members["guard"].flatMap { parseGuard($0, at: path.key("guard")) })
    }

    /// Target forms: `sibling` (or `sibling.child`), `.child` of the source, `#id` (or
    /// `#id.child`) for the state whose `id` that is, `#a.b` from the root (`#<machine
    /// id>.a.b` too, as XState writes it).
    private mutating func resolve(_ target: String, from source: [String], at path: JSONPath) -> [String]? {
        func split(_ text: Substring) -> [String] { text.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
        var candidates: [[String]] = []
        if target.hasPrefix("#") {
            let absolute = split(target.dropFirst())
            if let first = absolute.first, let identified = stateIDs[first] {
                candidates.append(identified + absolute.dropFirst())
            }
            candidates.append(absolute)
            if let machineID, absolute.first == machineID { candidates.append(Array(absolute.dropFirst())) }
        } else if target.hasPrefix(".") {
            candidates = [source + split(target.dropFirst())]
        } else {
            candidates = [source.dropLast() + split(target[...])]
        }
        // `#<machine id>` alone is the root (XState's wordMachine resets with `#word`).
        guard let found = candidates.first(where: { declared.contains($0) || ($0.isEmpty && machineID != nil) }) else {
            issue(path, .unknownState(target))
            return nil
        }
        return found
    }

    /// `always`: a target, a transition object or an array of them, as in `on`.
    private mutating func parseAlways(_ value: MachineValue?, source: [String], at path: JSONPath) -> [TransitionSpec] {
        guard let value else { return [] }
        return parseTransitions(value, source: source, at: path)
    }

    // MARK: Actions

    private mutating func parseActions(_ value: MachineValue?, at path: JSONPath) -> [MachineAction] {
        guard let value else { return [] }
        guard case .array(let elements) = value else {
            issue(path, .expected("an array of actions"))
            return []
        }
        return elements.enumerated().compactMap { index, element in parseAction(element, at: path.index(index)) }
    }

    private mutating func parseAction(_ value: MachineValue, at path: JSONPath) -> MachineAction? {
        guard case .object(let members) = value, case .string(let type)? = members["type"] else {
            issue(path, .unknownAction("an action is an object with a \"type\": \"assign\", \"gear.propagate\", \"raise\" or \"cancel\""))
            return nil
        }
        switch type {
        case "assign":
            guard Set(members.keys) == ["type", "set"], case .object(let set)? = members["set"] else {
                issue(path, .unknownAction("\"assign\" takes exactly \"set\": an object of context keys"))
                return nil
            }
            for key in set.keys { references.assign(key) }
            return .assign(set.keys.sorted().compactMap { key in
                parseValueForm(set[key]!, allowsAdd: true, at: path.key("set").key(key)).map { (key, $0) }
            })
        case "gear.propagate":
            guard Set(members.keys) == ["type", "gear", "event"], case .string(let gear)? = members["gear"],
                  case .object(var event)? = members["event"], case .string(let eventType)? = event.removeValue(forKey: "type") else {
                issue(path, .unknownAction("\"gear.propagate\" takes \"gear\" (a name) and \"event\" (an object with a string \"type\")"))
                return nil
            }
            if !declaredGears.contains(gear) { issue(path.key("gear"), .undeclaredGear(gear)) }
            return .propagate(gear: gear, type: eventType, fields: event.keys.sorted().compactMap { key in
                parseValueForm(event[key]!, allowsAdd: false, at: path.key("event").key(key)).map { (key, $0) }
            })
        case "raise":
            return parseRaise(members, at: path)
        case "cancel":
            guard Set(members.keys) == ["type", "id"], case .string(let id)? = members["id"] else {
                issue(path, .unknownAction("\"cancel\" takes \"id\": the id of a delayed \"raise\""))
                return nil
            }
            cancels.append((id, path.key("id")))
            return .cancel(id: id)
        default:
            issue(path.key("type"), .unknownAction("\"\(type)\" is not \"assign\", \"gear.propagate\", \"raise\" or \"cancel\""))
            return nil
        }
    }

    /// `{"type":"raise","event":{"type":t, ..},"delay"?:ms,"id"?:s}`.
    private mutating func parseRaise(_ members: [String: MachineValue], at path: JSONPath) -> MachineAction? {
        guard Set(members.keys).isSubset(of: ["type", "event", "delay", "id"]), case .object(var event)? = members["event"],
              case .string(let eventType)? = event.removeValue(forKey: "type") else {
            issue(path, .unknownAction("\"raise\" takes \"event\" (an object with a string \"type\"), and \"delay\" (ms) and \"id\" if it waits"))
            return nil
        }
        if eventType.hasPrefix(MachineEvent.reservedPrefix) {
            issue(path.key("event").key("type"), .reservedEvent(eventType))
        } else {
            raisedTypes.append((eventType, path.key("event").key("type")))
        }
        var delay: Int?
        if let value = members["delay"] {
            guard case .number(let number) = value, number >= 0, number == number.rounded(), number < 1e9 else {
                var written = "\(value)"
                if case .number(let number) = value, number.isFinite, abs(number) < 1e15 {
                    written = number == number.rounded() ? String(Int(number)) : String(number)
                }
                issue(path.key("delay"), .badDelay(written, orZero: true))
                return nil
            }
            delay = Int(number)
        }
        var id: String?
        if let value = members["id"] {
            id = string(value, at: path.key("id"))
            if let id { raiseIDs.insert(id) }
        }
        return .raise(type: eventType, fields: event.keys.sorted().compactMap { key in
            parseValueForm(event[key]!, allowsAdd: false, at: path.key("event").key(key)).map { (key, $0) }
        }, delay: delay, id: id)
    }

    private mutating func parseValueForm(_ value: MachineValue, allowsAdd: Bool, at path: JSONPath) -> ValueForm? {
        guard case .object(let members) = value, members.count == 1, let (key, inner) = members.first else {
            return .literal(value)
        }
        switch key {
        case "from":
            guard case .string(let text) = inner, let reference = Self.reference(text) else {
                let meant = inner.stringValue.flatMap { MachineReferences.meantPath($0) }.map { "; did you mean \"\($0)\"?" }
                issue(path.key("from"), .badValue("\"from\" reads \"event.<path>\" or \"context.<path>\"" + (meant ?? "")))
                return nil
            }
            references.read(reference, at: path.key("from"), eventFields: eventFields)
            return .from(reference)
        case "add":
            guard allowsAdd else {
                issue(path, .badValue("\"add\" is only for assign"))
                return nil
            }
            guard case .number(let amount) = inner else {
                issue(path.key("add"), .badValue("\"add\" takes a number"))
                return nil
            }
            return .add(amount)
        case "literal":
            return .literal(inner)
        default:
            return .literal(value)
        }
    }

    static func reference(_ text: String) -> Reference? {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let root: Reference.Root
        switch segments.first {
        case "event": root = .event
        case "context": root = .context
        default: return nil
        }
        let path = Array(segments.dropFirst())
        guard !path.contains("") else { return nil }
        return Reference(root: root, path: path)
    }

    // MARK: Guards

    private mutating func parseGuard(_ value: MachineValue, at path: JSONPath) -> MachineGuard? {
        let forms = "a guard is one of {\"eq\"|\"neq\"|\"lt\"|\"lte\"|\"gt\"|\"gte\": [a, b]}, {\"and\"|\"or\": [guards]}, {\"not\": guard}, {\"in\": \"state\"}"
        guard case .object(let members) = value, members.count == 1, let (key, inner) = members.first else {
            issue(path, .unknownGuard(forms))
            return nil
        }
        let at = path.key(key)
        if let comparison = MachineGuard.Comparison(rawValue: key) {
            guard case .array(let operands) = inner, operands.count == 2 else {
                issue(at, .unknownGuard("\"\(key)\" takes an array of two operands"))
                return nil
            }
            guard let lhs = parseOperand(operands[0], at: at.index(0)),
                  let rhs = parseOperand(operands[1], at: at.index(1)) else { return nil }
            return .compare(comparison, lhs, rhs)
        }
        switch key {
        case "and", "or":
            guard case .array(let elements) = inner, !elements.isEmpty else {
                issue(at, .unknownGuard("\"\(key)\" takes a non-empty array of guards"))
                return nil
            }
            let guards = elements.enumerated().compactMap { index, element in parseGuard(element, at: at.index(index)) }
            guard guards.count == elements.count else { return nil }
            return key == "and" ? .and(guards) : .or(guards)
        case "not":
            return parseGuard(inner, at: at).map(MachineGuard.not)
        case "in":
            guard case .string(let name) = inner else {
                issue(at, .unknownGuard("\"in\" takes a state path from the root, such as \"a.b\""))
                return nil
            }
            var statePath = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            // `#id` (or `#id.child`) names a state by its `id`, as XState's `stateIn("#id")` does.
            if name.hasPrefix("#"), let first = statePath.first, let identified = stateIDs[String(first.dropFirst())] {
                statePath = identified + statePath.dropFirst()
            }
            guard declared.contains(statePath) else {
                issue(at, .unknownState(name))
                return nil
            }
            return .isIn(statePath)
        default:
            issue(path, .unknownGuard(forms))
            return nil
        }
    }

    private mutating func parseOperand(_ value: MachineValue, at path: JSONPath) -> MachineGuard.Operand? {
        switch value {
        case .string(let text) where text.hasPrefix("event.") || text.hasPrefix("context.") || text == "event" || text == "context":
            guard let reference = Self.reference(text) else {
                issue(path, .badValue("\"\(text)\" is not a path: use {\"literal\": ...} for such a string"))
                return nil
            }
            references.read(reference, at: path, eventFields: eventFields)
            return .reference(reference)
        case .string(let text):
            references.string(text, at: path)
            return .literal(value)
        case .object(let members):
            guard members.count == 1, let literal = members["literal"] else {
                issue(path, .badValue("an operand is \"event.<path>\", \"context.<path>\", a literal or {\"literal\": x}"))
                return nil
            }
            return .literal(literal)
        default:
            return .literal(value)
        }
    }

    // MARK: Gears

    private mutating func parseGears(_ value: MachineValue?, hostGears: Set<String>?) -> [String: [String: String]] {
        let path = JSONPath().key("gears")
        guard let value, let members = objectMembers(value, at: path) else { return [:] }
        var gears: [String: [String: String]] = [:]
        for name in members.keys.sorted() {
            let at = path.key(name)
            declaredGears.insert(name)
            if let hostGears, !hostGears.contains(name) { issue(at, .unknownGear(name)) }
            guard let gear = objectMembers(members[name], at: at) else { continue }
            checkKeys(gear, allowed: ["catch", "description"], at: at)
            var catches: [String: String] = [:]
            if let value = gear["catch"], let mapping = objectMembers(value, at: at.key("catch")) {
                for gearType in mapping.keys.sorted() {
                    if let eventType = string(mapping[gearType]!, at: at.key("catch").key(gearType)) {
                        catches[gearType] = eventType
                    }
                }
            }
            gears[name] = catches
        }
        return gears
    }

    // MARK: Reachability

    /// Every state must be entered by the initial chain or some transition (entering a
    /// state enters its ancestors and its initial descendants). A final state nothing
    /// enters is allowed: it documents where the machine would end.
    private mutating func checkReachability(_ nodes: [[String]: StateNode]) {
        var reached: Set<[String]> = [[]]
        var queue: [[String]] = [[]]  // the root: its `on` and `always` enter states too
        func enter(_ path: [String]) {
            for length in 0...path.count where reached.insert(Array(path.prefix(length))).inserted {
                let prefix = Array(path.prefix(length))
                queue.append(prefix)
                // A state inside a parallel state is entered with the other regions.
                for region in nodes[prefix]?.regions ?? [] where length == path.count || region != path[length] {
                    enter(prefix + [region])
                }
            }
            if let initial = nodes[path]?.initial { enter(path + [initial]) }
            if let target = nodes[path]?.historyDefault { enter(target) }
            for region in nodes[path]?.regions ?? [] { enter(path + [region]) }
        }
        enter([])
        while let path = queue.popLast() {
            guard let node = nodes[path] else { continue }
            for target in node.transitions.flatMap(\.targets) { enter(target) }
            if let initial = node.initial { enter(path + [initial]) }
        }
        let unreached = nodes.keys.filter { path in
            !reached.contains(path) && reached.contains(Array(path.dropLast())) && nodes[path]?.kind != .final
                && nodes[path]?.kind != .history
        }
        for path in unreached.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            issue(path.reduce(JSONPath()) { $0.key("states").key($1) }, .unreachableState)
        }
    }

    // MARK: Target lists

    /// The targets of one transition must be in different regions of a parallel state
    /// (SCXML: a legal configuration): not two in one region, not one inside another.
    private mutating func checkTargetLists(_ nodes: [[String]: StateNode]) {
        for (_, targets, at) in targetLists {
            for (index, target) in targets.enumerated() {
                for earlier in targets[..<index] {
                    let common = Array(zip(earlier, target).prefix { $0 == $1 }.map { $0.0 })
                    let describe = { (path: [String]) in "\"\(path.joined(separator: "."))\"" }
                    if common.count == min(earlier.count, target.count) {
                        issue(at.index(index), .badValue("targets conflict: \(describe(earlier)) and \(describe(target)) "
                            + "are one inside the other; several targets are in different regions of a parallel state"))
                    } else if nodes[common]?.kind != .parallel {
                        issue(at.index(index), .badValue("targets conflict: \(describe(earlier)) and \(describe(target)) "
                            + "are in the same region; several targets are in different regions of a parallel state"))
                    }
                }
            }
        }
    }

    // MARK: Eventless loops

    /// An `always` transition without a guard is taken whenever its state is active. One
    /// without a target, or a chain of them that comes back to where it started, would
    /// be taken again and again: an issue where it can be seen here (one with guards can
    /// only be caught when it runs, by `MachineDefinition.microstepLimit`).
    private mutating func checkEventlessLoops(_ nodes: [[String]: StateNode]) {
        /// The `always` transition taken for sure where `leaf` is the active leaf: the
        /// first of the innermost active state that has any, when it has no guard.
        func certain(at leaf: [String]) -> (source: [String], spec: TransitionSpec)? {
            for length in stride(from: leaf.count, through: 0, by: -1) {
                let path = Array(leaf.prefix(length))
                guard let first = nodes[path]?.always.first else { continue }
                return first.guardCondition == nil ? (path, first) : nil
            }
            return nil
        }
        for start in nodes.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            guard let first = nodes[start]?.always.first, first.guardCondition == nil else { continue }
            let at = start.reduce(JSONPath()) { $0.key("states").key($1) }.key("always")
            var spec = first
            var visited: Set<[String]> = [start]
            var round = [start]
            while true {
                guard let target = spec.target else {
                    issue(at, .eventlessLoop("an \"always\" transition without guard or target is taken again and again"))
                    break
                }
                var leaf = target
                while let initial = nodes[leaf]?.initial { leaf.append(initial) }
                guard let next = certain(at: leaf) else { break }
                if next.source == start {
                    let names = (round + [start]).map { $0.isEmpty ? "(root)" : $0.joined(separator: ".") }
                    issue(at, .eventlessLoop("\"always\" transitions without guards go round \(names.joined(separator: " → "))"))
                    break
                }
                round.append(next.source)
                // A loop that does not come back here is reported from a state on it.
                guard visited.insert(next.source).inserted else { break }
                spec = next.spec
            }
        }
    }

    // MARK: Helpers

    private mutating func issue(_ path: JSONPath, _ kind: MachineIssue.Kind) {
        issues.append(MachineIssue(file: file, path: path.text, kind: kind))
    }

    private mutating func checkKeys(_ members: [String: MachineValue], allowed: Set<String>, at path: JSONPath) {
        for key in members.keys.sorted() where !allowed.contains(key) {
            issue(path.key(key), .unknownKey)
        }
    }

    private mutating func objectMembers(_ value: MachineValue?, at path: JSONPath) -> [String: MachineValue]? {
        guard let value else { return nil }
        guard case .object(let members) = value else {
            issue(path, .expected("an object"))
            return nil
        }
        return members
    }

    private mutating func string(_ value: MachineValue, at path: JSONPath) -> String? {
        guard case .string(let text) = value else {
            issue(path, .expected("a string"))
            return nil
        }
        return text
    }
}

/// A JSON path as issues print it: `states.locked.on.UNLOCK[0].target`.
struct JSONPath {
    private(set) var text = ""

    /// `a.b` for a plain key; a key that is empty or holds anything but letters, digits,
    /// `_` and `-` (a delay `"0.5"`, an event type with a dot) is quoted, `a["0.5"]`, so
    /// the path reads one way only.
    func key(_ name: String) -> JSONPath {
        let plain = !name.isEmpty && name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
        }
        if plain { return JSONPath(text: text.isEmpty ? name : "\(text).\(name)") }
        let quoted = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return JSONPath(text: "\(text)[\"\(quoted)\"]")
    }

    func index(_ index: Int) -> JSONPath {
        JSONPath(text: "\(text)[\(index)]")
    }
}
