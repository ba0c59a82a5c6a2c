/// Runs a lifted feedback (`Feedback+Scope.swift`): one run of the child's feedback per
/// child a parent state has (one for a scoped child, none or one for an optional child,
/// one per id for a collection), each made and started when its key appears and stopped
/// when it goes, which cancels its effects.
///
/// `runs` is touched by `receive` (on the loop's executor) and `stop` (from any thread),
/// so it lives under a lock; a child run's own `receive` and `stop` are called outside
/// it (a run stopped meanwhile ignores what it receives afterwards: `FeedbackRunner`).
final class ChildrenRunner<Parent: Sendable, Key: Hashable & Sendable, Child: Sendable, Children: Sequence>:
    FeedbackRunner where Children.Element == (Key, Child) {
    private struct Run {
        let runner: any FeedbackRunner<Child>
        /// The state it saw last, kept only when `same` compares states.
        var last: Child?
    }

    private let children: @Sendable (Parent) -> Children
    private let same: (@Sendable (Child, Child) -> Bool)?
    private let make: @Sendable (Key) -> any FeedbackRunner<Child>
    private let runs = Protected<(runs: [Key: Run], stopped: Bool)>(([:], false))

    init(children: @escaping @Sendable (Parent) -> Children, same: (@Sendable (Child, Child) -> Bool)?,
         make: @escaping @Sendable (Key) -> any FeedbackRunner<Child>) {
        self.children = children
        self.same = same
        self.make = make
    }

    func start() {}

    func receive(_ state: Parent) {
        var deliveries: [(any FeedbackRunner<Child>, Child)] = []
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
                    runner.start()
                    contents.runs[key] = Run(runner: runner, last: same != nil ? child : nil)
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
        for runner in gone { runner.stop() }
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
