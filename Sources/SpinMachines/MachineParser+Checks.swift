/// What the parser checks once every state is read: that every state can be entered,
/// that target lists name states in different regions, and that no `always`
/// transitions loop for ever.
extension MachineParser {
    // MARK: History states

    /// A history state's default is a state, never a history state, itself included (a
    /// transition to it would go from one to the other for ever, or rest in no state); and
    /// one that is its parent's initial state names its own `target` (without one its
    /// default would be itself).
    mutating func checkHistoryDefaults(_ nodes: [[String]: StateNode]) {
        for (path, node) in nodes.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where node.kind == .history {
            let at = path.reduce(JSONPath()) { $0.key("states").key($1) }
            let parent = Array(path.dropLast())
            if nodes[parent]?.initial == path.last, node.historyTakesParentInitial || node.historyDefault == path {
                issue(at, .badValue("a history state that is its parent's initial state needs a \"target\": the state entered "
                                    + "while the parent has no history yet"))
            } else if let target = node.historyDefault, nodes[target]?.kind == .history {
                issue(at.key("target"), .badValue(target == path ? "a history state's target is a state, not the history state itself"
                                                  : "a history state's target is a state, not another history state"))
            }
        }
    }

    // MARK: Reachability

    /// Every state must be entered by the initial chain or some transition (entering a
    /// state enters its ancestors and its initial descendants). A final state nothing
    /// enters is allowed: it documents where the machine would end.
    mutating func checkReachability(_ nodes: [[String]: StateNode]) {
        var reached: Set<[String]> = [[]]
        var queue: [[String]] = [[]]  // the root: its `on` and `always` enter states too
        // Each path's initial chain, history default and regions are followed once.
        var expanded: Set<[String]> = []
        func enter(_ path: [String]) {
            guard expanded.insert(path).inserted else { return }
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
    mutating func checkTargetLists(_ nodes: [[String]: StateNode]) {
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
    mutating func checkEventlessLoops(_ nodes: [[String]: StateNode]) {
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
}
