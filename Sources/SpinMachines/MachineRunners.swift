import SpinCore
import Synchronization
import SpinConcurrency

/// The `after` timers of a running machine (see `MachineDefinition.spin`).
///
/// Unlike a per-state effect, a timer outlives states that keep its state active: it is
/// keyed by (state path, delay), started when that state is entered (or is active in the
/// loop's first state) and cancelled when the state is left or re-entered. A timer
/// hands its event over only while it is still the current one for its key, so nothing
/// of a cancelled timer is applied.
final class MachineTimerRunner: FeedbackRunner {
    typealias State = MachineState

    private struct Key: Hashable {
        let path: [String]
        let delay: Int
    }

    private struct Timer {
        let token: UInt64
        let task: Task<Void, Never>?
        var finished = false
    }

    private struct Timers {
        var running: [Key: Timer] = [:]
        /// The shape of the last state received: the same one again is the state given
        /// again when the loop resumes, which re-enters nothing.
        var lastShape: MachineState.Shape?
        var nextToken: UInt64 = 0
        var stopped = false
    }

    private let definition: MachineDefinition
    private let clock: any Clock<Duration>
    private let context: FeedbackContext<MachineEvent>
    private let timers = Protected(Timers())

    init(definition: MachineDefinition, clock: any Clock<Duration>, context: FeedbackContext<MachineEvent>) {
        self.definition = definition
        self.clock = clock
        self.context = context
    }

    func start() {}

    func receive(_ state: MachineState) {
        var wanted: [Key] = []
        for path in state.activePaths {
            for entry in definition.nodes[path]?.after ?? [] { wanted.append(Key(path: path, delay: entry.delay)) }
        }
        let cancelled = timers.withLock { timers -> [Task<Void, Never>] in
            guard !timers.stopped else { return [] }
            let reentered = timers.lastShape === state.shape ? [] : Set(state.step.entered)
            timers.lastShape = state.shape
            var cancelled: [Task<Void, Never>] = []
            for (key, timer) in timers.running where !wanted.contains(key) || reentered.contains(key.path) {
                if let task = timer.task { cancelled.append(task) }
                timers.running[key] = nil
            }
            // No timer left: the table's buffer goes too (an idle Spin keeps nothing here).
            if timers.running.isEmpty, wanted.isEmpty { timers.running = [:] }
            for key in wanted where timers.running[key] == nil {
                timers.nextToken += 1
                let token = timers.nextToken
                timers.running[key] = Timer(token: token, task: makeTask(key, token: token))
            }
            return cancelled
        }
        for task in cancelled { task.cancel() }
    }

    /// A timer that fired while its state stayed active had its event dropped by the
    /// suspension (applying it would have left or re-entered the state, or the event was
    /// declined as a late one and changes nothing again): it fires again, at once.
    func resumed() {
        let replaced = timers.withLock { timers -> [Task<Void, Never>] in
            guard !timers.stopped else { return [] }
            var replaced: [Task<Void, Never>] = []
            for (key, timer) in timers.running where timer.finished {
                if let task = timer.task { replaced.append(task) }
                timers.nextToken += 1
                let token = timers.nextToken
                timers.running[key] = Timer(token: token, task: makeTask(key, token: token, delay: 0))
            }
            return replaced
        }
        for task in replaced { task.cancel() }
    }

    private func makeTask(_ key: Key, token: UInt64, delay: Int? = nil) -> Task<Void, Never> {
        let clock = self.clock
        let submit = context.host.submit
        let timers = self.timers
        let isCurrent: @Sendable () -> Bool = {
            timers.withLock { !$0.stopped && $0.running[key]?.token == token }
        }
        return Self.sleeping(on: clock, milliseconds: delay ?? key.delay, whileCurrent: isCurrent, then: {
            submit(MachineEvent.after(state: key.path, delay: key.delay), isCurrent)
        }, finally: {
            timers.withLock { timers in
                if timers.running[key]?.token == token { timers.running[key]?.finished = true }
            }
        })
    }

    /// A task that sleeps `milliseconds` on `clock`, then runs `fire` unless it was
    /// cancelled or is no longer current; `finally` runs in any case. What a machine's
    /// timers and delayed events share.
    static func sleeping(on clock: any Clock<Duration>, milliseconds: Int, whileCurrent isCurrent: @escaping @Sendable () -> Bool,
                         then fire: @escaping @Sendable () -> Void,
                         finally: @escaping @Sendable () -> Void = {}) -> Task<Void, Never> {
        Task {
            defer { finally() }
            do {
                try await clock.sleep(for: .milliseconds(milliseconds))
            } catch {
                return
            }
            guard !Task.isCancelled, isCurrent() else { return }
            fire()
        }
    }

    func stop() {
        let tasks = timers.withLock { timers -> [Task<Void, Never>] in
            timers.stopped = true
            defer { timers.running = [:] }
            return timers.running.values.compactMap(\.task)
        }
        for task in tasks { task.cancel() }
    }

    /// Timers that have not fired yet.
    var runningEffects: Int {
        timers.withLock { $0.running.values.filter { !$0.finished }.count }
    }
}

/// Pushes each new state's `step.propagations` into their Gears (see `MachineDefinition.spin`).
/// Skips the first state: it is where the loop starts, not the result of a transition
/// made now.
final class MachinePropagationRunner: FeedbackRunner {
    typealias State = MachineState

    private let gears: [String: Gear<MachineEvent>]
    private let label: String?
    /// Which state the loop is giving (the `GearCause` of what is propagated).
    private let delivery: StateDelivery?
    /// Two flags, not a lock: every awake machine on a Gear has one of these runners.
    private let isFirstState = Atomic<Bool>(true)
    private let stopped = Atomic<Bool>(false)

    init(gears: [String: Gear<MachineEvent>], label: String?, delivery: StateDelivery?) {
        self.gears = gears
        self.label = label
        self.delivery = delivery
    }

    func start() {}

    func receive(_ machineState: MachineState) {
        let first = isFirstState.exchange(false, ordering: .acquiringAndReleasing)
        guard !first, !stopped.load(ordering: .acquiring) else { return }
        let cause = delivery?.cause
        for propagation in machineState.step.propagations {
            gears[propagation.gear]?.propagate(propagation.event, from: label, cause: cause)
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
    }

    var runningEffects: Int { 0 }
}
