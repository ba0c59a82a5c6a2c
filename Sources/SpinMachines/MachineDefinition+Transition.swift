/// The interpreter: one event, one step, no side effects.
extension MachineDefinition {
    /// The state after `event`, or nil when the machine has no transition for it from
    /// `state` (no `on` entry for its type in the active state or its ancestors, no guard
    /// that holds, a final top-level state, or a timer event for a state no longer active).
    ///
    /// Transitions are looked up from the active leaf outwards; among the candidates of
    /// one state the first whose guard holds is taken. Taking one runs, in XState's order,
    /// the exit actions of the states it leaves (innermost first), its own actions, and
    /// the entry actions of the states it enters (outermost first); every action sees the
    /// context as the previous one left it, guards see the context before the event.
    ///
    /// An `xstate.after` event (`MachineEvent.after(state:delay:)`) takes the `after`
    /// transition of that state and delay, while that state is active. An `xstate.raise`
    /// event (`MachineEvent.scheduled(_:)`) hands over the event a delayed `raise`
    /// scheduled, while the state still holds it.
    public func transition(_ state: MachineState, _ event: MachineEvent) -> MachineState? {
        if schedulesEvents { return scheduling(state, event) }
        return plainTransition(state, event)
    }

    /// `transition(_:_:)` but for the state's `scheduled` events, which
    /// `MachineDefinition+Schedule` keeps: the result has none.
    func plainTransition(_ state: MachineState, _ event: MachineEvent) -> MachineState? {
        if stepsEveryLeaf { return parallelTransition(state, event) }
        guard let leafNode = leafNode(of: state), !leafNode.completesMachine else { return nil }
        guard let chosen = select(state, leafNode, event) else {
            // An event no transition takes still ends a macrostep: an `always` transition
            // its guard now lets through (it sees the event) is taken (XState v5,
            // transient.test.ts, "should be taken even in absence of other transitions").
            // (Not the last step's `onDone`: the state starts a step of its own.)
            let fresh = state.startingAStep
            guard hasAlways, eventless(fresh, leafNode, after: event) != nil else { return nil }
            return settled(fresh, after: event)
        }
        let (next, raised) = take(chosen, from: state, leafNode, event)
        guard hasAlways || chosen.plan?.settles == true || !raised.isEmpty else { return next }
        return settled(next, after: event, raised: raised)
    }

    /// True when the machine is done: its active state is a top-level final state. A done
    /// machine takes no event (DESIGN §3: the server says `done`).
    /// A parallel root is done when every region is (XState v5, final.test.ts).
    public func isDone(_ state: MachineState) -> Bool {
        if parallelRoot { return isInFinalState([], leaves: state.leaves) }
        return leafNode(of: state)?.completesMachine ?? false
    }

    /// What this definition cannot take in `state`, a state a journal or snapshot holds
    /// (made under another version of the machine file, or written by hand): an active
    /// state it does not define as a leaf (atomic or final), or a history record for a
    /// state, or of a leaf, it does not define. Nil when it takes all of it. The
    /// interpreter would otherwise take no event in such a state, or fall back on a
    /// history default, without a word.
    public func problem(taking state: MachineState) -> String? {
        for leaf in state.leaves {
            let name = leaf.joined(separator: ".")
            guard let node = nodes[leaf], !leaf.isEmpty else { return "its state is \"\(name)\", which \(file) does not define" }
            guard node.kind == .atomic || node.kind == .final else {
                return "its state is \"\(name)\", which \(file) defines as a \(node.kind) state, not as one a machine rests in"
            }
        }
        for (parent, recorded) in state.history.sorted(by: { $0.key < $1.key }) {
            // The root's record (a history state at the top) is under "".
            let path = parent.isEmpty ? [] : parent.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard nodes[path] != nil else { return "its history has a record for state \"\(parent)\", which \(file) does not define" }
            guard let node = nodes[recorded], node.kind == .atomic || node.kind == .final else {
                return "its history records \"\(recorded.joined(separator: "."))\" for \"\(parent)\", a state \(file) does not define as a leaf"
            }
        }
        return nil
    }

