import Prometheus
import SpinCore
import Synchronization
import SpinConcurrency

/// The server's counters, gauges and the event-apply latency histogram, kept in a
/// swift-prometheus `PrometheusCollectorRegistry` that `GET /metrics` renders (text format
/// 0.0.4). Whatever else writes to that registry (a Spin author's swift-metrics counters
/// and timers, once the process bootstraps `MetricsSystem` with it: see
/// `LoopServer.bootstrapMetricsSystem()`) appears beside these.
///
/// Metric names:
/// - `spin_events_applied_total{spin}`: events each Spin applied since start-up;
/// - `spin_sequence{spin}`: each Spin's sequence (read at scrape time);
/// - `spin_inbox_pending{spin}`: events waiting to be applied;
/// - `spin_suspended{spin}`: 1 while the Spin is suspended by its runaway guard, else 0;
/// - `spin_suspensions_total{spin}`: times each Spin was suspended since start-up;
/// - `spin_durable_sequence{spin}`: the newest sequence that is durable (streamed and
///   acknowledged); `spin_sequence` minus it is what waits for the disk;
/// - `spin_storage_failing{spin}`: 1 while the Spin's storage fails (503s), else 0;
/// - `spin_unrecoverable{spin}`: 1 for a Spin whose stored history could not be replayed
///   (`storage.onCorruption: "isolate"`), else 0;
/// - `spin_open_connections`, `spin_open_streams{kind}` (websocket, sse, gear);
/// - `spin_connections_limited_total`: times the listener paused at `limits.maxConnections`;
/// - `spin_http_requests_total{route,status}`: answered requests, by route template;
/// - `spin_event_apply_seconds`: from a request's acceptance to its last event applied;
/// - `spin_event_stage_seconds{stage}`: an accepted event request's time, readable to
///   answered, in five stages (`parse`, `admit`, `apply`, `journal`, `ack`:
///   `EventStageHistogram`);
/// - `spin_cluster_owned_spins`: the Spins this node owns (every hosted one on a single
///   node; its leased ones in a cluster), read at scrape time;
/// - `spin_spins_in_memory` and `spin_spins_on_disk`: the Spins hosted in memory (awake,
///   or asleep and kept), and those made at run time that sleep on disk only.
///
/// Every metric object is made once (per Spin, per route and status) and kept, so the
/// request path only increments. The per-Spin series are the server's own (`SpinMetrics`,
/// and gauges written from the readings at scrape time), rendered after the registry's:
/// swift-prometheus copies a family's every series to add one, which made a server of
/// 10,000 Spins spend most of its start-up making their metrics.
package final class Metrics: Sendable {
    /// Upper bounds of the latency histogram, in seconds: 100 µs to 5 s.
    static let bounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
    static let streamKinds = ["websocket", "sse", "gear"]

    /// The registry `GET /metrics` renders.
    package let registry: PrometheusCollectorRegistry

    /// A Spin's counters: atomics its executor increments, in one object per Spin.
    package final class SpinMetrics: Sendable {
        private let appliedCount = Atomic<Int>(0)
        private let suspensionCount = Atomic<Int>(0)

        package func countApplied() { appliedCount.add(1, ordering: .relaxed) }
        package func countSuspension() { suspensionCount.add(1, ordering: .relaxed) }

        package var applied: Int { appliedCount.load(ordering: .relaxed) }
        package var suspensions: Int { suspensionCount.load(ordering: .relaxed) }
    }

    /// The per-Spin families, in the order rendered: name, type, help.
    private static let spinCounters = [
        ("spin_events_applied_total", "Events applied by each Spin since the server started."),
        ("spin_suspensions_total", "Times each Spin was suspended since the server started."),
    ]
    private static let spinGauges: [(String, String, @Sendable (SpinReading) -> Double)] = [
        ("spin_sequence", "Events applied by each Spin since it was created.", { Double($0.sequence) }),
        ("spin_inbox_pending", "Events waiting in each Spin's inbox.", { Double($0.pending) }),
        ("spin_suspended", "1 while the Spin is suspended by its runaway guard, else 0.", { $0.suspended ? 1 : 0 }),
        ("spin_durable_sequence", "The newest sequence of each Spin that is durable.", { Double($0.durable) }),
        ("spin_storage_failing", "1 while the Spin's storage fails, else 0.", { $0.storageFailing ? 1 : 0 }),
        ("spin_unrecoverable", "1 while the Spin's stored history cannot be replayed, else 0.", { $0.unrecoverable ? 1 : 0 }),
    ]

    /// What a Spin's gauges show, read at scrape time.
    package struct SpinReading: Sendable {
        package var name: String
        package var sequence: UInt64
        package var pending: Int
        package var suspended: Bool
        package var durable: UInt64
        package var storageFailing: Bool
        package var unrecoverable: Bool

        package init(name: String, sequence: UInt64, pending: Int, suspended: Bool, durable: UInt64,
                     storageFailing: Bool, unrecoverable: Bool = false) {
            self.name = name
            self.sequence = sequence
            self.pending = pending
            self.suspended = suspended
            self.durable = durable
            self.storageFailing = storageFailing
            self.unrecoverable = unrecoverable
        }
    }

    private struct RequestKey: Hashable {
        var route: String
        var status: Int
    }

    private let connections: Gauge
    private let connectionsLimited: Counter
    private let streams: [String: Gauge]
    private let applyLatency: ValueHistogram
    /// Where accepted event requests spend their time (`spin_event_stage_seconds`).
    package let eventStages = EventStageHistogram()
    private let ownedSpins: Gauge
    private let inMemory: Gauge
    private let onDisk: Gauge
    /// Open connections, also readable (`LoopServer.openConnections`).
    private let openCount = Protected(0)
    private let spins = Protected([String: SpinMetrics]())
    private let requests = Protected([RequestKey: Counter]())
    /// The Gear metrics by labels, made on first use, and what the counters were last
    /// told (the router keeps totals).
    private let gearMetrics = Protected(GearMetrics())

    private struct GearMetrics {
        var pending: [[String]: Gauge] = [:]
        var lagging: [[String]: Gauge] = [:]
        var counters: [[String]: (counter: Counter, told: Int)] = [:]
    }

    /// The Gear router's figures: `spin_gear_pending{gear,spin}` (events of the Gear that
    /// Spin catches and has not consumed durably), `spin_gear_lagging{spin,from}` (1 while
    /// it no longer gets the oldest events of that sender), and the totals
    /// `spin_gear_redelivered_total{gear}` and `spin_gear_duplicates_dropped_total{gear}`.
    private func record(_ readings: GearRouter.Readings) {
        let registry = self.registry
        gearMetrics.withLock { made in
            for gauge in made.pending.values { gauge.set(Int64(0)) }
            for (gear, spins) in readings.pending {
                for (spin, count) in spins {
                    let key = [gear, spin]
                    let gauge = made.pending[key] ?? registry.makeGauge(
                        descriptor: Self.named("spin_gear_pending", "Gear events a catching Spin has not consumed durably yet."),
                        labels: [("gear", gear), ("spin", spin)])
                    made.pending[key] = gauge
                    gauge.set(Int64(count))
                }
            }
            for gauge in made.lagging.values { gauge.set(Int64(0)) }
            for (spin, senders) in readings.lagging {
                for sender in senders.keys {
                    let key = [spin, sender]
                    let gauge = made.lagging[key] ?? registry.makeGauge(
                        descriptor: Self.named("spin_gear_lagging", "1 while a catching Spin no longer gets a sender's oldest Gear events (limits.gearBacklog)."),
                        labels: [("spin", spin), ("from", sender)])
                    made.lagging[key] = gauge
                    gauge.set(Int64(1))
                }
            }
            let totals: [(String, String, [String: Int])] = [
                ("spin_gear_redelivered_total", "Gear events delivered again (after a restart, a move or a rollback) to a Spin that had not consumed them.", readings.redelivered),
                ("spin_gear_duplicates_dropped_total", "Gear events read again that a catching Spin had consumed already, dropped by their position.", readings.duplicatesDropped),
            ]
            for (name, help, counts) in totals {
                for (gear, total) in counts {
                    let key = [name, gear]
                    var entry = made.counters[key] ?? (registry.makeCounter(descriptor: Self.named(name, help),
                                                                            labels: [("gear", gear)]), 0)
                    if total > entry.told {
                        entry.counter.increment(by: Int64(total - entry.told))
                        entry.told = total
                    }
                    made.counters[key] = entry
                }
            }
        }
    }

    /// `spin_proxied_requests_total` by route, made on first use.
    private let proxied = Protected([String: Counter]())
    private let waitedForMove: Counter

    /// A metric's full name and help text, as the registry takes them.
    private static func named(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    package init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        connections = registry.makeGauge(descriptor: Self.named("spin_open_connections", "Open client connections."))
        connectionsLimited = registry.makeCounter(descriptor: Self.named(
            "spin_connections_limited_total", "Times accepting paused because limits.maxConnections connections were open."))
        waitedForMove = registry.makeCounter(descriptor: Self.named(
            "spin_cluster_move_waits_total", "Times a request waited for its Spin to move between cluster nodes."))
        var streams: [String: Gauge] = [:]
        for kind in Self.streamKinds {
            streams[kind] = registry.makeGauge(descriptor: Self.named("spin_open_streams", "Open streams by kind."),
                                               labels: [("kind", kind)])
        }
        self.streams = streams
        applyLatency = registry.makeValueHistogram(
            descriptor: Self.named("spin_event_apply_seconds", "Time from accepting events to applying the last of them."),
            buckets: Self.bounds)
        ownedSpins = registry.makeGauge(descriptor: Self.named(
            "spin_cluster_owned_spins", "Spins this node owns (their lease, in a cluster)."))
        inMemory = registry.makeGauge(descriptor: Self.named(
            "spin_spins_in_memory", "Spins hosted in memory: awake, or asleep and kept there."))
        onDisk = registry.makeGauge(descriptor: Self.named(
            "spin_spins_on_disk", "Spins made at run time that sleep on disk only."))
    }

    /// The metric objects of the Spin `spin`, made on first use.
    package func spin(_ spin: String) -> SpinMetrics {
        spins.withLock { spins in
            if let made = spins[spin] { return made }
            let made = SpinMetrics()
            spins[spin] = made
            return made
        }
    }

    /// A deleted Spin's series go (a Spin made again with its name starts from zero).
    package func forget(spin: String) {
        _ = spins.withLock { $0.removeValue(forKey: spin) }
    }

    package func spinSuspended(spin: String) {
        self.spin(spin).countSuspension()
    }

    /// The counter of requests answered on `route` with `status`, made on first use.
    fileprivate func requestCounter(route: String, status: Int) -> Counter {
        let key = RequestKey(route: route, status: status)
        if let counter = requests.withLock({ $0[key] }) { return counter }
        let counter = registry.makeCounter(
            descriptor: Self.named("spin_http_requests_total", "Answered HTTP requests by route and status."),
            labels: [("route", route), ("status", String(status))])
        requests.withLock { $0[key] = counter }
        return counter
    }

    package func requestAnswered(route: String, status: Int) {
        requestCounter(route: route, status: status).increment()
    }

    /// Counts a request that waits for its Spin to move (`spin_cluster_move_waits_total`).
    package func requestWaitedForMove() {
        waitedForMove.increment()
    }

    /// Counts a request relayed to the node that owns its Spin
    /// (`spin_proxied_requests_total{route}`).
    package func requestProxied(route: String) {
        let counter = proxied.withLock { counters in
            if let counter = counters[route] { return counter }
            let counter = registry.makeCounter(
                descriptor: Self.named("spin_proxied_requests_total", "Requests relayed to the node that owns their Spin, by route."),
                labels: [("route", route)])
            counters[route] = counter
            return counter
        }
        counter.increment()
    }

    package func connectionOpened() { connectionsChanged(by: 1) }
    package func connectionClosed() { connectionsChanged(by: -1) }
    package func connectionLimited() { connectionsLimited.increment() }
    package func streamOpened(kind: String) { streams[kind]?.increment() }
    package func streamClosed(kind: String) { streams[kind]?.decrement() }

    private func connectionsChanged(by change: Int) {
        openCount.withLock { open in
            open += change
            connections.set(Int64(open))
        }
    }

    package func observeApplyLatency(seconds: Double) {
        applyLatency.record(seconds)
    }

    package var openConnections: Int { openCount.withLock { $0 } }

    /// The exposition text: the Spins' gauges set from `spins` and the owned-Spins gauge
    /// from `ownedSpins` (read now; nil leaves it), then the whole registry.
    package func render(spins: [SpinReading], ownedSpins owned: Int? = nil, gears: GearRouter.Readings? = nil,
                        residency: (inMemory: Int, onDisk: Int)? = nil) -> String {
        if let owned { ownedSpins.set(Int64(owned)) }
        if let residency {
            inMemory.set(Int64(residency.inMemory))
            onDisk.set(Int64(residency.onDisk))
        }
        if let gears { record(gears) }
        var text = registry.emitToString()
        eventStages.render(into: &text)
        let counters = self.spins.withLock { $0 }
        for (index, (name, help)) in Self.spinCounters.enumerated() {
            text += "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
            for (spin, metrics) in counters {
                let value = index == 0 ? metrics.applied : metrics.suspensions
                text += "\(name){spin=\"\(Self.escaped(spin))\"} \(value)\n"
            }
        }
        for (name, help, value) in Self.spinGauges {
            text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
            for reading in spins { text += "\(name){spin=\"\(Self.escaped(reading.name))\"} \(value(reading))\n" }
        }
        return text
    }

    /// A label value as the text format writes it: `\`, `"` and line feeds escaped.
    static func escaped(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else { return value }
        var out = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }
}

/// One connection's request counting: a keep-alive client mostly repeats its route and
/// status, so the counter of the last request is kept and most requests count without
/// looking it up. Confined to the connection's event loop.
package struct RequestCounting {
    private var last: (route: String, status: Int, counter: Counter)?

    package init() {}

    /// Counts a request answered on `route` with `status`.
    package mutating func count(route: String, status: Int, in metrics: Metrics) {
        if let last, last.status == status, last.route == route { return last.counter.increment() }
        let counter = metrics.requestCounter(route: route, status: status)
        last = (route, status, counter)
        counter.increment()
    }
}
