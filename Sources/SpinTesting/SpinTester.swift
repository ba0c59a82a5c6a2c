import SpinCore
import Testing
import SpinConcurrency

/// Drives a Spin step by step and asserts every state and every event, in the manner of
/// TCA's `TestStore`.
///
/// - `send(_:_:)` applies an event as a client would emit it; the closure states how the
///   state changes (no closure: the state must not change).
/// - `receive(_:_:)` asserts the next event a feedback (or a Gear) produced, then applies it.
/// - `finish()` fails if a produced event was not received or an effect is still running.
///
/// Feedbacks run inline (executors from `.execute(on:)` are ignored) and async effects
/// run as tasks; effects that wait should sleep on an injected `ManualClock`, which the
/// test moves with `advance(by:)`. Nothing in a passing test sleeps: `receive` waits for an effect's
/// event only as long as it takes to arrive, and `timeout` only bounds a failing test.
///
/// Semantics match `SpinLoop`: an event an effect produces after a newer state cancelled
/// it is dropped, not received (under `.latestStateOnly`, also one still waiting when a
/// newer state reached its feedback); one it handed over before is received.
public final class SpinTester<State: Sendable & Equatable, Event: Sendable & Equatable> {
    /// The state as the reducer made it from every event sent or received.
    public private(set) var state: State
    /// Events applied so far.
    public private(set) var sequence: UInt64 = 0

    private let reducer: Reducer<State, Event>
    private let runners: [any FeedbackRunner<State>]
    /// The runners that also hear each applied event (a transition table's effects).
    private let transitionRunners: [any TransitionRunner<State, Event>]
    /// Events produced by effects and Gears, not received yet (a class: effects append from
    /// their tasks, so the storage outlives `init`'s borrow of `self`).
    private let inbox = ProducedEvents<Event>()
    private let timeout: Duration
    private let clock: ManualClock?
    private var finished = false

    /// Starts the Spin's feedbacks (Gear subscriptions first) and gives them the initial
    /// state.
    /// - Parameters:
    ///   - clock: the manual clock the Spin's effects sleep on, which `advance(by:)` moves.
    ///   - timeout: how long `receive`, `advance` and `finish` wait for effects before
    ///     they fail or go on; only a failing test ever waits that long.
    public init(_ spin: Spin<State, Event>, clock: ManualClock? = nil, label: String? = nil,
                timeout: Duration = .seconds(10)) {
        self.clock = clock
        self.state = spin.initialState
        self.reducer = spin.reducer
        self.timeout = timeout
        let inbox = self.inbox
        let host = FeedbackHost<Event>(label: label, runsInline: true) { event, isCurrent in
            inbox.items.withLock { $0.append(ProducedEvent(event: event, isCurrent: isCurrent)) }
        }
        self.runners = spin.feedbacks.enumerated().map { index, feedback in
            feedback.makeRunner(FeedbackContext(host: host, index: index, executor: feedback.executor))
        }
        self.transitionRunners = runners.compactMap { $0 as? any TransitionRunner<State, Event> }
        for runner in runners { runner.start() }
        for runner in runners { runner.receive(state) }
    }

    deinit {
        for runner in runners { runner.stop() }
    }

    /// Applies `event` as if a client emitted it and asserts the new state.
    public func send(
        _ event: Event,
        _ update: ((inout State) throws -> Void)? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let waiting = inbox.items.withLock { $0.count }
        if waiting > 0 {
            Issue.record("Must receive \(waiting) produced event(s) before sending \(event): \(pendingDescription())",
                         sourceLocation: sourceLocation)
        }
        apply(event, update, sourceLocation: sourceLocation)
    }

    /// Waits for the next event a feedback or Gear produced, asserts it equals `expected`,
    /// applies it and asserts the new state.
    public func receive(
        _ expected: Event,
        _ update: ((inout State) throws -> Void)? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        guard let next = await nextProduced() else {
            Issue.record("Expected to receive \(expected), but no event was produced within \(timeout)",
                         sourceLocation: sourceLocation)
            return
        }
        if next != expected {
            Issue.record("Received an unexpected event:\n  expected: \(expected)\n  received: \(next)",
                         sourceLocation: sourceLocation)
        }
        apply(next, update, sourceLocation: sourceLocation)
    }

