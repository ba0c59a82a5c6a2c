import Foundation
import SpinCore

/// The server's counters, gauges and the event-apply latency histogram, rendered in the
/// Prometheus text format (version 0.0.4) by `GET /metrics`.
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
/// - `spin_open_connections`, `spin_open_streams{kind}` (websocket, sse, gear);
/// - `spin_connections_limited_total`: times the listener paused at `limits.maxConnections`;
/// - `spin_http_requests_total{route,status}`: answered requests, by route template;
/// - `spin_event_apply_seconds`: from a request's acceptance to its last event applied.
package final class Metrics: Sendable {
    /// Upper bounds of the latency histogram, in seconds: 100 µs to 5 s.
    static let bounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

    private struct Values {
        var applied: [String: UInt64] = [:]
        var suspensions: [String: UInt64] = [:]
        var requests: [RequestKey: UInt64] = [:]
        var connections = 0
        var connectionsLimited: UInt64 = 0
        var streams: [String: Int] = [:]
        var latencyBuckets = [UInt64](repeating: 0, count: Metrics.bounds.count)
        var latencyCount: UInt64 = 0
        var latencySum: Double = 0
    }

    private struct RequestKey: Hashable {
        var route: String
        var status: Int
    }

    private let values = Protected(Values())

    package init() {}

    package func eventApplied(spin: String) {
        values.withLock { $0.applied[spin, default: 0] += 1 }
    }

    package func spinSuspended(spin: String) {
        values.withLock { $0.suspensions[spin, default: 0] += 1 }
    }

    package func requestAnswered(route: String, status: Int) {
        values.withLock { $0.requests[RequestKey(route: route, status: status), default: 0] += 1 }
    }

    package func connectionOpened() { values.withLock { $0.connections += 1 } }
    package func connectionClosed() { values.withLock { $0.connections -= 1 } }
    package func connectionLimited() { values.withLock { $0.connectionsLimited += 1 } }
    package func streamOpened(kind: String) { values.withLock { $0.streams[kind, default: 0] += 1 } }
    package func streamClosed(kind: String) { values.withLock { $0.streams[kind, default: 0] -= 1 } }

    package func observeApplyLatency(seconds: Double) {
        values.withLock { values in
            for (index, bound) in Self.bounds.enumerated() where seconds <= bound {
                values.latencyBuckets[index] += 1
            }
            values.latencyCount += 1
            values.latencySum += seconds
        }
    }

    package var openConnections: Int { values.withLock { $0.connections } }

    /// The exposition text; `spins` gives the per-Spin gauges read now.
    package func render(spins: [(name: String, sequence: UInt64, pending: Int, suspended: Bool,
                                 durable: UInt64, storageFailing: Bool)]) -> String {
        let values = self.values.withLock { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("spin_events_applied_total", "counter", "Events applied by each Spin since the server started.")
        for spin in spins {
            out += "spin_events_applied_total{spin=\"\(Self.escape(spin.name))\"} \(values.applied[spin.name] ?? 0)\n"
        }
        family("spin_sequence", "gauge", "Events applied by each Spin since it was created.")
        for spin in spins { out += "spin_sequence{spin=\"\(Self.escape(spin.name))\"} \(spin.sequence)\n" }
        family("spin_inbox_pending", "gauge", "Events waiting in each Spin's inbox.")
        for spin in spins { out += "spin_inbox_pending{spin=\"\(Self.escape(spin.name))\"} \(spin.pending)\n" }
        family("spin_suspended", "gauge", "1 while the Spin is suspended by its runaway guard, else 0.")
        for spin in spins { out += "spin_suspended{spin=\"\(Self.escape(spin.name))\"} \(spin.suspended ? 1 : 0)\n" }
        family("spin_durable_sequence", "gauge", "The newest sequence of each Spin that is durable.")
        for spin in spins { out += "spin_durable_sequence{spin=\"\(Self.escape(spin.name))\"} \(spin.durable)\n" }
        family("spin_storage_failing", "gauge", "1 while the Spin's storage fails, else 0.")
        for spin in spins { out += "spin_storage_failing{spin=\"\(Self.escape(spin.name))\"} \(spin.storageFailing ? 1 : 0)\n" }
        family("spin_suspensions_total", "counter", "Times each Spin was suspended since the server started.")
        for spin in spins {
            out += "spin_suspensions_total{spin=\"\(Self.escape(spin.name))\"} \(values.suspensions[spin.name] ?? 0)\n"
        }
        family("spin_open_connections", "gauge", "Open client connections.")
        out += "spin_open_connections \(values.connections)\n"
        family("spin_connections_limited_total", "counter",
               "Times accepting paused because limits.maxConnections connections were open.")
        out += "spin_connections_limited_total \(values.connectionsLimited)\n"
        family("spin_open_streams", "gauge", "Open streams by kind.")
        for kind in ["websocket", "sse", "gear"] {
            out += "spin_open_streams{kind=\"\(kind)\"} \(values.streams[kind] ?? 0)\n"
        }
        family("spin_http_requests_total", "counter", "Answered HTTP requests by route and status.")
        for (key, count) in values.requests.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            out += "spin_http_requests_total{route=\"\(Self.escape(key.route))\",status=\"\(key.status)\"} \(count)\n"
        }
        family("spin_event_apply_seconds", "histogram", "Time from accepting events to applying the last of them.")
        for (index, bound) in Self.bounds.enumerated() {
            out += "spin_event_apply_seconds_bucket{le=\"\(bound)\"} \(values.latencyBuckets[index])\n"
        }
        out += "spin_event_apply_seconds_bucket{le=\"+Inf\"} \(values.latencyCount)\n"
        out += "spin_event_apply_seconds_sum \(values.latencySum)\n"
        out += "spin_event_apply_seconds_count \(values.latencyCount)\n"
        return out
    }

    /// Label values escape backslash, quote and newline (exposition format).
    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
