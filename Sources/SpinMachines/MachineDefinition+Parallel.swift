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
/// - A transition with several targets (in different regions) enters each of them, the
///   other regions of their parallel states at their start; its domain holds the source
///   and every target.
/// - A compound state whose final child is entered is done (`xstate.done.state.<path>`);
///   a parallel state is done when every region is, and its `onDone` is taken then; a
///   parallel root that is done completes the machine.
/// - A state entered by default (a target, an initial child, a region) runs its initial
///   transition's actions after its entry.
///
/// Document order is the order the file writes states in (`documentOrder`); the
/// state's leaves are kept in name order, its canonical form.
/// Machines without parallel states or initial actions never come here: their cost per
/// event is that of one leaf.
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
        guard !chosen.isEmpty else {
            // No transition takes it: the macrostep still looks at `always` (see
            // `plainTransition`).
            guard hasAlways, !eventlessAll(state, event).isEmpty else { return nil }
            return settledAll(state.startingAStep, after: event, queued: [])
        }
        let (next, queued) = microstep(chosen, from: state, event)
        return settledAll(next, after: event, queued: queued)
    }

    /// The initial state of a machine with parallel states: the root's initial states
    /// entered (every region of a parallel one), their entry actions run, then settled.
    /// Its step says what that did (`MachineDefinition.init` keeps what it scheduled and
    /// drops the rest: a machine that starts propagates nothing).
    func parallelStart(context: [String: MachineValue]) -> MachineState {
        var entry = EntrySet()
        addDescendants([], to: &entry, history: [:])
        entry.states.remove([])
        var run = ActionRun(context: context, event: nil)
        // The root is entered by default: its initial transition's actions run after its entry.
        run.perform((nodes[[]]?.entry ?? []) + (nodes[[]]?.initialActions ?? []))
        let start = MachineState(leaves: [], context: context)
        let (state, queued) = enter(entry, exited: [], from: start, run: run, history: [:])
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
            guard let path = doneEvents.path(of: event.type), state.isActive(path), let node = nodes[path], !node.onDone.isEmpty,
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
            // A state with a history child remembers its leaf (the first; a deep history
            // finds the others in the records of the regions below, `restored`).
            if node.recordsHistory, let leaf = state.leaves.first(where: { $0.starts(with: path) }) {
                history[path.joined(separator: ".")] = leaf
            }
            run.perform(node.exit)
        }
        // `"reenter": true` to the root (`#<machine id>`): the root exits and is entered again,
        // its initial actions too (XState v5, actions.test.ts: "should execute actions of the
        // initial transition when taking a root reentering self-transition"). So does the
        // root's own reentering transition to a state below it, without its initial actions
        // (v5 gives it no domain but the machine: "root entry/exit actions should be called
        // on root reentering transitions").
        let reentersRoot = chosen.contains { chosen in
            chosen.spec.reenter && (chosen.spec.targets.contains([]) || (chosen.source.isEmpty && !chosen.spec.targets.isEmpty))
        }
        if reentersRoot { run.perform(nodes[[]]?.exit ?? []) }
        for transition in chosen { run.perform(transition.spec.actions) }
        var entry = EntrySet()
        var domains: [[String]] = []
        for transition in chosen {
            // Every target (several in different regions: `"target": ["#a1", "#b2"]`).
            for target in transition.spec.targets {
                // A target is entered by default (its initial actions run), a history state's
                // restored states are not (XState v5's statesForDefaultEntry).
                if nodes[target]?.kind != .history { entry.byDefault.insert(target) }
                if let parent = parentEnteredByDefault(viaHistory: target, history: history) { entry.byDefault.insert(parent) }
                for effective in effectiveTargets(target, history: history) {
                    addDescendants(effective, to: &entry, history: history)
                    for length in stride(from: transition.domain.count + 1, to: effective.count, by: 1) {
                        entry.states.insert(Array(effective.prefix(length)))
                    }
                }
            }
            if !transition.spec.targets.isEmpty { domains.append(transition.domain) }
        }
        // The target's domain unless re-entered: what it enters lies below it.
        if reentersRoot { entry.states.insert([]) }
        entry.states = entry.states.filter { path in !domains.contains(path) || (path.isEmpty && reentersRoot) }
        // A parallel state entered for a target inside one region enters the others too,
        // and so does a parallel domain whose regions were all left (the root too).
        for path in entry.states.union(domains).sorted(by: precedesInDocument) {
            guard let node = nodes[path], node.kind == .parallel else { continue }
            for region in node.regions where !entry.states.contains(where: { $0.starts(with: path + [region]) }) {
                if exits.contains(path + [region]) || entry.states.contains(path) {
                    addDescendants(path + [region], to: &entry, history: history)
                }
            }
        }
        return enter(entry, exited: exits, from: state, run: run, history: history)
    }

    /// The states a transition to `target` enters: the target, or for a history state
    /// what its parent recorded (deep: that leaf; shallow: its child of the parent), else
    /// its default.
    private func effectiveTargets(_ target: [String], history: [String: [String]]) -> [[String]] {
        guard let node = nodes[target], node.kind == .history else { return [target] }
        let parent = Array(target.dropLast())
        // A parallel state's history once the state was left: its active children were every
        // region (shallow); deep, each region's leaf as the region recorded it (`restored`).
        if let regions = nodes[parent]?.regions, !regions.isEmpty, history[parent.joined(separator: ".")] != nil {
            return regions.flatMap { region in
                node.historyDeep ? restored(parent + [region], below: parent.count, history: history) : [parent + [region]]
            }
        }
        if let recorded = recordedLeaf(of: parent, in: history) {
            return node.historyDeep ? restored(recorded, below: parent.count, history: history) : [Array(recorded.prefix(parent.count + 1))]
        }
        return node.historyDefault.map { [$0] } ?? []
    }

    /// What a deep history restores from the leaf its parent recorded: that leaf, and for
    /// each parallel state on the way to it (below `depth`), every other region's leaf as
    /// the region recorded it when left with the parent (SCXML's deep history: every
    /// atomic state that was active); a region without a record is entered at its start.
    /// Given a region itself (for a deep history that is a child of the parallel state),
    /// what that region recorded.
    private func restored(_ leaf: [String], below depth: Int, history: [String: [String]]) -> [[String]] {
        if leaf.count == depth + 1, nodes[Array(leaf.dropLast())]?.kind == .parallel {
            guard let recorded = recordedLeaf(of: leaf, in: history) else { return [leaf] }
            return restored(recorded, below: leaf.count, history: history)
        }
        var leaves = [leaf]
        for length in stride(from: depth + 1, to: leaf.count, by: 1) {
            let path = Array(leaf.prefix(length))
            guard let node = nodes[path], node.kind == .parallel else { continue }
            for region in node.regions where region != leaf[length] {
                let regionPath = path + [region]
                if let recorded = recordedLeaf(of: regionPath, in: history) {
                    leaves += restored(recorded, below: regionPath.count, history: history)
                } else {
                    leaves.append(regionPath)
                }
            }
        }
        return leaves
    }

    /// The parent of the history state at `path` when entering it takes the parent's
    /// initial transition (no record, no `target` of its own): the parent is then entered
    /// by default and its initial actions run (XState v5's `statesForDefaultEntry`).
    private func parentEnteredByDefault(viaHistory path: [String], history: [String: [String]]) -> [String]? {
        let parent = Array(path.dropLast())
        guard let node = nodes[path], node.historyTakesParentInitial, recordedLeaf(of: parent, in: history) == nil else { return nil }
        return parent
    }

    /// Adds `path` and what entering it enters: a compound state's initial child, every
    /// region of a parallel state, a history state's recorded or default states.
    private func addDescendants(_ path: [String], to entry: inout EntrySet, history: [String: [String]]) {
        guard let node = nodes[path] else { return }
        if node.kind == .history {
            if let parent = parentEnteredByDefault(viaHistory: path, history: history) { entry.byDefault.insert(parent) }
            let parent = path.count - 1
            for effective in effectiveTargets(path, history: history) {
                addDescendants(effective, to: &entry, history: history)
                for length in stride(from: parent + 1, to: effective.count, by: 1) { entry.states.insert(Array(effective.prefix(length))) }
            }
            return
        }
        entry.states.insert(path)
        if let initial = node.initial {
            entry.byDefault.insert(path + [initial])
            addDescendants(path + [initial], to: &entry, history: history)
        }
        for region in node.regions {
            entry.byDefault.insert(path + [region])
            addDescendants(path + [region], to: &entry, history: history)
        }
    }

    /// The states a microstep enters, and those of them entered by default (a target, an
    /// initial child, a region of a parallel state entered by default): entering one of
    /// these runs its initial transition's actions after its entry (XState v5).
    struct EntrySet {
        var states: Set<[String]> = []
        var byDefault: Set<[String]> = []
    }

    /// `state` with `exited` left and `entry.states` entered in document order (entry
    /// actions run by `run`, then the initial actions of those entered by default), the
    /// done events of what became done queued after the raised ones.
    private func enter(_ entry: EntrySet, exited: Set<[String]>, from state: MachineState, run: ActionRun,
                       history: [String: [String]]) -> (MachineState, raised: [MachineEvent]) {
        var run = run
        let entered = entry.states.sorted(by: precedesInDocument)
        var leaves = state.leaves.filter { !exited.contains($0) && !$0.isEmpty }
        var finals: [[String]] = []
        var completes = false
        for path in entered {
            guard let node = nodes[path] else { continue }
            run.perform(node.entry)
            if !node.initialActions.isEmpty, entry.byDefault.contains(path) { run.perform(node.initialActions) }
            if node.kind == .atomic || node.kind == .final { leaves.append(path) }
            guard node.kind == .final else { continue }
            if node.completesMachine { completes = true } else { finals.append(path) }
        }
        leaves.sort { $0.lexicographicallyPrecedes($1) }
        // A compound state whose final child was entered is done; so is each parallel
        // state above it whose regions are all done (a parallel region of a parallel
        // state too), each once. A parallel root that is done completes the machine.
        var doneStates: [[String]] = []
        for finalState in finals {
            var below = finalState
            if let parent = nodes[Array(finalState.dropLast())], parent.kind == .compound {
                if !parent.onDone.isEmpty, !doneStates.contains(parent.path) { doneStates.append(parent.path) }
                below = parent.path
            }
            while !below.isEmpty {
                let above = Array(below.dropLast())
                guard let node = nodes[above], node.kind == .parallel, isInFinalState(above, leaves: leaves) else { break }
                if above.isEmpty { completes = true }
                if !node.onDone.isEmpty, !doneStates.contains(above) { doneStates.append(above) }
                below = above
            }
        }
        if completes {
            // The machine is done: what is still active exits, innermost and last first.
            for path in Self.prefixes(of: leaves).sorted(by: { precedesInDocument($1, $0) }) {
                run.perform(nodes[path]?.exit ?? [])
            }
            run.perform(nodes[[]]?.exit ?? [])
        }
        let doneEvents = doneStates.map { MachineEvent(type: self.doneEvents.type(of: $0)) }
        let step = run.step(entered: entered.filter { !$0.isEmpty })
        let next = MachineState(shape: MachineState.Shape(leaves: leaves, step: step), context: run.context, history: history)
        return (next, run.raised + doneEvents)
    }

    /// Whether the state at `path` is done with these leaves active (SCXML's and XState
    /// v5's isInFinalState): a compound state whose active child is a final state, a
    /// parallel state whose regions all are done. A compound state whose active child is
    /// a done parallel state is not (final.test.ts, "machine should not complete when a
    /// parallel child of a compound state completes").
    func isInFinalState(_ path: [String], leaves: [[String]]) -> Bool {
        guard let node = nodes[path] else { return false }
        switch node.kind {
        case .parallel: return node.regions.allSatisfy { isInFinalState(path + [$0], leaves: leaves) }
        case .compound: return leaves.contains { $0.count == path.count + 1 && $0.starts(with: path) && nodes[$0]?.kind == .final }
        case .final: return leaves.contains(path)
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
