import Dispatch
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

// The GearRouter's senders: what a Spin's Gears propagate, numbered in its outbox (see `GearRouter`).
extension GearRouter {
    // MARK: Senders

    /// The capture of `spin`'s Gear events (it is attached to a Gear); from now on what it
    /// propagates is routed as its outbox. Nil for a Spin on no Gear.
    ///
    /// - Parameters:
    ///   - initial: the Spin has no history (sequence 0, nothing in its outbox): what its
    ///     feedbacks propagate for its initial state is sent, once.
    ///   - recorded: the sequence it starts from.
    ///   - faulted: whether it refused a state and is going back (`HostedSpin.isFaulted`):
    ///     what it propagates meanwhile is dropped, as its state will be.
    ///   - refuse: how the router suspends it for a Gear event that does not encode.
    package func sender(_ spin: String, initial: Bool = false, recorded: UInt64 = 0,
                        faulted: @escaping @Sendable () -> Bool = { false },
                        refuse: (@Sendable (String) -> Void)? = nil) -> GearCapture? {
        guard !gearNames(of: spin).isEmpty else { return nil }
        let capture = GearCapture(spin: spin, initial: initial, recorded: recorded, faulted: faulted, refuse: refuse)
        captures.withLock { $0[spin] = capture }
        return capture
    }

    /// A Spin's feedbacks propagated `json` on Gear `gear` (from a routed port).
    func propagated(gear: String, _ json: Result<[UInt8], any Error>, from source: String?, cause: GearCause?) {
        guard let source, let capture = captures.withLock({ $0[source] }) else {
            // Not a Spin of this server (code that propagates on a hosted Gear itself):
            // there is no outbox to keep it in. Sent at once, at most once.
            guard case .success(let bytes) = json else {
                logger.error("Gear \(gear): an event propagated from \(source ?? "outside the server's Spins") does not encode as JSON; dropped")
                return
            }
            section.run { [self] in untracked(gear: gear, event: bytes, from: source) }
            return
        }
        // A state given again (a start, a resume) sent its events when it was new; but
        // the initial state of a Spin without history is new.
        if let cause, !cause.fresh, !capture.takesInitial(cause) { return }
        switch json {
        case .failure(let error):
            let reason = "a Gear event it propagated on \(gear) does not encode as JSON: \(HostedLoop<Int, Int>.describe(error))"
            // In a transition's delivery the transition fails (`GearCapture.end`); apart
            // from one the Spin is suspended all the same.
            if capture.fail(reason, cause: cause) == .alone { refuseUnencodable(source, reason) }
        case .success(let bytes):
            let output = GearOutput(gear: gear, event: bytes, cause: cause?.sequence ?? 0)
            if let cause {
                switch capture.add(output, cause: cause) {
                case .kept, .dropped: return
                case .alone: break
                }
            } else if capture.isFaulted {
                return
            }
            alone(source, [output])
        }
    }

    /// Called when a Gear event of `spin` did not encode outside a transition.
    private func refuseUnencodable(_ spin: String, _ reason: String) {
        captures.withLock { $0[spin] }?.refuse(unencodable: reason)
    }

    /// Gear events of `spin` that belong to no transition being journaled.
    private func alone(_ spin: String, _ outputs: [GearOutput]) {
        switch mode {
        case .inMemory: sent(spin, outputs)
        case .journaled, .cluster: recordAlone(spin, outputs)
        }
    }

    /// In memory: `spin`'s Gear events are sent now (its transition's state was given).
    package func sent(_ spin: String, _ outputs: [GearOutput]) {
        guard !outputs.isEmpty else { return }
        section.run { [self] in
            var position = memoryPositions[spin] ?? 0
            let records = outputs.map { output -> OutboxRecord in
                position += 1
                return OutboxRecord(position: position, gear: output.gear, cause: output.cause, event: output.event)
            }
            memoryPositions[spin] = position
            add(records, from: spin, redelivered: false)
            finish()
        }
    }
}
