import SpinConcurrency
/// Runs a lifted feedback (`Feedback+Scope.swift`): one run of the child's feedback per
/// child a parent state has (one for a scoped child, none or one for an optional child,
/// one per id for a collection), each made and started when its key appears and stopped
/// when it goes, which cancels its effects.
///
/// `runs` is touched by `receive` (on the loop's executor) and `stop` (from any thread),
/// so it lives under a lock; a child run's own `receive` and `stop` are called outside
/// it (a run stopped meanwhile ignores what it receives afterwards: `FeedbackRunner`).
class ChildrenRunner<Parent: Sendable, Key: Hashable & Sendable, Child: Sendable, Children: Sequence>:
    InitialStateRunner, @unchecked Sendable where Children.Element == (Key, Child) {
    fileprivate struct Run {
        let runner: any FeedbackRunner<Child>
        /// The state it saw last, kept only when `same` compares states.
        var last: Child?
    }

    fileprivate let children: @Sendable (Parent) -> Children
    private let same: (@Sendable (Child, Child) -> Bool)?
    private let make: @Sendable (Key) -> any FeedbackRunner<Child>
    fileprivate let runs = Protected<(runs: [Key: Run], stopped: Bool)>(([:], false))

    init(children: @escaping @Sendable (Parent) -> Children, same: (@Sendable (Child, Child) -> Bool)?,
         make: @escaping @Sendable (Key) -> any FeedbackRunner<Child>) {
        self.children = children
        self.same = same
        self.make = make
    }

    func start() {}

    /// Makes and starts the runs of the initial state's children now, before the loop
    /// delivers any state, so that their Gear subscriptions are open as the loop's own
    /// are (a Gear event is not lost because a child's run did not exist yet). Their
    /// first `receive` delivers the initial state to them as usual.
    func start(initial: Parent) {
        var started: [(any FeedbackRunner<Child>, Child)] = []
        runs.withLock { contents in
            guard !contents.stopped, contents.runs.isEmpty else { return }
            for (key, child) in children(initial) where contents.runs[key] == nil {
                let runner = make(key)
                contents.runs[key] = Run(runner: runner, last: nil)
                started.append((runner, child))
            }
        }
        for (runner, child) in started { runner.start(initial: child) }
    }

    func receive(_ state: Parent) {
        var deliveries: [(any FeedbackRunner<Child>, Child)] = []
        var started: [(any FeedbackRunner<Child>, Child)] = []
        var gone: [any FeedbackRunner<Child>] = []
        runs.withLock { contents in
            guard !contents.stopped else { return }
            var present = Set<Key>()
            for (key, child) in children(state) {
                guard present.insert(key).inserted else { continue }      // a repeated id: its first element
                if var run = contents.runs[key] {
                    if let same, let last = run.last, same(last, child) { continue }
                    if same != nil { run.last = child }
                    contents.runs[key] = run
                    deliveries.append((run.runner, child))
                } else {
                    let runner = make(key)
                    contents.runs[key] = Run(runner: runner, last: same != nil ? child : nil)
                    started.append((runner, child))
                    deliveries.append((runner, child))
                }
            }
            if contents.runs.count > present.count {
                for (key, run) in contents.runs where !present.contains(key) {
                    gone.append(run.runner)
                    contents.runs[key] = nil
                }
            }
        }
        // Outside the lock: starting a run attaches its Gears and may start nested runs.
        for runner in gone { runner.stop() }
        for (runner, child) in started { runner.start(initial: child) }
        for (runner, child) in deliveries { runner.receive(child) }
    }

    func stop() {
        let all = runs.withLock { contents -> [any FeedbackRunner<Child>] in
            contents.stopped = true
            defer { contents.runs = [:] }
            return contents.runs.values.map(\.runner)
        }
        for runner in all { runner.stop() }
    }

    var runningEffects: Int {
        runs.withLock { $0.runs.values.map(\.runner) }.reduce(0) { $0 + $1.runningEffects }
    }
}

/// A `ChildrenRunner` whose child feedback hears transitions (a transition table's
/// effects): the loop tells it every applied event, and it tells the run of the child the
/// event is for, with that child's part of the states before and after.
///
/// `@unchecked Sendable`: as `ChildrenRunner`; `route` is immutable.
final class TransitionChildrenRunner<Parent: Sendable, ParentEvent: Sendable, Key: Hashable & Sendable, Child: Sendable,
                                     ChildEvent: Sendable, Children: Sequence>:
    ChildrenRunner<Parent, Key, Child, Children>, TransitionRunner, @unchecked Sendable
where Children.Element == (Key, Child) {
    typealias Event = ParentEvent

    private let route: @Sendable (ParentEvent) -> (Key, ChildEvent)?

    init(children: @escaping @Sendable (Parent) -> Children, same: (@Sendable (Child, Child) -> Bool)?,
         route: @escaping @Sendable (ParentEvent) -> (Key, ChildEvent)?,
         make: @escaping @Sendable (Key) -> any FeedbackRunner<Child>) {
        self.route = route
        super.init(children: children, same: same, make: make)
    }

    func applied(_ event: ParentEvent, from: Parent, to: Parent) {
        guard let (key, childEvent) = route(event),
              let runner = runs.withLock({ $0.runs[key]?.runner }) as? any TransitionRunner<Child, ChildEvent>,
              let before = part(of: from, at: key), let after = part(of: to, at: key) else { return }
        runner.applied(childEvent, from: before, to: after)
    }

    private func part(of state: Parent, at key: Key) -> Child? {
        children(state).first { $0.0 == key }?.1
    }
}
