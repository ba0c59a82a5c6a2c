/// The interpreter of a machine with parallel states: the same step as the one-leaf
/// interpreter (`MachineDefinition+Transition`), over every active leaf at once, as
/// XState v5 (and SCXML) take a microstep.
///
/// - An event is offered to every active leaf in document order; each looks from
///   itself outwards for its first enabled transition (those of the event's type, then
///   the wildcard's), as one leaf does. A transition two leaves find is taken once.
/// - Of two transitions whose exit sets meet, the one whose source is inside the
///   other's wins; otherwise the earlier one in document order.
/// - The states they leave exit innermost and last first (reverse document order), their
///   actions run in the order they were chosen, then the states entered run their entry
///   actions in document order. Entering a parallel state enters every region.
/// - A compound state whose final child is entered is done (`xstate.done.state.<path>`);
///   a parallel state is done when every region is, and its `onDone` is taken then.
///
/// Document order is the order the file writes states in (`documentOrder`); the
/// state's leaves are kept in name order, its canonical form.
/// Machines without parallel states never come here: their cost per event is that of
/// one leaf.
extension MachineDefinition {
    /// A transition chosen for a microstep: where it was found, and what it exits.
    struct ChosenTransition {
        let source: [String]
        let spec: TransitionSpec
        /// The active states it leaves (none without a target).
        let exits: Set<[String]>
        /// The path of the state that holds everything it exits and enters.
        let domain: [String]
    }

    /// `transition(_:_:)` of a machine with parallel states.
    func parallelTransition(_ state: MachineState, _ event: MachineEvent) -> MachineState? {
        guard !isDone(state) else { return nil }
        let chosen = selectAll(state, event)
        guard !chosen.isEmpty else { return nil }
        let (next, queued) = microstep(chosen, from: state, event)
        return settledAll(next, after: event, queued: queued)
    }

    /// The initial state of a machine with parallel states: the root's initial states
    /// entered (every region of a parallel one), their entry actions run, then settled.
    /// Its step says what that did (`MachineDefinition.init` keeps what it scheduled and
    /// drops the rest: a machine that starts propagates nothing).
    func parallelStart(context: [String: MachineValue]) -> MachineState {
        var toEnter: Set<[String]> = []
        addDescendants([], to: &toEnter, history: [:])
        toEnter.remove([])
        var run = ActionRun(context: context, event: nil)
        run.perform(nodes[[]]?.entry ?? [])
        let start = MachineState(leaves: [], context: context)
        let (state, queued) = enter(toEnter, exited: [], from: start, run: run, history: [:])
        return settledAll(state, after: MachineEvent(type: MachineEvent.initType), queued: queued)
    }

    /// The macrostep after a microstep: `always` transitions of the active states first,
    /// else the next queued (raised or done) event, up to `microstepLimit` microsteps.
    private func settledAll(_ state: MachineState, after event: MachineEvent, queued: [MachineEvent]) -> MachineState {
        macrostep(state, after: event, queued: queued) { current, latest, queue in
            guard !isDone(current) else { return nil }
            var chosen = hasAlways ? eventlessAll(current, latest) : []
            var seen = latest
            while chosen.isEmpty, let next = queue.popFirst() {
                chosen = selectAll(current, next)
                seen = next
            }
            guard !chosen.isEmpty else { return nil }
            let (taken, event) = (chosen, seen)
            return (event, { microstep(taken, from: current, event) })
        }
    }

    /// The transitions an event takes: one per active leaf at most, conflicts removed.
    private func selectAll(_ state: MachineState, _ event: MachineEvent) -> [ChosenTransition] {
        if event.type == MachineEvent.afterType {
            guard case .string(let name)? = event.payload["state"], case .number(let delay)? = event.payload["delay"] else {
                return []
            }
            let path = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard state.isActive(path), let entry = nodes[path]?.after.first(where: { Double($0.delay) == delay }),
                  let spec = firstEnabled(entry.transitions, state, event) else { return [] }
            return [chosen(spec, from: path, in: state)]
        }
        if event.type.hasPrefix(MachineEvent.doneStatePrefix) {
            let name = event.type.dropFirst(MachineEvent.doneStatePrefix.count)
            let path = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard state.isActive(path), let node = nodes[path], !node.onDone.isEmpty,
                  let spec = firstEnabled(node.onDone, state, event) else { return [] }
            return [chosen(spec, from: path, in: state)]
        }
        return perLeaf(state) { node in firstEnabled(in: node, state, event) }
    }

    /// The enabled `always` transitions, one per active leaf at most, conflicts removed.
    private func eventlessAll(_ state: MachineState, _ event: MachineEvent) -> [ChosenTransition] {
        perLeaf(state) { node in node.always.isEmpty ? nil : firstEnabled(node.always, state, event) }
    }

