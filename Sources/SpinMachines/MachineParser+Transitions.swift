/// The parser's reading of transitions: `on`, `after`, `always` and `onDone`, their
/// targets resolved to absolute state paths.
extension MachineParser {
    // MARK: Transitions

    mutating func parseOn(_ value: MachineValue?, source: [String], at path: JSONPath) -> [String: [TransitionSpec]] {
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
    func handles(_ type: String) -> Bool { Self.handles(type, among: handledEvents) }

    /// Whether an `on` with the keys `handled` takes events of `type`.
    static func handles(_ type: String, among handled: Set<String>) -> Bool {
        handled.contains(type) || handled.contains(MachineEvent.wildcardType)
            || handled.contains { $0.hasSuffix(".*") && MachineEvent.partialDescriptor($0, matches: type) }
    }

    mutating func parseAfter(_ value: MachineValue?, source: [String], at path: JSONPath) -> [AfterEntry] {
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
    mutating func parseTransitions(_ value: MachineValue, source: [String], at path: JSONPath) -> [TransitionSpec] {
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

    mutating func parseTransition(_ value: MachineValue, source: [String], at path: JSONPath) -> TransitionSpec? {
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
    mutating func resolve(_ target: String, from source: [String], at path: JSONPath) -> [String]? {
        func split(_ text: Substring) -> [String] { text.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
        var candidates: [[String]] = []
        if target.hasPrefix("#") {
            candidates = identified(target, orFromTheRoot: true)
        } else if target.hasPrefix(".") {
            candidates = [source + split(target.dropFirst())]
        } else {
            candidates = [source.dropLast() + split(target[...])]
        }
        // `#<machine id>` alone is the root (XState's wordMachine resets with `#word`).
        guard let found = candidates.first(where: { declared.contains($0) || ($0.isEmpty && machineID != nil) }) else {
            issue(path, .unknownState(target, suggestion: nearestTarget(target, from: source)))
            return nil
        }
        return found
    }

    /// The paths `#<id>.a.b` may name, in the order they are tried: the state whose `id` is
    /// its first name, and the path under it; with `orFromTheRoot`, the path from the root
    /// (a target's `#a.b`); the machine's `id` and the path under the root.
    func identified(_ name: String, orFromTheRoot: Bool) -> [[String]] {
        let absolute = name.dropFirst().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var candidates: [[String]] = []
        if let first = absolute.first, let identified = stateIDs[first] { candidates.append(identified + absolute.dropFirst()) }
        if orFromTheRoot { candidates.append(absolute) }
        if let machineID, absolute.first == machineID { candidates.append(Array(absolute.dropFirst())) }
        return candidates
    }

    /// The target spelled as `target` is (a sibling, `.child`, `#id` or `#path`) that
    /// names a state and is nearest to it, if one is close.
    func nearestTarget(_ target: String, from source: [String]) -> String? {
        let spellings: [String]
        if target.hasPrefix("#") {
            let root = machineID.map { "#\($0)." } ?? "#"
            spellings = declared.map { root + $0.joined(separator: ".") } + stateIDs.keys.map { "#\($0)" }
        } else if target.hasPrefix(".") {
            spellings = declared.filter { $0.count > source.count && Array($0.prefix(source.count)) == source }
                .map { "." + $0.dropFirst(source.count).joined(separator: ".") }
        } else {
            let parent = Array(source.dropLast())
            spellings = declared.filter { $0.count > parent.count && Array($0.prefix(parent.count)) == parent }
                .map { $0.dropFirst(parent.count).joined(separator: ".") }
        }
        return MachineReferences.nearestState(target, among: spellings.sorted())
    }

    /// `always`: a target, a transition object or an array of them, as in `on`.
    mutating func parseAlways(_ value: MachineValue?, source: [String], at path: JSONPath) -> [TransitionSpec] {
        guard let value else { return [] }
        return parseTransitions(value, source: source, at: path)
    }
}