    /// Whether the machine waits for time in `state`: an `after` timer of an active state
    /// is running, or a delayed `raise` is still to be sent. A host keeps such a machine
    /// awake (its timers are its own feedbacks), and lets it sleep once it waits for
    /// nothing but events.
    public func awaitsTime(in state: MachineState) -> Bool {
        guard !isDone(state) else { return false }
        if !state.scheduled.isEmpty { return true }
        return state.activePaths.contains { nodes[$0]?.after.isEmpty == false }
    }

    /// The most microsteps one event may cause: the event's own transition, the `always`
    /// transitions and `onDone` transitions after it. Past it the machine stops where it
    /// is and its step says `unsettled` (a host suspends it, as for a runaway loop).
    public static var microstepLimit: Int { 100 }

    /// `state` after the transitions its last step sets off by itself (XState v5's
    /// macrostep): first an enabled `always` transition of an active state (from the
    /// leaf outwards; its guards and actions see the event of the latest microstep: `event`
    /// first, then the raised or done event taken last, as in v5),
    /// else the `onDone` transition of a compound state whose final child was just
    /// entered (with the event `xstate.done.state.<path>`), and so on, up to
    /// `microstepLimit` steps in all. The step of the result records every state
    /// entered and every propagation, in order.
    func settled(_ state: MachineState, after event: MachineEvent, raised: [MachineEvent] = []) -> MachineState {
        macrostep(state, after: event, queued: raised) { current, latest, queue in
            // A completed machine takes nothing more, raised events included (v5 ends the
            // macrostep once the machine is done).
            guard let leaf = leafNode(of: current), !leaf.completesMachine,
                  let (chosen, seen) = eventless(current, leaf, after: latest) ?? nextRaised(&queue, current, leaf) else { return nil }
            return (seen, { take(chosen, from: current, leaf, seen) })
        }
    }

    /// The microsteps after the first, what both interpreters share: `choose` gives the
    /// next one (the event it takes and how to take it) from the current state, the event
    /// of the latest microstep (what `always` guards and actions see, v5: the external
    /// event first, then a raised or done event once one was taken) and the queue of
    /// raised events, or nil when the machine is settled. At most `microstepLimit` in all.
    /// The step of the result records every state entered and every propagation, in order.
    func macrostep(_ state: MachineState, after event: MachineEvent, queued: [MachineEvent],
                   choose: (MachineState, MachineEvent, inout ArraySlice<MachineEvent>)
                   -> (seen: MachineEvent, take: () -> (MachineState, raised: [MachineEvent]))?) -> MachineState {
        var current = state
        var step = state.step
        var queue = queued[...]
        var steps = 1
        var latest = event
        while let (seen, take) = choose(current, latest, &queue) {
            guard steps < Self.microstepLimit else {
                step.unsettled = true
                break
            }
            let (next, more) = take()
            current = next
            latest = seen
            queue += more
            step.append(next.step)
            steps += 1
        }
        guard steps > 1 || step.unsettled else { return current }
        return MachineState(shape: current.shape.with(step: step), context: current.context, history: current.history)
    }

    /// The transition the first raised event still waiting takes, and that event; a
    /// raised event no transition takes is dropped, as XState drops it.
    private func nextRaised(_ queue: inout ArraySlice<MachineEvent>, _ state: MachineState,
                            _ leaf: StateNode) -> (TransitionSpec, MachineEvent)? {
        while let raised = queue.popFirst() {
            if let chosen = select(state, leaf, raised) { return (chosen, raised) }
        }
        return nil
    }

