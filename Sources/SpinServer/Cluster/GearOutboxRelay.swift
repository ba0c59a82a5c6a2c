import Dispatch
import Foundation
import Logging
import SpinCore
import SpinStorage
import SpinWire

/// Carries Gear events between the nodes of a cluster through the database's outbox
/// (`ClusterStore.publish` / `outbox(after:limit:)`, woken by `LISTEN`/`NOTIFY`).
///
/// - Out: every event a Spin served here propagates on a hosted Gear is delivered here
///   at once (Gear delivery is synchronous), and appended to the outbox in the order it
///   was propagated, on the relay's own queue (a Spin never waits for the database).
/// - In: one reader follows the outbox from where it stood when the node started, and
///   propagates each event another node published on the Gear of the same name here,
///   in outbox order, so the Spins this node serves catch it. An event so injected is
///   not published again.
///
/// So each event reaches each attached Spin once, on whichever node serves it then;
/// a Spin that is moving between nodes at that moment (no node serves it) misses it,
/// as a stopped Spin misses what is propagated while it is stopped. A payload is
/// `{"from":spin,"event":..}`.
package final class GearOutboxRelay: @unchecked Sendable {
    private let node: String
    private let store: any ClusterStore
    private let gears: [any HostedGear]
    private let logger: Logger
    private let writer = DispatchQueue(label: "spin.gear-outbox.write")
    private let reader = DispatchQueue(label: "spin.gear-outbox.read")
    private var subscriptions: [SpinSubscription] = []
    private let stopped = Protected(false)
    private var following = false
    private let finished = DispatchSemaphore(value: 0)
    /// The outbox position read up to (`reader` only).
    private var position: Int64 = 0
    private var lastProblem: String?
    /// Marks what this relay delivers from the outbox, so that it is not published again.
    private let injecting = GearCrossing()

    package init(node: String, store: any ClusterStore, gears: [any HostedGear], logger: Logger) {
        self.node = node
        self.store = store
        self.gears = gears
        self.logger = logger
    }

    /// Starts publishing and following. Throws when the outbox cannot be read.
    package func start() throws {
        guard !gears.isEmpty else { return }
        position = try store.outboxEnd()
        for gear in gears {
            let name = gear.name
            subscriptions.append(gear.observe { [self] traffic in
                guard !injecting.isActive else { return }
                let payload = JSONValue.object([("from", traffic.from.map(JSONValue.string) ?? .null),
                                                ("event", traffic.event)]).bytes
                writer.async { [self] in publish(gear: name, payload: payload) }
            })
        }
        following = true
        reader.async { [self] in follow() }
    }

    /// Stops both ways; events still waiting to be published are published first.
    package func stop() {
        guard following else { return }
        guard !stopped.withLock({ stopped in defer { stopped = true }; return stopped }) else { return }
        for subscription in subscriptions { subscription.cancel() }
        writer.sync {}
        finished.wait()
    }

    private func publish(gear: String, payload: [UInt8]) {
        // A database away for a moment: try a few times, then log the loss (the Spins
        // on this node caught the event already; only other nodes miss it).
        for attempt in 0..<5 {
            do {
                _ = try store.publish(gear: gear, node: node, payload: payload)
                return
            } catch {
                if attempt == 4 {
                    logger.error("Gear \(gear): an event could not reach the other nodes: \(error)")
                } else {
                    Thread.sleep(forTimeInterval: 0.2 * Double(attempt + 1))
                }
            }
        }
    }

    /// The reader's loop, on `reader`, until `stop`.
    private func follow() {
        defer { finished.signal() }
        let byName = Dictionary(gears.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        while !stopped.withLock({ $0 }) {
            do {
                let events = try store.outbox(after: position, limit: 500)
                for event in events {
                    position = event.position
                    guard event.node != node, let gear = byName[event.gear] else { continue }
                    deliver(event, on: gear)
                }
                if lastProblem != nil {
                    logger.notice("Gear outbox: the database answers again")
                    lastProblem = nil
                }
                if events.count < 500 { _ = try store.waitForPublish(timeout: .seconds(1)) }
            } catch {
                let problem = "\(error)"
                if problem != lastProblem { logger.error("Gear outbox: cannot read: \(problem)") }
                lastProblem = problem
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    private func deliver(_ event: OutboxEvent, on gear: any HostedGear) {
        guard let document = try? JSONSerialization.jsonObject(with: Data(event.payload)) as? [String: Any],
              let body = document["event"],
              let json = try? JSONSerialization.data(withJSONObject: body, options: [.fragmentsAllowed]) else {
            logger.warning("Gear \(event.gear): outbox event \(event.position) is not {\"from\":..,\"event\":..}; skipped")
            return
        }
        let source = document["from"] as? String
        injecting.run { _ = gear.inject(json: Array(json), from: source) }
    }
}
