import SpinConcurrency

/// When an event request (`POST .../events`) passed the stages after the driver got it,
/// as `EventAcknowledgement` saw them; the driver adds when the loop learnt its bytes
/// were readable, when it handed the request over and when it answers
/// (`EventStageHistogram`). In `Monotonic` nanoseconds.
package struct EventStages: Sendable {
    /// The batch was handed to its Spin.
    package var accepted: UInt64
    /// The Spin applied the batch's last event.
    package var applied: UInt64
    /// The journal made it as durable as `storage.fsync` says.
    package var durable: UInt64
}

/// `spin_event_stage_seconds{stage}`: where an accepted event request's time goes, from
/// the moment its event loop learnt its socket was readable to the moment the answer is
/// handed to the connection, in five stages that add up to the whole:
/// - `parse`: until the request is read and parsed (and waits for the requests before it
///   in the same turn);
/// - `admit`: routing, the caller's credentials, decoding the events, until they are
///   handed to the Spin;
/// - `apply`: until the Spin applied the last of them;
/// - `journal`: until they are durable as `storage.fsync` says;
/// - `ack`: until the answer is made and handed to the connection.
///
/// What p99 is made of shows in which stage's tail grows. The counts are kept under one
/// lock, taken once per answered request for all five stages (the loops are its only
/// writers); buckets from 5 µs to 10 s, 1-2-5 per decade.
package final class EventStageHistogram: Sendable {
    package static let stages = ["parse", "admit", "apply", "journal", "ack"]
    /// Upper bounds, in seconds.
    package static let bounds: [Double] = [
        0.000005, 0.00001, 0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005,
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10,
    ]
    /// The bounds in nanoseconds, as observations are compared.
    private static let boundNanoseconds: [UInt64] = bounds.map { UInt64(($0 * 1e9).rounded()) }

    private struct Counts {
        /// Per stage, `bounds.count + 1` buckets (the last: above every bound), not cumulative.
        var buckets = [UInt64](repeating: 0, count: EventStageHistogram.stages.count * (EventStageHistogram.bounds.count + 1))
        var sums = [UInt64](repeating: 0, count: EventStageHistogram.stages.count)
        var count: UInt64 = 0
    }

    private let counts = Protected(Counts())

    package init() {}

    /// Observes one answered request: its bytes were readable at `readable`, it was parsed
    /// and handed over at `handed`, went through `stages`, and is answered at `answered`.
    package func observe(readable: UInt64, handed: UInt64, _ stages: EventStages, answered: UInt64) {
        let durations = (Monotonic.elapsed(from: readable, to: handed), Monotonic.elapsed(from: handed, to: stages.accepted),
                         Monotonic.elapsed(from: stages.accepted, to: stages.applied),
                         Monotonic.elapsed(from: stages.applied, to: stages.durable),
                         Monotonic.elapsed(from: stages.durable, to: answered))
        let slots = (Self.bucket(durations.0), Self.bucket(durations.1), Self.bucket(durations.2),
                     Self.bucket(durations.3), Self.bucket(durations.4))
        let width = Self.bounds.count + 1
        counts.withLock { counts in
            counts.count += 1
            counts.buckets[slots.0] += 1
            counts.buckets[width + slots.1] += 1
            counts.buckets[2 * width + slots.2] += 1
            counts.buckets[3 * width + slots.3] += 1
            counts.buckets[4 * width + slots.4] += 1
            counts.sums[0] &+= durations.0
            counts.sums[1] &+= durations.1
            counts.sums[2] &+= durations.2
            counts.sums[3] &+= durations.3
            counts.sums[4] &+= durations.4
        }
    }

    /// The bucket of `nanoseconds`: the first bound at or above it.
    private static func bucket(_ nanoseconds: UInt64) -> Int {
        boundNanoseconds.firstIndex { nanoseconds <= $0 } ?? boundNanoseconds.count
    }

    /// The family in the Prometheus text format (0.0.4), cumulative buckets per stage.
    package func render(into text: inout String) {
        let counts = self.counts.withLock { $0 }
        let width = Self.bounds.count + 1
        text += "# HELP spin_event_stage_seconds Time accepted event requests spent in each stage, from readable to answered.\n"
        text += "# TYPE spin_event_stage_seconds histogram\n"
        for (index, stage) in Self.stages.enumerated() {
            var cumulative: UInt64 = 0
            for (slot, bound) in Self.bounds.enumerated() {
                cumulative += counts.buckets[index * width + slot]
                text += "spin_event_stage_seconds_bucket{stage=\"\(stage)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            cumulative += counts.buckets[index * width + Self.bounds.count]
            text += "spin_event_stage_seconds_bucket{stage=\"\(stage)\",le=\"+Inf\"} \(cumulative)\n"
            text += "spin_event_stage_seconds_sum{stage=\"\(stage)\"} \(Double(counts.sums[index]) / 1e9)\n"
            text += "spin_event_stage_seconds_count{stage=\"\(stage)\"} \(counts.count)\n"
        }
    }
}