    /// The transition a state takes without an event, and the event its guards and
    /// actions see: an enabled `always` transition, else the parent's `onDone` when the
    /// last step entered a final leaf. A done machine takes none.
    func eventless(_ state: MachineState, _ leaf: StateNode,
                           after event: MachineEvent) -> (TransitionSpec, MachineEvent)? {
        guard !leaf.completesMachine else { return nil }
        if hasAlways {
            for length in stride(from: leaf.path.count, through: 0, by: -1) {
                guard let node = length == leaf.path.count ? leaf : nodes[Array(state.value.prefix(length))],
                      !node.always.isEmpty, let chosen = firstEnabled(node.always, state, event) else { continue }
                return (chosen, event)
            }
        }
        guard leaf.kind == .final, leaf.path.count > 1, state.step.entered.last == leaf.path,
              let parent = nodes[Array(leaf.path.dropLast())], !parent.onDone.isEmpty else { return nil }
        let done = MachineEvent(type: doneEvents.type(of: parent.path))
        return firstEnabled(parent.onDone, state, done).map { ($0, done) }
    }

    /// `state` after taking `chosen` from it, and the events its actions raised (to be
    /// taken before any other event); `leafNode` is the node of its active leaf.
    private func take(_ chosen: TransitionSpec, from state: MachineState, _ leafNode: StateNode,
                      _ event: MachineEvent) -> (MachineState, raised: [MachineEvent]) {
        var run = ActionRun(context: state.context, event: event)
        guard var plan = chosen.plan else {
            run.perform(chosen.actions)
            return (MachineState(shape: shape(resting: leafNode, state.value, run), context: run.context, history: state.history),
                    run.raised)
        }
        // The leaf's node is at hand: it is not looked up again (nor its path copied).
        let depth = leafNode.path.count
        if depth > plan.domain, !leafNode.exit.isEmpty { run.perform(leafNode.exit) }
        var history = state.history
        for length in stride(from: depth - 1, to: plan.domain, by: -1) {
            let exited = nodes[Array(state.value.prefix(length))]
            run.perform(exited?.exit ?? [])
            // A state with a history child remembers where it was left.
            if let exited, exited.recordsHistory { history[exited.path.joined(separator: ".")] = state.value }
        }
        // A history state entered restores what its parent recorded, this transition's own
        // records included (XState v5, history.test.ts: "should reenter persisted state during
        // reentering transition targeting a history state"). Its domain is the plan's: the
        // exits above are the same either way.
        if let target = chosen.history, let recorded = recordedLeaf(of: target.parent, in: history) {
            plan = historyPlan(domain: plan.domain, parent: target.parent, deep: target.deep, recorded: recorded)
        }
        run.perform(chosen.actions)
        if !plan.entryActions.isEmpty { run.perform(plan.entryActions) }
        guard run.hasEffects else { return (MachineState(shape: plan.shape, context: run.context, history: history), run.raised) }
        let step = run.step(entered: plan.shape.step.entered)
        return (MachineState(shape: MachineState.Shape(value: plan.shape.value, step: step, leafHint: plan.shape.leafHint),
                             context: run.context, history: history), run.raised)
    }

    /// The shape of a state that stays in `node`'s leaf (`value`) with what `run` did.
    private func shape(resting node: StateNode, _ value: [String], _ run: ActionRun) -> MachineState.Shape {
        if !run.hasEffects, let resting = node.restingShape { return resting }
        return MachineState.Shape(value: value, step: run.step(entered: []), leafHint: node.restingShape?.leafHint)
    }

    /// The node of the state's active leaf: found through the state's hint when it is
    /// this machine's and names the same leaf, else by the leaf's path.
    func leafNode(of state: MachineState) -> StateNode? {
        let shape = state.shape
        if let hint = shape.leafHint, hint.machine === identity {
            let node = nodeList[hint.index]
            // The same array as the node's path (a shape the interpreter made) compares at once.
            if node.path == shape.value { return node }
        }
        return nodes[shape.value]
    }

