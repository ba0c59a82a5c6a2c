import Dispatch
import Logging
import SpinCore
import SpinStorage
import SpinConcurrency

// The GearRouter's readings: the counters and lagging receivers it reports (see `GearRouter.Readings`).
extension GearRouter {
    func bump(_ counter: WritableKeyPath<Readings, [String: Int]>, _ gear: String, by amount: Int = 1) {
        guard amount > 0 else { return }
        counts[keyPath: counter][gear, default: 0] += amount
    }

    /// At the end of a piece of work: a new reading within `readingInterval`.
    func finish() {
        guard !readingScheduled else { return }
        readingScheduled = true
        section.queue.asyncAfter(deadline: .now() + Self.readingInterval) { [weak self] in
            self?.section.run { [weak self] in self?.takeReading() }
        }
    }

    private func takeReading() {
        readingScheduled = false
        var reading = Readings(redelivered: counts.redelivered, duplicatesDropped: counts.duplicatesDropped)
        for name in laggingReceivers {
            guard let receiver = receivers[name], !receiver.lagging.isEmpty else {
                laggingReceivers.remove(name)
                continue
            }
            reading.lagging[name] = receiver.lagging
        }
        // From the events kept, to the Spins that catch them: what no Spin holds back
        // costs nothing (not each receiver times each sender). The Spins with nothing
        // pending are filled in when the reading is read (`reading`).
        for (sender, outbox) in outboxes where !outbox.entries.isEmpty {
            for entry in outbox.entries {
                for name in catchers[entry.gear] ?? [] {
                    guard let receiver = receivers[name], entry.position > receiver.inbox(sender).settled else { continue }
                    reading.pending[entry.gear, default: [:]][name, default: 0] += 1
                }
            }
        }
        readings.withLock { $0 = reading }
    }

    /// What the router reports now: the last reading, with a 0 for each catching Spin
    /// served here that has nothing pending.
    package var reading: Readings {
        section.sync { [self] in
            var reading = readings.withLock { $0 }
            for (gear, names) in catchers {
                for name in names where receivers[name] != nil { reading.pending[gear, default: [:]][name, default: 0] += 0 }
            }
            return reading
        }
    }

    /// Waits until the router has done what it was given, and takes a reading (tests).
    package func settleDown() {
        section.sync { [self] in takeReading() }
    }
}
