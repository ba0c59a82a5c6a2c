import SpinJSON

/// Turns the JSON of a machine into its parsed form, collecting every issue (it goes on
/// after one, so that a user sees all of them at once). Objects are walked in key order,
/// so issues come in the same order on every run; states in the order the file writes
/// them. What it reads of states, transitions and actions, and what it checks once
/// every state is read, are in `MachineParser+States`, `+Transitions`, `+Actions` and
/// `+Checks`.
struct MachineParser {
    struct Parsed {
        var id: String?
        var context: [String: MachineValue]
        var gears: [String: [String: String]]
        var nodes: [[String]: StateNode]
        /// Each state's place in document order (the root first, a state before its
        /// children, siblings in the order the file writes them).
        var documentOrder: [[String]: Int]
        /// The states that have an `id`, by id.
        var stateIDs: [String: [String]]
        /// `version` (1 when the file has none) and `migrations`.
        var version: Int
        var migrations: [Int: MachineMigration]
        /// The event types some `on` takes.
        var handledEvents: Set<String>
    }

    static let machineKeys: Set<String> = ["id", "type", "initial", "context", "states", "gears", "description",
                                           "on", "entry", "exit", "always", "version", "migrations"]
    static let parallelTakesNoInitial = "a parallel state enters all of its regions at once, so it names no initial state"
    static let stateKeys: Set<String> = ["id", "type", "initial", "states", "on", "entry", "exit", "after", "onDone", "always",
                                         "description"]
    static let transitionKeys: Set<String> = ["target", "actions", "guard", "description", "reenter"]

    let file: String
    /// The names in each `states` object in the order the file writes them, by the path
    /// of the state that holds it (the root: `[]`).
    private(set) var statesOrder: [[String]: [String]] = [:]
    private(set) var issues: [MachineIssue] = []
    /// Every state path declared, known before transitions are parsed (targets may point forward).
    var declared: Set<[String]> = []
    /// The states that have an `id`, by id: `#id` targets them.
    var stateIDs: [String: [String]] = [:]
    var machineID: String?
    /// Gears declared in `gears`.
    var declaredGears: Set<String> = []
    /// Event types some `on` handles.
    var handledEvents: Set<String> = []
    /// Where each `raise` names an event type, checked once every `on` is known.
    var raisedTypes: [(type: String, at: JSONPath)] = []
    /// The paths guards and actions read, checked once every `assign` is known.
    var references = MachineReferences()
    /// The fields of the event the transitions being parsed see; nil when unknown.
    var eventFields: Set<String>?

    var documentOrder: [[String]: Int] = [[]: 0]
    /// Whether the machine's root is parallel (its top-level final states are regions).
    var parallelRoot = false
    /// Transitions with several targets, checked once every state's kind is known.
    var targetLists: [(source: [String], targets: [[String]], at: JSONPath)] = []

    init(file: String) {
        self.file = file
    }

    /// The parsed form of `document` (the file's JSON, parsed by `JSONValue(parsing:)`),
    /// nil when there are issues.
    mutating func parse(_ document: JSONValue, hostGears: Set<String>?) -> Parsed? {
        let root: MachineValue
        do {
            root = try MachineValue(document)
        } catch {
            let path = document.firstNumberBeyondDouble()?.path ?? ""
            issues.append(MachineIssue(file: file, path: path,
                                       kind: .syntax("the number \(error.number) is beyond the range of a double")))
            return nil
        }
        statesOrder = Self.orderOfStates(in: document)
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
            // Only a parallel root comes here (another type is refused above).
            issue(JSONPath().key("initial"), .initialNotTaken(Self.parallelTakesNoInitial))
        }
        nodes[[]] = StateNode(path: [], kind: rootKind, initial: rootInitial.name,
                              on: parseOn(machine["on"], source: [], at: JSONPath().key("on")), after: [],
                              entry: parseActions(machine["entry"], at: JSONPath().key("entry")),
                              exit: parseActions(machine["exit"], at: JSONPath().key("exit")),
                              always: parseAlways(machine["always"], source: [], at: JSONPath().key("always")),
                              regions: rootKind == .parallel ? regionNames(statesObject, under: []) : [],
                              initialActions: rootInitial.actions)
        parseStates(statesObject, under: [], at: JSONPath().key("states"), into: &nodes)

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
        checkHistoryDefaults(nodes)
        let version = parseVersion(machine["version"])
        let migrations = parseMigrations(machine["migrations"], version: version, nodes: nodes)
        let structureHolds = issues.isEmpty
        issues += references.issues(file: file, context: context)
        if structureHolds {
            checkReachability(nodes)
            checkEventlessLoops(nodes)
        }
        return Parsed(id: machineID, context: context, gears: gears, nodes: nodes, documentOrder: documentOrder,
                      stateIDs: stateIDs, version: version, migrations: migrations, handledEvents: handledEvents)
    }

    // MARK: Helpers

    mutating func issue(_ path: JSONPath, _ kind: MachineIssue.Kind) {
        issues.append(MachineIssue(file: file, path: path.text, kind: kind))
    }

    mutating func checkKeys(_ members: [String: MachineValue], allowed: Set<String>, at path: JSONPath) {
        for key in members.keys.sorted() where !allowed.contains(key) {
            issue(path.key(key), .unknownKey)
        }
    }

    mutating func objectMembers(_ value: MachineValue?, at path: JSONPath) -> [String: MachineValue]? {
        guard let value else { return nil }
        guard case .object(let members) = value else {
            issue(path, .expected("an object"))
            return nil
        }
        return members
    }

    mutating func string(_ value: MachineValue, at path: JSONPath) -> String? {
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