    /// The transition an event takes, if any.
    /// `leafNode`: the node of the active leaf, `nodes[state.value]`.
    private func select(_ state: MachineState, _ leafNode: StateNode, _ event: MachineEvent) -> TransitionSpec? {
        if event.type == MachineEvent.afterType {
            guard case .string(let name)? = event.payload["state"], case .number(let delay)? = event.payload["delay"] else {
                return nil
            }
            let path = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard state.isActive(path), let entry = nodes[path]?.after.first(where: { Double($0.delay) == delay }) else {
                return nil
            }
            return firstEnabled(entry.transitions, state, event)
        }
        // The active leaf itself is the usual source: no copy of its path, no look-up.
        if let chosen = firstEnabled(in: leafNode, state, event) { return chosen }
        // The root is a source too when its `on` has entries.
        for length in stride(from: leafNode.path.count - 1, to: rootHandlesEvents ? -1 : 0, by: -1) {
            if let node = nodes[Array(state.value.prefix(length))], let chosen = firstEnabled(in: node, state, event) {
                return chosen
            }
        }
        return nil
    }

    /// The first enabled transition of `node` for the event: those of its type first, then
    /// those of partial descriptors that match it (`"mouse.*"`, longest first), then the
    /// wildcard's (`"*"`), as XState v5 orders a state's candidates.
    func firstEnabled(in node: StateNode, _ state: MachineState, _ event: MachineEvent) -> TransitionSpec? {
        if let candidates = node.candidates(for: event.type), let chosen = firstEnabled(candidates, state, event) {
            return chosen
        }
        for partial in node.partials where MachineEvent.partialDescriptor(partial.descriptor, matches: event.type) {
            if let chosen = firstEnabled(partial.transitions, state, event) { return chosen }
        }
        guard let wildcard = node.wildcard else { return nil }
        return firstEnabled(wildcard, state, event)
    }

    func firstEnabled(_ candidates: [TransitionSpec], _ state: MachineState, _ event: MachineEvent) -> TransitionSpec? {
        // The scope (a copy of the state and event) is made only for a guard.
        for candidate in candidates {
            guard let condition = candidate.guardCondition else { return candidate }
            if GuardScope(state: state, event: event).holds(condition) { return candidate }
        }
        return nil
    }

    /// How many leading path segments the transition keeps active: states below that
    /// depth are exited and entered. As in XState v5, a target that is the source or
    /// inside it leaves the source active (only what is below it is exited and entered)
    /// unless the transition says `"reenter": true`; any other target leaves the source,
    /// up to the deepest state that holds both (never the root).
    private static func domainLength(source: [String], target: [String], reenter: Bool) -> Int {
        if !reenter, target.starts(with: source) { return source.count }
        let common = zip(source, target).prefix { $0 == $1 }.count
        return max(0, min(common, source.count - 1, target.count - 1))
    }

