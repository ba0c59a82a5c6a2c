import Logging
import SpinCore

/// What a hosted Spin's observers (`LoopServer.observe`) use, in one object per Spin: its
/// handlers capture only this, not one closure context each (an awake Spin keeps them).
final class SpinObservation: @unchecked Sendable {
    let name: String
    weak var spin: (any HostedSpin)?
    let feed: SpinFeed
    let journal: Journal?
    /// What it consumed of other Spins' outboxes since its last transition.
    let consumption: GearConsumption?
    /// Its Gear events (nil: it is on no Gear).
    let capture: GearCapture?
    let counters: Metrics.SpinMetrics
    let common: Common
    /// The transition being given to the feedbacks, kept for the observer after them:
    /// touched only on the Spin's executor (hence `@unchecked`).
    var stash: HostedTransition?

    /// What every Spin's observation shares: one object per server.
    final class Common: Sendable {
        let host: SpinHost
        let router: GearRouter
        let metrics: Metrics
        /// Where suspensions are kept across restarts (nil without a journal).
        let markers: SuspensionMarker?
        let logger: Logger
        let maxState: Int

        init(host: SpinHost, router: GearRouter, metrics: Metrics, markers: SuspensionMarker?, logger: Logger,
             maxState: Int) {
            self.host = host
            self.router = router
            self.metrics = metrics
            self.markers = markers
            self.logger = logger
            self.maxState = maxState
        }
    }

    init(spin: any HostedSpin, feed: SpinFeed, journal: Journal?, consumption: GearConsumption?, capture: GearCapture?,
         common: Common) {
        self.name = spin.name
        self.spin = spin
        self.feed = feed
        self.journal = journal
        self.consumption = consumption
        self.capture = capture
        self.counters = common.metrics.spin(spin.name)
        self.common = common
    }

    /// The Spin goes back to its last durable state, as when its storage fails, and every
    /// acknowledgement still waiting gets `error`; then it goes on (a refused state,
    /// `holdBack`) or stays suspended until resumed (something did not encode).
    func refuse(_ error: DurabilityError) {
        if let journal { return journal.fail(spin: name, error) }
        let (feed, name, router, host) = (feed, name, common.router, common.host)
        feed.fail(error, rolledBack: true)
        host.spin(named: name)?.hold { LoopServer.rollBack(feed, name, router) } then: {
            feed.recovered()
            host.spin(named: name)?.release()
        }
    }

    func unencodable(_ reason: String) { refuse(.unencodable(spin: name, reason)) }

    /// Whether `transition`'s state is too large: then the Spin is held back, and the
    /// transition goes nowhere.
    func tooLarge(_ transition: HostedTransition) -> Bool {
        let bytes = transition.state.bytes.count
        guard bytes > common.maxState, let spin else { return false }
        spin.holdBack()
        refuse(.stateTooLarge(spin: name, bytes: bytes, limit: common.maxState))
        return true
    }

    /// The feed and the count take `transition`, with what the Spin consumed of Gears
    /// since its last one; nil when its state is too large (it went nowhere).
    private func accept(_ transition: HostedTransition) -> HostedTransition? {
        if tooLarge(transition) { return nil }
        var transition = transition
        if let consumption { transition.consumed.merge(consumption.take()) { max($0, $1) } }
        feed.applied(transition)
        counters.countApplied()
        return transition
    }

    /// A Spin on no Gear applied `transition`: its feed, count and journal have it.
    func applied(_ transition: HostedTransition) {
        guard let transition = accept(transition) else { return }
        journal?.record(spin: name, transition)
    }

    /// A Spin on a Gear applied `transition`: its feed has it now; the journal once the
    /// feedbacks were given its state (`afterFeedbacks`), with the Gear events it sent.
    func appliedBeforeFeedbacks(_ transition: HostedTransition) {
        guard let transition = accept(transition) else { return }
        capture?.begin(transition.sequence)
        stash = transition
    }

    func afterFeedbacks() {
        guard var transition = stash, let capture else { return }
        stash = nil
        var failed: String?
        capture.end { outbox, failure in
            if let failure { return failed = failure }
            transition.outbox = outbox
            if let journal {
                journal.record(spin: name, transition)
            } else {
                common.router.sent(name, outbox)
            }
        }
        if let failed { spin?.refuse(unencodable: failed) }
    }

    /// Tells the router, then logs, counts and stores (when persisting) the Spin's
    /// suspension or resumption.
    func suspensionChanged(_ suspension: Suspension?) {
        // The router first (it was registered with `watchingSuspensions: false`).
        if consumption != nil { common.router.spinSuspensionChanged(name, suspended: suspension != nil) }
        if suspension != nil { capture?.endInitial() }
        // A hold for failing storage is the journal's to log, and not kept across a restart.
        if case .requested(storageHoldReason)? = suspension?.reason { return }
        let (logger, markers) = (common.logger, common.markers)
        guard let suspension else {
            markers?.remove(spin: name)
            logger.notice("Spin \(name) resumed")
            return
        }
        common.metrics.spinSuspended(spin: name)
        logger.warning("Spin \(name) suspended at sequence \(suspension.sequence): \(SuspensionMarker.describe(suspension.reason)); it applies no event until POST /v1/spins/\(name)/resume")
        do {
            try markers?.write(spin: name, suspension)
        } catch {
            logger.error("Spin \(name): cannot store its suspension, a restart will run it again: \(error)")
        }
    }
}