    /// Asserts that nothing is left: every produced event was received and no effect is
    /// still running. Stops the feedbacks.
    public func finish(sourceLocation: SourceLocation = #_sourceLocation) async {
        guard !finished else { return }
        finished = true
        await waitUntil { self.runningEffects == 0 }
        let left = inbox.items.withLock { items in
            items.removeAll { $0.isCurrent.map { !$0() } ?? false }
            return items.count
        }
        if left > 0 {
            Issue.record("\(left) produced event(s) were not received: \(pendingDescription())",
                         sourceLocation: sourceLocation)
        }
        let running = runningEffects
        if running > 0 {
            Issue.record("\(running) effect(s) are still running at the end of the test",
                         sourceLocation: sourceLocation)
        }
        for runner in runners { runner.stop() }
    }

    /// Lets every running effect reach its next sleep on the clock (or finish), then moves
    /// the clock by `duration`, waking the effects whose deadline passed.
    ///
    /// Effects start as tasks: advancing a clock before an effect sleeps on it would make
    /// the effect sleep past the new time. This waits until the clock has as many sleepers
    /// as there are running effects (bounded by `timeout`, for effects that wait on
    /// something else).
    public func advance(by duration: Duration, sourceLocation: SourceLocation = #_sourceLocation) async {
        guard let clock else {
            Issue.record("advance(by:) needs the ManualClock the Spin sleeps on: SpinTester(spin, clock: clock)",
                         sourceLocation: sourceLocation)
            return
        }
        await waitUntil { clock.sleepers >= self.runningEffects }
        await clock.advance(by: duration)
    }

    /// Drops every produced event not received yet (for tests that assert only a part).
    public func skipReceivedEvents() {
        inbox.items.withLock { $0.removeAll() }
    }

    /// Effects started and not finished (async and stream forms).
    public var runningEffects: Int {
        runners.reduce(0) { $0 + $1.runningEffects }
    }

    // MARK: -

    private func apply(_ event: Event, _ update: ((inout State) throws -> Void)?, sourceLocation: SourceLocation) {
        // A partial reducer may decline the event: as in `SpinLoop`, nothing changes and
        // no feedback hears of it (the state must then stay as it was).
        let applied = reducer.apply(event, to: state)
        let next = applied ?? state
        var expected = state
        do {
            try update?(&expected)
        } catch {
            Issue.record("The state update of \(event) threw \(error)", sourceLocation: sourceLocation)
        }
        if expected != next {
            Issue.record("""
                State after \(event) is not the expected one:
                  expected: \(expected)
                    actual: \(next)
                """, sourceLocation: sourceLocation)
        }
        guard applied != nil else { return }
        let from = state
        state = next
        sequence += 1
        for runner in transitionRunners { runner.applied(event, from: from, to: next) }
        for runner in runners { runner.receive(next) }
    }

    private func nextProduced() async -> Event? {
        var next: Event?
        await waitUntil {
            next = self.inbox.items.withLock { items in
                // Cancelled effects' events are dropped, as the loop drops them.
                while let first = items.first, let isCurrent = first.isCurrent, !isCurrent() { items.removeFirst() }
                return items.isEmpty ? nil : items.removeFirst().event
            }
            return next != nil
        }
        return next
    }

    /// Gives effect tasks the chance to run until `condition` holds or `timeout` passed
    /// (real time: a passing test only yields; a failing one waits for the timeout).
    private func waitUntil(_ condition: () -> Bool) async {
        let realClock = ContinuousClock()
        let deadline = realClock.now.advanced(by: timeout)
        var yields = 0
        while !condition() && realClock.now < deadline {
            await Task.yield()
            yields += 1
            if yields % 100 == 0 { try? await Task.sleep(for: .milliseconds(1)) }
        }
    }

    private func pendingDescription() -> String {
        inbox.items.withLock { $0.map { "\($0.event)" }.joined(separator: ", ") }
    }
}

private struct ProducedEvent<Event: Sendable>: Sendable {
    var event: Event
    /// As in `SpinLoop`: an effect cancelled by a newer state since does not get it applied.
    var isCurrent: (@Sendable () -> Bool)?
}

private final class ProducedEvents<Event: Sendable>: Sendable {
    let items = Protected<[ProducedEvent<Event>]>([])
}