    /// The parsed nodes numbered (in path order), each transition with a target given
    /// its plan: what it enters does not depend on the state it is taken from, only on
    /// its source and target.
    static func planned(_ parsed: [[String]: StateNode], identity: MachineIdentity)
    -> (nodes: [[String]: StateNode], list: [StateNode]) {
        let paths = parsed.keys.sorted { $0.lexicographicallyPrecedes($1) }
        var resting: [[String]: MachineState.Shape] = [:]
        for (index, path) in paths.enumerated() {
            resting[path] = MachineState.Shape(value: path, step: MachineStep(),
                                               leafHint: LeafHint(machine: identity, index: index))
        }
        func plan(_ spec: TransitionSpec, from source: [String]) -> TransitionSpec {
            guard let target = spec.target else { return spec }
            // Several targets: the domain holds the source and all of them (SCXML's LCCA).
            let domain = spec.targets.map { domainLength(source: source, target: $0, reenter: spec.reenter) }.min() ?? 0
            // A history state is entered as its default target until its parent records one.
            let history = parsed[target].flatMap { $0.kind == .history ? $0 : nil }
            let (leaf, initialHistory) = initialLeaf(from: history?.historyDefault ?? target, node: { parsed[$0] })
            let plan = targetPlan(domain: domain, leaf: leaf, node: { parsed[$0] }, resting: { resting[$0] })
            return TransitionSpec(targets: spec.targets, reenter: spec.reenter, actions: spec.actions,
                                  guardCondition: spec.guardCondition, plan: plan,
                                  history: history.map { (parent: Array(target.dropLast()), deep: $0.historyDeep) } ?? initialHistory)
        }
        var nodes: [[String]: StateNode] = [:]
        for path in paths {
            guard let node = parsed[path], let shape = resting[path] else { continue }
            nodes[path] = StateNode(
                path: shape.value, kind: node.kind, initial: node.initial,
                on: node.on.mapValues { specs in specs.map { plan($0, from: path) } },
                after: node.after.map { AfterEntry(delay: $0.delay, transitions: $0.transitions.map { plan($0, from: path) }) },
                entry: node.entry, exit: node.exit, onDone: node.onDone.map { plan($0, from: path) },
                always: node.always.map { plan($0, from: path) },
                history: node.historyDefault.map { (node.historyDeep, $0) },
                historyTakesParentInitial: node.historyTakesParentInitial, recordsHistory: node.recordsHistory,
                restingShape: shape, regions: node.regions, initialActions: node.initialActions,
                inParallelRoot: parsed[[]]?.kind == .parallel)
        }
        return (nodes, paths.compactMap { nodes[$0] })
    }

    /// The leaf entering `path` by default ends in: its initial child, that child's, and so
    /// on; an initial child that is a history state stands for its default target (XState
    /// v5: "should go to the configured default target when a history state is the initial
    /// state of the transition's target"), and the first such one is returned too, for
    /// what its parent recorded to take its place when there is a record.
    static func initialLeaf(from path: [String], node: ([String]) -> StateNode?)
    -> (leaf: [String], history: (parent: [String], deep: Bool)?) {
        var leaf = path
        var history: (parent: [String], deep: Bool)?
        // The parser refuses a chain that would come back (`checkHistoryDefaults`); the
        // bound keeps a definition made otherwise from looping.
        for _ in 0..<1024 {
            guard let initial = node(leaf)?.initial else { break }
            leaf.append(initial)
            if let pseudo = node(leaf), pseudo.kind == .history, let target = pseudo.historyDefault, target != leaf {
                if history == nil { history = (Array(leaf.dropLast()), pseudo.historyDeep) }
                leaf = target
            }
        }
        return (leaf, history)
    }

    /// What entering `leaf` (and its ancestors below `domain`) does.
    /// - Parameters:
    ///   - node: the node at a path.
    ///   - resting: the resting shape of a leaf, so that the hint's check compares one buffer.
    static func targetPlan(domain: Int, leaf: [String], node: ([String]) -> StateNode?,
                           resting: ([String]) -> MachineState.Shape?) -> TargetPlan {
        // Nothing is entered when the target is the (atomic) source itself.
        let entered = domain < leaf.count ? ((domain + 1)...leaf.count).map { Array(leaf.prefix($0)) } : []
        let leafShape = resting(leaf)
        var entryActions = entered.flatMap { node($0)?.entry ?? [] }
        let leafNode = node(leaf)
        if leafNode?.completesMachine == true {
            // The machine is done: the states still active exit, innermost first
            // (XState v5, final.test.ts: "should call exit actions in reversed document order when the machines reaches its final state").
            entryActions += (leafNode?.exit ?? []) + (node([])?.exit ?? [])
        }
        let settles = leafNode?.kind == .final && leaf.count > 1 && !(node(Array(leaf.dropLast()))?.onDone.isEmpty ?? true)
        return TargetPlan(
            domain: domain,
            shape: MachineState.Shape(value: leafShape?.value ?? leaf, step: MachineStep(entered: entered),
                                      leafHint: leafShape?.leafHint),
            entryActions: entryActions, settles: settles)
    }

