import SpinJSON

/// The parser's reading of states (their names, kinds, initial children, history
/// states and regions) and of the machine's `gears`.
extension MachineParser {
    // MARK: States

    /// The names in each `states` object of `document` in the order written, by the path
    /// of the state that holds it (the root: `[]`): XState's document order, which decides
    /// the order of a parallel state's regions (their entry and exit actions, which
    /// region's transition wins a conflict). `MachineValue` keeps no member order.
    static func orderOfStates(in document: JSONValue) -> [[String]: [String]] {
        var orders: [[String]: [String]] = [:]
        func visit(_ state: JSONValue, at path: [String]) {
            guard case .object(let members) = state,
                  case .object(let states)? = members.first(where: { $0.key == "states" })?.value else { return }
            orders[path] = states.map(\.key)
            for (name, child) in states { visit(child, at: path + [name]) }
        }
        visit(document, at: [])
        return orders
    }

    /// The names of `states`, the `states` object of the state at `parent` (the root:
    /// `[]`), in the order the file writes them.
    func stateNames(_ states: [String: MachineValue], under parent: [String]) -> [String] {
        guard let order = statesOrder[parent], order.count == states.count, order.allSatisfy({ states[$0] != nil }) else {
            return states.keys.sorted()
        }
        return order
    }

    mutating func declare(_ states: [String: MachineValue], under parent: [String], at path: JSONPath) {
        for name in stateNames(states, under: parent) {
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
    mutating func parseStates(_ states: [String: MachineValue], under parent: [String], at path: JSONPath,
                                      into nodes: inout [[String]: StateNode], deepHistoryAbove: Bool = false) {
        for name in stateNames(states, under: parent) {
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
            if kind != .compound, members["initial"] != nil {
                issue(at.key("initial"), .initialNotTaken(kind == .parallel ? Self.parallelTakesNoInitial
                    : kind == .final ? "a final state has no child states"
                    : "this state has no \"states\", so there is no child to start in"))
            }
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
    mutating func parseHistory(_ members: [String: MachineValue], at statePath: [String], under parent: StateNode?,
                                       json at: JSONPath) -> StateNode? {
        checkKeys(members, allowed: ["type", "history", "target", "id", "description"], at: at)
        // One at the top belongs to the root (XState v5 lets the machine start in one: its target).
        guard let parent, parent.kind == .compound || parent.kind == .parallel else { return nil }
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
    mutating func parseInitial(_ value: MachineValue?, children: [String: MachineValue], parent: [String],
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
            issue(at, .unknownState(name, suggestion: MachineReferences.nearest(name, among: children.keys.sorted())))
            return (nil, actions)
        }
        return (name, actions)
    }

    /// A parallel state's regions: its children but history states, in document order.
    func regionNames(_ children: [String: MachineValue], under parent: [String]) -> [String] {
        stateNames(children, under: parent).filter { name in
            if case .object(let members)? = children[name], case .string("history")? = members["type"] { return false }
            return true
        }
    }

    // MARK: Gears

    mutating func parseGears(_ value: MachineValue?, hostGears: Set<String>?) -> [String: [String: String]] {
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
}
