import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

/// Reads the cluster's Gear outbox (`spin_gear_outbox`) for this node's `GearRouter`.
///
/// A Spin's Gear events are written to the outbox by the journal commit that makes their
/// cause durable (`PostgresSpinStore`), in commit order, and announced with `NOTIFY`. One
/// reader follows the outbox from where it stood when the node started and hands every
/// event to the router (`GearRouter.received`), which delivers it to the Spins this node
/// serves that catch it and have not consumed it. When a Spin starts here (its lease
/// came to this node), the router asks for what it has not consumed from before
/// (`catchUp`): the reader reads those rows, up to where it stands, between two reads of
/// the tail, so that the Spin gets every event once and in order.
///
/// Every minute the reader trims the outbox: events older than `retention` go (each
/// sender's newest stays: it holds the sender's last position).
package final class GearOutboxReader: @unchecked Sendable {
    private let store: any ClusterStore
    private let router: GearRouter
    private let logger: Logger
    private let reader = DispatchQueue(label: "spin.gear-outbox.read")
    private let stopped = Protected(false)
    private var following = false
    private let finished = DispatchSemaphore(value: 0)
    /// Catch-ups asked for and not yet read.
    private let requests = Protected<[GearRouter.CatchUp]>([])
    /// The outbox position read up to (`reader` only).
    private var position: Int64 = 0
    private var lastProblem: String?
    private var lastTrim: ContinuousClock.Instant?
    /// How long the outbox keeps an event (seconds). A Spin that stays away longer (no
    /// node serves it) misses what is older.
    package static let retention: Double = 3600
    private static let trimInterval = Duration.seconds(60)
    private static let page = 500

    package init(store: any ClusterStore, router: GearRouter, logger: Logger) {
        self.store = store
        self.router = router
        self.logger = logger
    }

    /// Starts following. Throws when the outbox cannot be read.
    package func start() throws {
        position = try store.outboxEnd()
        router.catchUp { [weak self] request in
            guard let self else { return }
            requests.withLock { $0.append(request) }
        }
        following = true
        reader.async { [self] in follow() }
    }

    /// Stops reading.
    package func stop() {
        guard following else { return }
        guard !stopped.withLock({ stopped in defer { stopped = true }; return stopped }) else { return }
        finished.wait()
    }

    /// The reader's loop, on `reader`, until `stop`.
    private func follow() {
        defer { finished.signal() }
        while !stopped.withLock({ $0 }) {
            do {
                try catchUpWaiting()
                let events = try store.outbox(after: position, limit: Self.page)
                if let last = events.last { position = last.position }
                router.received(events.compactMap { event in event.sender.map { ($0, event.record) } }, catchUp: false)
                if lastProblem != nil {
                    logger.notice("Gear outbox: the database answers again")
                    lastProblem = nil
                }
                trimIfDue()
                if events.count < Self.page, requests.withLock({ $0.isEmpty }) {
                    _ = try store.waitForPublish(timeout: .milliseconds(250))
                }
            } catch {
                let problem = "\(error)"
                if problem != lastProblem { logger.error("Gear outbox: cannot read: \(problem)") }
                lastProblem = problem
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    /// Reads, for each Spin that started here, what it has not consumed up to `position`.
    private func catchUpWaiting() throws {
        while let request = requests.withLock({ $0.first }) {
            var after: Int64 = 0
            while true {
                let events = try store.outbox(gears: request.gears, after: after, through: position,
                                              consumed: request.consumed, limit: Self.page)
                router.received(events.compactMap { event in event.sender.map { ($0, event.record) } }, catchUp: true)
                guard events.count == Self.page, let last = events.last else { break }
                after = last.position
            }
            requests.withLock { _ = $0.removeFirst() }
            router.caughtUp(request.spin, registration: request.registration)
        }
    }

    private func trimIfDue() {
        if let lastTrim, lastTrim.duration(to: .now) < Self.trimInterval { return }
        lastTrim = .now
        do {
            let trimmed = try store.trimOutbox(olderThanSeconds: Self.retention)
            if trimmed > 0 { logger.debug("Gear outbox: trimmed \(trimmed) events older than \(Int(Self.retention)) s") }
        } catch {
            logger.warning("Gear outbox: cannot trim: \(error)")
        }
    }
}