    /// The plan of a transition to a history state whose parent recorded `recorded` (the
    /// leaf active when it was last left): deep, that leaf; shallow, the child of the
    /// parent it was in, entered as targeting it would (`recordedLeaf(of:in:)`).
    private func historyPlan(domain: Int, parent: [String], deep: Bool, recorded: [String]) -> TargetPlan {
        var leaf = deep ? recorded : Array(recorded.prefix(parent.count + 1))
        leaf = Self.initialLeaf(from: leaf, node: { nodes[$0] }).leaf
        return Self.targetPlan(domain: domain, leaf: leaf, node: { nodes[$0] }, resting: { nodes[$0]?.restingShape })
    }

    /// The leaf the state at `parent` recorded in `history` when it was last left, if the
    /// record names a leaf (an atomic or final state) of this machine below `parent`. A
    /// record comes from the state, which a journal or snapshot may hold from elsewhere:
    /// one that names no state of this machine, a history state or a state with children
    /// (which would send the interpreter round in circles) counts as no record.
    func recordedLeaf(of parent: [String], in history: [String: [String]]) -> [String]? {
        guard let recorded = history[parent.joined(separator: ".")], recorded.count > parent.count,
              recorded.starts(with: parent), let node = nodes[recorded], node.kind == .atomic || node.kind == .final else { return nil }
        return recorded
    }

    /// The initial state: the root's initial chain entered, its entry assignments applied
    /// (the root's first). Its step lists the states entered when the chain ends in a
    /// final state, so that the parent's `onDone` can follow (then dropped: a machine that
    /// starts propagates nothing).
    /// The events entry actions raise come with it; those they raise with a delay are in
    /// its step.
    static func start(nodes: [[String]: StateNode], context: [String: MachineValue]) -> (MachineState, raised: [MachineEvent]) {
        var path: [String] = []
        var entered: [[String]] = []
        var run = ActionRun(context: context, event: nil)
        run.perform(nodes[path]?.entry ?? [])
        // The initial chain, a history state in it standing for its target (no record yet).
        let chain = initialLeaf(from: path, node: { nodes[$0] }).leaf
        for length in stride(from: 1, through: chain.count, by: 1) {
            path = Array(chain.prefix(length))
            entered.append(path)
            run.perform(nodes[path]?.entry ?? [])
        }
        let leaf = nodes[path]
        if let leaf, leaf.completesMachine { run.perform(leaf.exit + (nodes[[]]?.exit ?? [])) }
        let scheduling = MachineStep(scheduled: run.scheduled, cancelled: run.cancelled)
        guard let leaf, let shape = leaf.restingShape else {
            return (MachineState(value: path, context: run.context, step: scheduling), run.raised)
        }
        guard leaf.kind == .final || !run.scheduled.isEmpty else { return (MachineState(shape: shape, context: run.context), run.raised) }
        var step = scheduling
        if leaf.kind == .final { step.entered = entered }
        return (MachineState(shape: MachineState.Shape(value: shape.value, step: step, leafHint: shape.leafHint),
                             context: run.context), run.raised)
    }
}

/// The context and outbox of one transition while its actions run.
struct ActionRun {
    var context: [String: MachineValue]
    /// The event being applied; nil while the initial state is entered.
    let event: MachineEvent?
    var propagations: [MachinePropagation] = []
    /// Events raised without a delay: taken before the next event.
    var raised: [MachineEvent] = []
    /// Events raised with a delay, and the ids of those cancelled.
    var scheduled: [MachineScheduledEvent] = []
    var cancelled: [String] = []

    /// Whether the actions did something a feedback acts on.
    var hasEffects: Bool { !propagations.isEmpty || !scheduled.isEmpty || !cancelled.isEmpty }

    /// The step of a transition that entered `entered` and ran these actions.
    func step(entered: [[String]]) -> MachineStep {
        MachineStep(entered: entered, propagations: propagations, scheduled: scheduled, cancelled: cancelled)
    }

