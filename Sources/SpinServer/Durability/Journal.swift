import Dispatch
import Foundation
import Logging
import SpinCore
import SpinNet
import SpinWire

/// The durable storage of hosted Spins (DESIGN.md §3, Durability): per Spin an
/// append-only journal of applied events (`<name>.journal`, `JournalRecord` framing) and
/// a snapshot (`<name>.snapshot.json`, `{"sequence":N,"state":..}`) written every
/// `snapshotEvery` events and at shutdown, after which the journal is emptied.
///
/// Every transition of every Spin (events from clients, feedbacks and Gears) is recorded
/// in order from the Spin's executor; the writing happens on the journal's own serial
/// queue, so a Spin never waits for the disk. Acknowledgements wait in `whenDurable`:
/// - `always`: each record is synced (`fdatasync`) before the events it covers are acked;
/// - `batch`: group commit: records written in a window of `batchWindow` share one sync;
/// - `none`: acknowledged once written to the OS.
///
/// Recovery (`recover`) reads the snapshot, replays the journal records after it through
/// the pure reducer (no effect runs) and cuts a torn tail.
package final class Journal: DurabilityGate, @unchecked Sendable {
    // `files`, `unsynced`, `syncScheduled` and `latest` are confined to `queue`;
    // `durable` and `waiters` are behind `acks`.
    private let directory: String
    private let policy: SpinServerConfiguration.Storage.Fsync
    private let logger: Logger
    private let queue = DispatchQueue(label: "spin.journal")
    private var files: [String: AppendOnlyFile] = [:]
    /// Per Spin, the last sequence written and not yet synced.
    private var unsynced: [String: UInt64] = [:]
    private var syncScheduled = false
    /// Per Spin, the last transition written (for the shutdown snapshot).
    private var latest: [String: HostedTransition] = [:]
    private let acks = Protected(Acks())

    /// Events between two snapshots: bounds recovery time and journal size.
    package static let snapshotEvery: UInt64 = 1000
    /// How long a batch waits for more records before its one sync.
    package static let batchWindow: DispatchTimeInterval = .milliseconds(2)

    private struct Acks {
        var durable: [String: UInt64] = [:]
        var waiters: [String: [(sequence: UInt64, acknowledge: @Sendable (APIError?) -> Void)]] = [:]
        var failure: APIError?
    }

    package init(directory: String, policy: SpinServerConfiguration.Storage.Fsync, logger: Logger) {
        self.directory = directory
        self.policy = policy
        self.logger = logger
    }

    private func journalPath(_ spin: String) -> String { "\(directory)/\(spin).journal" }
    private func snapshotPath(_ spin: String) -> String { "\(directory)/\(spin).snapshot.json" }

    // MARK: Recovery

    /// Restores `spin` from its snapshot and journal (before it starts), cutting a torn
    /// tail, and opens its journal for appending. Returns the recovered sequence.
    package func recover(_ spin: any HostedSpin) throws -> UInt64 {
        let name = spin.name
        let snapshot = try DurableFiles.read(snapshotPath(name))
        let journal = try DurableFiles.read(journalPath(name)) ?? []
        let decoded = JournalRecord.decode(journal)
        let file = try AppendOnlyFile(path: journalPath(name))
        if decoded.validLength < journal.count {
            logger.warning("journal of \(name): cut a torn tail of \(journal.count - decoded.validLength) bytes")
            try file.truncate(to: decoded.validLength)
            try file.sync()
        }
        let sequence = try spin.recover(snapshot: snapshot, records: decoded.records)
        queue.sync { files[name] = file }
        acks.withLock { $0.durable[name] = sequence }
        return sequence
    }

    // MARK: Writing

    /// Records a transition; called on the Spin's executor, in order.
    package func record(spin: String, _ transition: HostedTransition) {
        queue.async { [self] in
            guard let file = files[spin] else { return }
            do {
                let payload = transition.event.bytes
                try file.append(JournalRecord.encode(sequence: transition.sequence, payload: payload))
                latest[spin] = transition
                switch policy {
                case .always:
                    try file.sync()
                    markDurable(spin, transition.sequence)
                case .none:
                    markDurable(spin, transition.sequence)
                case .batch:
                    unsynced[spin] = transition.sequence
                    if !syncScheduled {
                        syncScheduled = true
                        queue.asyncAfter(deadline: .now() + Self.batchWindow) { [self] in syncBatch() }
                    }
                }
                if transition.sequence % Self.snapshotEvery == 0 { try snapshot(spin) }
            } catch {
                fail(error)
            }
        }
    }

    /// Group commit: one sync per Spin written in the window. On `queue`.
    private func syncBatch() {
        syncScheduled = false
        let written = unsynced
        unsynced = [:]
        do {
            for (spin, sequence) in written {
                try files[spin]?.sync()
                markDurable(spin, sequence)
            }
        } catch {
            fail(error)
        }
    }

    /// Writes the Spin's latest state as its snapshot, then empties its journal (every
    /// record in it is covered). On `queue`.
    private func snapshot(_ spin: String) throws {
        guard let transition = latest[spin], let file = files[spin] else { return }
        let document = JSONValue.object([("sequence", .number(String(transition.sequence))), ("state", transition.state)])
        try DurableFiles.replace(snapshotPath(spin), with: document.bytes)
        try file.truncate(to: 0)
        try file.sync()
        unsynced[spin] = nil
        markDurable(spin, transition.sequence)
    }

    /// Snapshots every Spin and syncs: after this, a restart replays nothing.
    package func close() {
        queue.sync {
            do {
                syncBatch()
                for spin in latest.keys { try snapshot(spin) }
            } catch {
                fail(error)
            }
            files = [:]
        }
    }

    // MARK: Acknowledgements

    package func whenDurable(spin: String, sequence: UInt64, _ acknowledge: @escaping @Sendable (APIError?) -> Void) {
        let ready = acks.withLock { acks -> APIError?? in
            if let failure = acks.failure { return .some(failure) }
            if acks.durable[spin, default: 0] >= sequence { return .some(nil) }
            acks.waiters[spin, default: []].append((sequence, acknowledge))
            return .none
        }
        if case .some(let error) = ready { acknowledge(error) }
    }

    private func markDurable(_ spin: String, _ sequence: UInt64) {
        let released = acks.withLock { acks -> [@Sendable (APIError?) -> Void] in
            acks.durable[spin] = max(acks.durable[spin, default: 0], sequence)
            let waiting = acks.waiters[spin, default: []]
            acks.waiters[spin] = waiting.filter { $0.sequence > sequence }
            return waiting.filter { $0.sequence <= sequence }.map(\.acknowledge)
        }
        for acknowledge in released { acknowledge(nil) }
    }

    /// A write or sync failed: nothing can be promised any more. Every waiting and later
    /// acknowledgement gets a 500 naming the failure.
    private func fail(_ error: any Error) {
        logger.critical("journal failure: \(error)")
        let failure = APIError.internal("the events were applied but could not be made durable: \(error)")
        let released = acks.withLock { acks -> [@Sendable (APIError?) -> Void] in
            acks.failure = failure
            defer { acks.waiters = [:] }
            return acks.waiters.values.flatMap { $0.map(\.acknowledge) }
        }
        for acknowledge in released { acknowledge(failure) }
    }
}
