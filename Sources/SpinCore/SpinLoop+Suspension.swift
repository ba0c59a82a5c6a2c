import Dispatch

/// Suspending and resuming a loop: the runaway guard and `suspend(reason:)`.
extension SpinLoop {
    /// Suspends the loop (see the runaway guard in the type's documentation) until
    /// `resume()`. Returns false if it is already suspended or stopped.
    @discardableResult
    public func suspend(reason: String) -> Bool {
        suspend(.requested(reason))
    }

    /// Runs a suspended loop again, the feedback count starting from zero.
    ///
    /// - Parameters:
    ///   - events: external events applied first, as one batch, before anything the
    ///     feedbacks produce: the correction of a runaway (a `set`) gets in before the
    ///     runaway can spend its budget again. With none, the current state goes to every
    ///     feedback again, so that their effects start again; with some, the feedbacks
    ///     get the states those events make.
    ///   - onApplied: as for `emit(contentsOf:)`.
    /// - Returns: false if the loop was not suspended (or is stopped): nothing is enqueued.
    @discardableResult
    public func resume(
        applying events: [Event] = [], onApplied: (@Sendable (Transition<State, Event>?) -> Void)? = nil
    ) -> Bool {
        resume(events, onApplied: Self.lastApplied(onApplied))
    }

    /// `resume(applying:onApplied:)` with the replies of `emit(batch:...)`: `onResult`
    /// gets the batch's result, or nil if the loop stopped or suspended again first.
    /// `origin`: who sent the events (`Transition.origin`).
    @discardableResult
    public func resume(
        applyingBatch events: [Event], origin: String? = nil,
        onResult: @escaping @Sendable (BatchResult<State, Event>?) -> Void
    ) -> Bool {
        resume(events, origin: origin, onApplied: onResult)
    }

    func resume(_ events: [Event], origin: String? = nil, onApplied: Completion?) -> Bool {
        shared.withLock { shared -> Bool in
            guard shared.phase != .stopped, shared.suspension != nil else { return false }
            shared.suspension = nil
            for (offset, event) in events.enumerated() {
                let last = offset == events.count - 1
                shared.pending.append(Pending(event: event, onApplied: last ? onApplied : nil,
                                              startsBatch: offset == 0, endsBatch: last, isExternal: true,
                                              origin: origin))
            }
            shared.pendingExternal += events.count
            // Queued under the lock, so that it runs after the suspension's own block.
            section.schedule { [self] in
                // Before `start()`, start gives the state; nothing is applied before it.
                guard self.shared.withLock({ $0.phase == .running }) else { return }
                for entry in self.shared.withLock({ $0.suspensionHandlers }) { entry.handler(nil) }
                for runner in runners { runner.resumed() }
                feedbackRun = 0
                if events.isEmpty {
                    giveFeedbacksTheStateIfSuspensionAllows()
                } else {
                    feedbacksHaveState = true
                }
                drain()
            }
            return true
        }
    }

    /// True from the moment the loop suspends. A suspension by the budget publishes the
    /// state it stopped at first; after `suspend(reason:)` (or too many pending feedback
    /// events) `state` may still catch up with the events the executor was applying, up to
    /// the end of that batch; `onSuspensionChange` gets the final sequence.
    public var isSuspended: Bool {
        shared.withLock { $0.suspension != nil }
    }

    /// Why the loop is suspended and at which sequence, or nil while it is not.
    public var suspension: Suspension? {
        shared.withLock { shared in shared.suspension.map { Suspension(reason: $0, sequence: shared.sequence) } }
    }

    /// Calls `handler` on the loop's executor once per suspension, with the sequence the
    /// loop holds once the suspension took effect, and with nil once per `resume()` of a
    /// started loop, before the feedbacks get the state again. Cancel the subscription
    /// to detach.
    public func onSuspensionChange(_ handler: @escaping @Sendable (Suspension?) -> Void) -> SpinSubscription {
        let id = shared.withLock { shared -> UInt64 in
            shared.nextID += 1
            shared.suspensionHandlers.append(SuspensionHandler(id: shared.nextID, handler: handler))
            return shared.nextID
        }
        return SpinSubscription { [weak self] in
            self?.shared.withLock { $0.suspensionHandlers.removeAll { $0.id == id } }
        }
    }

    func suspend(_ reason: Suspension.Reason) -> Bool {
        let dropped = shared.withLock { shared in suspendLocked(&shared, reason) }
        guard let dropped else { return false }
        for pending in dropped { pending.onApplied?(nil) }
        return true
    }

    /// Marks the loop suspended and takes every pending event out (the caller gives the
    /// external batches among them `onApplied(nil)` outside the lock); nil when it is
    /// already suspended or stopped.
    func suspendLocked(_ shared: inout Shared, _ reason: Suspension.Reason) -> [Pending]? {
        guard shared.phase != .stopped, shared.suspension == nil else { return nil }
        shared.suspension = reason
        interruptions.add(1, ordering: .relaxed)
        let dropped = shared.pending
        shared.pending = []
        shared.pendingExternal = 0
        shared.pendingFeedback = 0
        // Queued under the lock, so that a `resume()` right after runs after it.
        section.schedule { [self] in announce(reason) }
        return dropped
    }

    /// In `section`, after the batch the executor was applying: tells the handlers.
    func announce(_ reason: Suspension.Reason) {
        feedbacksHaveState = false
        let handlers = shared.withLock { $0.suspensionHandlers }
        let suspension = Suspension(reason: reason, sequence: currentSequence)
        for entry in handlers { entry.handler(suspension) }
    }

    /// In `section`: gives the current state to every feedback, unless a suspension holds
    /// the loop or they have it already.
    func giveFeedbacksTheStateIfSuspensionAllows() {
        let gives = shared.withLock { $0.phase == .running && $0.suspension == nil }
        guard gives, !feedbacksHaveState else { return }
        feedbacksHaveState = true
        delivery.cause = GearCause(sequence: currentSequence, fresh: false)
        for runner in runners { runner.receive(current) }
    }

    /// Stops the loop: cancels every effect, finishes every `states` sequence, detaches
    /// from Gears and drops pending events (their `onApplied` get nil). Idempotent; may
    /// be called from any thread, the loop's executor included.
}