    init(context: [String: MachineValue], event: MachineEvent?) {
        self.context = context
        self.event = event
    }

    mutating func perform(_ actions: [MachineAction]) {
        for action in actions {
            switch action {
            case .assign(let set):
                for (key, form) in set {
                    if case .add(let amount) = form {
                        // In place: one look-up of the key, not two.
                        Self.add(amount, to: &context[key, default: .null])
                    } else {
                        context[key] = evaluate(form, current: context[key])
                    }
                }
            case .propagate(let gear, let type, let fields):
                var payload: [String: MachineValue] = [:]
                for (key, form) in fields { payload[key] = evaluate(form, current: nil) }
                propagations.append(MachinePropagation(gear: gear, event: MachineEvent(type: type, payload: payload)))
            case .raise(let type, let fields, let delay, let id):
                var payload: [String: MachineValue] = [:]
                for (key, form) in fields { payload[key] = evaluate(form, current: nil) }
                let raisedEvent = MachineEvent(type: type, payload: payload)
                if let delay {
                    scheduled.append(MachineScheduledEvent(id: id, delay: delay, event: raisedEvent))
                } else {
                    raised.append(raisedEvent)
                }
            case .cancel(let id):
                // What this run scheduled under the id goes too.
                scheduled.removeAll { $0.id == id }
                cancelled.append(id)
            }
        }
    }

    /// `.add`: a value that is not a number counts as 0.
    private static func add(_ amount: Double, to value: inout MachineValue) {
        value = .number((value.numberValue ?? 0) + amount)
    }

    private func evaluate(_ form: ValueForm, current: MachineValue?) -> MachineValue {
        switch form {
        case .literal(let value): value
        case .from(let reference): reference.resolve(event: event, context: context)
        case .add(let amount): .number((current?.numberValue ?? 0) + amount)
        }
    }
}

extension Reference {
    /// The value it names; `null` when the path leads nowhere. The event (an empty
    /// object when nil) is made a `MachineValue` only when it is read, not per step.
    func resolve(event: MachineEvent?, context: [String: MachineValue]) -> MachineValue {
        let base = root == .event ? event?.value ?? .object([:]) : .object(context)
        return base.value(at: path) ?? .null
    }
}

/// What guards read: the state before the event, and the event.
struct GuardScope {
    let state: MachineState
    let event: MachineEvent

    func holds(_ condition: MachineGuard) -> Bool {
        switch condition {
        case .compare(let comparison, let lhs, let rhs):
            Self.compare(comparison, value(lhs), value(rhs))
        case .and(let guards): guards.allSatisfy(holds)
        case .or(let guards): guards.contains(where: holds)
        case .not(let inner): !holds(inner)
        case .isIn(let path): state.isActive(path)
        }
    }

    private func value(_ operand: MachineGuard.Operand) -> MachineValue {
        switch operand {
        case .literal(let value): value
        case .reference(let reference): reference.resolve(event: event, context: state.context)
        }
    }

    /// Equality is structural; order comparisons hold between two numbers or two
    /// strings, and are false otherwise.
    static func compare(_ comparison: MachineGuard.Comparison, _ lhs: MachineValue, _ rhs: MachineValue) -> Bool {
        switch comparison {
        case .eq: return lhs == rhs
        case .neq: return lhs != rhs
        default: break
        }
        let order: Bool?
        switch (lhs, rhs) {
        case (.number(let a), .number(let b)): order = ordered(comparison, a, b)
        case (.string(let a), .string(let b)): order = ordered(comparison, a, b)
        default: order = nil
        }
        return order ?? false
    }

    private static func ordered<T: Comparable>(_ comparison: MachineGuard.Comparison, _ a: T, _ b: T) -> Bool {
        switch comparison {
        case .lt: a < b
        case .lte: a <= b
        case .gt: a > b
        case .gte: a >= b
        case .eq: a == b
        case .neq: a != b
        }
    }
}
