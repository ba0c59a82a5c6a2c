import Dispatch

/// What a running feedback needs from whoever drives it: a `SpinLoop`, or the
/// deterministic tester of SpinTesting.
package struct FeedbackHost<Event: Sendable>: Sendable {
    /// Hands an event produced by a feedback to the driver, which applies it after every
    /// event it already has. Whether a cancelled effect may still hand over an event is
    /// the feedback's to decide, at the hand-over (a newer state cancels what comes after
    /// it, not what was handed over before). The closure, when given, is asked again right
    /// before the event is applied, and the event dropped if it says no
    /// (`ExecutionStrategy.latestStateOnly`: a newer state reached the feedback meanwhile).
    package let submit: @Sendable (Event, (@Sendable () -> Bool)?) -> Void
    /// Hands an event a Gear delivery made to the driver, with the delivery's receipt
    /// (a host that routes the Gear gave one): false when the driver takes no event now
    /// (suspended or stopped). Nil: `submit` takes it.
    package let submitCaught: (@Sendable (Event, GearReceipt?) -> Bool)?
    /// When true, executors given with `.execute(on:)` are ignored and synchronous
    /// effects run inline, so that a test is deterministic.
    package let runsInline: Bool
    /// The label of the loop (a hosted Spin's name), given to Gears as the source.
    package let label: String?
    /// Which state the driver is giving its feedbacks now (read in `receive`); nil when
    /// it does not say.
    package let delivery: StateDelivery?

    package init(label: String?, runsInline: Bool, delivery: StateDelivery? = nil,
                 submitCaught: (@Sendable (Event, GearReceipt?) -> Bool)? = nil,
                 submit: @escaping @Sendable (Event, (@Sendable () -> Bool)?) -> Void) {
        self.label = label
        self.runsInline = runsInline
        self.delivery = delivery
        self.submitCaught = submitCaught
        self.submit = submit
    }

    /// Hands over an event a Gear delivery made (see `submitCaught`).
    package func submit(caught event: Event, receipt: GearReceipt?) -> Bool {
        if let submitCaught { return submitCaught(event, receipt) }
        submit(event, nil)
        return true
    }
}

/// Which state a loop is giving its feedbacks, while it does: set by the loop on its
/// executor right before it calls their `receive`, read there by a feedback that
/// propagates Gear events (a Gear event's `GearCause`). Confined to the executor.
package final class StateDelivery: @unchecked Sendable {
    package var cause = GearCause(sequence: 0, fresh: false)

    package init() {}
}

/// Everything a feedback is instantiated with when a loop starts.
@usableFromInline
package struct FeedbackContext<Event: Sendable>: Sendable {
    package let host: FeedbackHost<Event>
    /// The feedback's index in its loop.
    package let index: Int
    /// The queue given with `.execute(on:)`, if any.
    package let executor: DispatchQueue?

    package init(host: FeedbackHost<Event>, index: Int, executor: DispatchQueue?) {
        self.host = host
        self.index = index
        self.executor = executor
    }

    /// The queue given with `.execute(on:)` as the task executor of the feedback's async
    /// effects; nil when there is none or the host runs feedbacks inline.
    var taskExecutor: DispatchQueueExecutor? {
        guard let executor, !host.runsInline else { return nil }
        return DispatchQueueExecutor(executor)
    }

    /// The queue synchronous work of the feedback is sent to; nil when it runs inline.
    var queue: DispatchQueue? {
        host.runsInline ? nil : executor
    }
}

/// A feedback of a running loop.
///
/// `start` is called once, before any state, by whoever makes the loop; `receive` only on
/// the loop's executor; `stop` from any thread, idempotently; after it, nothing a
/// feedback does reaches the loop.
@usableFromInline
package protocol FeedbackRunner<State>: AnyObject, Sendable {
    associatedtype State: Sendable
    /// Called once before the loop delivers its first state: attach to Gears, open streams.
    func start()
    /// A new state of the loop (the initial one first).
    func receive(_ state: State)
    /// Cancels every effect and detaches from everything.
    func stop()
    /// Effects started and not yet finished (async and stream forms).
    var runningEffects: Int { get }
    /// The loop was suspended and runs again: the events this runner submitted that were
    /// waiting when it suspended, or came while it was, were dropped. Called on the loop's
    /// executor before it applies or gives any state again (a runner that submits once
    /// per state, such as a timer that fired, submits again). Nothing by default.
    func resumed()
}

extension FeedbackRunner {
    @usableFromInline package func resumed() {}
}

/// A runner that needs the loop's initial state to start: the runner of a lifted
/// feedback (`ChildrenRunner`) makes its children's runs, and so attaches their Gears,
/// from it, before the loop delivers any state (a Gear event caught in the meantime is not
/// lost). The loop calls `start(initial:)` instead of `start()`.
package protocol InitialStateRunner<State>: FeedbackRunner {
    func start(initial: State)
}

extension FeedbackRunner {
    /// `start(initial:)` for a runner that takes it, `start()` for any other.
    func start(initial: State) {
        if let runner = self as? any InitialStateRunner<State> {
            runner.start(initial: initial)
        } else {
            start()
        }
    }
}

/// A feedback that also hears which event made each new state (a transition table's
/// effects start from the row that matched). The loop calls `applied` on its executor
/// for every applied event, before observers see its transition and `receive` gets the
/// new state.
package protocol TransitionRunner<State, Event>: FeedbackRunner {
    associatedtype Event: Sendable
    func applied(_ event: Event, from: State, to: State)
}