    /// For each active leaf in document order, the first transition `find` gives from it
    /// or its nearest ancestor (the root too), each once; then conflicts removed.
    private func perLeaf(_ state: MachineState, _ find: (StateNode) -> TransitionSpec?) -> [ChosenTransition] {
        var found: [ChosenTransition] = []
        for leaf in state.leaves.sorted(by: precedesInDocument) {
            for length in stride(from: leaf.count, through: 0, by: -1) {
                let path = Array(leaf.prefix(length))
                guard let node = nodes[path], let spec = find(node) else { continue }
                if !found.contains(where: { $0.spec === spec && $0.source == path }) {
                    found.append(chosen(spec, from: path, in: state))
                }
                break
            }
        }
        return withoutConflicts(found)
    }

    private func chosen(_ spec: TransitionSpec, from source: [String], in state: MachineState) -> ChosenTransition {
        guard let plan = spec.plan else { return ChosenTransition(source: source, spec: spec, exits: [], domain: source) }
        let domain = Array(source.prefix(plan.domain))
        let exits = state.activePaths.filter { $0.count > domain.count && $0.starts(with: domain) }
        return ChosenTransition(source: source, spec: spec, exits: Set(exits), domain: domain)
    }

    /// SCXML's removal of conflicting transitions: when two exit the same state, one
    /// whose source is inside the other's source preempts it, else the earlier one wins.
    private func withoutConflicts(_ transitions: [ChosenTransition]) -> [ChosenTransition] {
        guard transitions.count > 1 else { return transitions }
        var kept: [ChosenTransition] = []
        for candidate in transitions {
            var preempted = false
            var dropped: [Int] = []
            for (index, other) in kept.enumerated() where !candidate.exits.isDisjoint(with: other.exits) {
                if candidate.source.count > other.source.count && candidate.source.starts(with: other.source) {
                    dropped.append(index)
                } else {
                    preempted = true
                    break
                }
            }
            guard !preempted else { continue }
            for index in dropped.reversed() { kept.remove(at: index) }
            kept.append(candidate)
        }
        return kept
    }

    /// `state` after taking `chosen` together, and the events raised or made done meanwhile.
    private func microstep(_ chosen: [ChosenTransition], from state: MachineState,
                           _ event: MachineEvent) -> (MachineState, raised: [MachineEvent]) {
        var run = ActionRun(context: state.context, event: event)
        var history = state.history
        let exits = chosen.reduce(into: Set<[String]>()) { $0.formUnion($1.exits) }
        for path in exits.sorted(by: { precedesInDocument($1, $0) }) {
            guard let node = nodes[path] else { continue }
            // A state with a history child remembers its leaf (it has one: no parallel state is under it).
            if node.recordsHistory, let leaf = state.leaves.first(where: { $0.starts(with: path) }) {
                history[path.joined(separator: ".")] = leaf
            }
            run.perform(node.exit)
        }
        for transition in chosen { run.perform(transition.spec.actions) }
        var toEnter: Set<[String]> = []
        var domains: [[String]] = []
        for transition in chosen {
            guard let target = transition.spec.target else { continue }
            for effective in effectiveTargets(target, history: history) {
                addDescendants(effective, to: &toEnter, history: history)
                for length in stride(from: transition.domain.count + 1, to: effective.count, by: 1) {
                    toEnter.insert(Array(effective.prefix(length)))
                }
            }
            domains.append(transition.domain)
        }
        // The target's domain unless re-entered: what it enters lies below it.
        toEnter = toEnter.filter { path in !domains.contains(path) }
        // A parallel state entered for a target inside one region enters the others too,
        // and so does a parallel domain whose regions were all left.
        for path in toEnter.union(domains).sorted(by: precedesInDocument) {
            guard let node = nodes[path], node.kind == .parallel else { continue }
            for region in node.regions where !toEnter.contains(where: { $0.starts(with: path + [region]) }) {
                if exits.contains(path + [region]) || toEnter.contains(path) { addDescendants(path + [region], to: &toEnter, history: history) }
            }
        }
        return enter(toEnter, exited: exits, from: state, run: run, history: history)
    }

    /// The states a transition to `target` enters: the target, or for a history state
    /// what its parent recorded (deep: that leaf; shallow: its child of the parent), else
    /// its default.
    private func effectiveTargets(_ target: [String], history: [String: [String]]) -> [[String]] {
        guard let node = nodes[target], node.kind == .history else { return [target] }
        let parent = Array(target.dropLast())
        if let recorded = history[parent.joined(separator: ".")], recorded.count > parent.count,
           recorded.starts(with: parent), nodes[recorded] != nil {
            return [node.historyDeep ? recorded : Array(recorded.prefix(parent.count + 1))]
        }
        return node.historyDefault.map { [$0] } ?? []
    }

    /// Adds `path` and what entering it enters: a compound state's initial child, every
    /// region of a parallel state, a history state's recorded or default states.
    private func addDescendants(_ path: [String], to toEnter: inout Set<[String]>, history: [String: [String]]) {
        guard let node = nodes[path] else { return }
        if node.kind == .history {
            let parent = path.count - 1
            for effective in effectiveTargets(path, history: history) {
                addDescendants(effective, to: &toEnter, history: history)
                for length in stride(from: parent + 1, to: effective.count, by: 1) { toEnter.insert(Array(effective.prefix(length))) }
            }
            return
        }
        toEnter.insert(path)
        if let initial = node.initial { addDescendants(path + [initial], to: &toEnter, history: history) }
        for region in node.regions { addDescendants(path + [region], to: &toEnter, history: history) }
    }

    /// `state` with `exited` left and `toEnter` entered in document order (entry actions
    /// run by `run`), the done events of what became done queued after the raised ones.
    private func enter(_ toEnter: Set<[String]>, exited: Set<[String]>, from state: MachineState, run: ActionRun,
                       history: [String: [String]]) -> (MachineState, raised: [MachineEvent]) {
        var run = run
        let entered = toEnter.sorted(by: precedesInDocument)
        var leaves = state.leaves.filter { !exited.contains($0) && !$0.isEmpty }
        var done: [[String]] = []
        var completes = false
        for path in entered {
            guard let node = nodes[path] else { continue }
            run.perform(node.entry)
            if node.kind == .atomic || node.kind == .final { leaves.append(path) }
            guard node.kind == .final else { continue }
            if node.completesMachine {
                completes = true
                continue
            }
            done.append(Array(path.dropLast()))
        }
        leaves.sort { $0.lexicographicallyPrecedes($1) }
        if completes {
            // The machine is done: what is still active exits, innermost and last first.
            for path in Self.prefixes(of: leaves).sorted(by: { precedesInDocument($1, $0) }) {
                run.perform(nodes[path]?.exit ?? [])
            }
            run.perform(nodes[[]]?.exit ?? [])
        }
        // A compound state whose final child was entered is done; so is each parallel
        // state above it whose regions are all done (a parallel region of a parallel
        // state too), each once.
        var doneStates: [[String]] = []
        for parent in done {
            if nodes[parent]?.onDone.isEmpty == false, !doneStates.contains(parent) { doneStates.append(parent) }
            var below = parent
            while !below.isEmpty {
                let above = Array(below.dropLast())
                guard let node = nodes[above], node.kind == .parallel, isInFinalState(above, leaves: leaves) else { break }
                if !node.onDone.isEmpty, !doneStates.contains(above) { doneStates.append(above) }
                below = above
            }
        }
        let doneEvents = doneStates.map { MachineEvent(type: MachineEvent.doneStatePrefix + $0.joined(separator: ".")) }
        let step = run.step(entered: entered)
        let next = MachineState(shape: MachineState.Shape(leaves: leaves, step: step), context: run.context, history: history)
        return (next, run.raised + doneEvents)
    }

    /// Whether the state at `path` is done with these leaves active: a compound state
    /// whose active child is final, a parallel state whose regions all are done.
    private func isInFinalState(_ path: [String], leaves: [[String]]) -> Bool {
        guard let node = nodes[path] else { return false }
        switch node.kind {
        case .parallel: return node.regions.allSatisfy { isInFinalState(path + [$0], leaves: leaves) }
        case .compound: return leaves.contains { $0.count == path.count + 1 && $0.starts(with: path) && nodes[$0]?.kind == .final }
            || leaves.contains { $0.count > path.count + 1 && $0.starts(with: path) && nodes[Array($0.prefix(path.count + 1))]?.kind == .parallel
                && isInFinalState(Array($0.prefix(path.count + 1)), leaves: leaves) }
        default: return false
        }
    }

    /// Whether the state at `a` comes before the one at `b` in document order (an
    /// ancestor before its descendants, siblings as the file writes them).
    func precedesInDocument(_ a: [String], _ b: [String]) -> Bool {
        guard let first = documentOrder[a], let second = documentOrder[b] else { return a.lexicographicallyPrecedes(b) }
        return first < second
    }

    /// Every non-root prefix of the leaves, each once.
    private static func prefixes(of leaves: [[String]]) -> Set<[String]> {
        var paths: Set<[String]> = []
        for leaf in leaves { for length in stride(from: 1, through: leaf.count, by: 1) { paths.insert(Array(leaf.prefix(length))) } }
        return paths
    }
}
