import Foundation
import Logging
import SpinCore
@testable import SpinServer
import SpinStorage
import SpinWire
import Testing

/// A Spin's Gear outbox in its journal, without sockets or loops: positions in order,
/// outbox records in the batch of the event that made them (so a torn write keeps both
/// or neither), sent once durable, kept by a compaction while not consumed, and given
/// back on a failure; what a Spin consumed, read back at recovery.
@Suite(.timeLimit(.minutes(1)))
struct JournalOutboxTests {
    /// What a `Journal` tells the router.
    final class Listener: JournalGearListener, @unchecked Sendable {
        let lock = NSLock()
        var durable: [(spin: String, through: UInt64, outbox: [OutboxRecord])] = []
        var keep: [OutboxRecord] = []

        func journalDurable(spin: String, through sequence: UInt64, outbox: [OutboxRecord]) {
            lock.withLock { durable.append((spin, sequence, outbox)) }
        }

        func outboxToKeep(of spin: String) -> [OutboxRecord] { lock.withLock { keep } }

        var sent: [UInt64] { lock.withLock { durable.flatMap { $0.outbox.map(\.position) } } }
        var through: UInt64 { lock.withLock { durable.last?.through ?? 0 } }
    }

    struct Opened {
        let journal: Journal
        let feed: SpinFeed
        let listener: Listener
        let outcome: Journal.RecoveryOutcome
    }

    static func directory() -> String {
        let path = NSTemporaryDirectory() + "spin-outbox-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A journal over `directory` holding Spin `s` (an `Int` summing `Int` events).
    static func open(_ directory: String, retain: Int = 100) throws -> Opened {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let journal = Journal(store: FileSpinStore(directory: directory),
                              storage: .init(directory: directory, fsync: .batch, persists: true, retainEvents: retain),
                              logger: logger)
        try journal.open()
        let host = SpinHost()
        try host.host(Spin(initialState: 0, feedbacks: [], reducer: Reducer { (state: Int, event: Int) in state + event }),
                      named: "s")
        let feed = SpinFeed(name: "s", retain: retain, immediate: false)
        let outcome = try journal.recover([(try #require(host.spin(named: "s")), feed)])
        let listener = Listener()
        _ = journal.start(onFailure: { _ in }, onRecovery: { _ in }, gears: listener)
        return Opened(journal: journal, feed: feed, listener: listener, outcome: outcome)
    }

    /// Event `sequence` (adding 1), with the Gear events its state propagated.
    static func transition(_ sequence: UInt64, gears: Int = 0, consumed: [String: UInt64] = [:],
                           endsBatch: Bool = true) -> HostedTransition {
        var transition = HostedTransition(sequence: sequence, event: .raw(Array("1".utf8)),
                                          state: .raw(Array(String(sequence).utf8)), endsBatch: endsBatch,
                                          consumed: consumed)
        transition.outbox = (0..<gears).map { index in
            GearOutput(gear: "g", event: Array(#"{"type":"pinged","n":\#(sequence),"i":\#(index)}"#.utf8), cause: sequence)
        }
        return transition
    }

    static func record(_ opened: Opened, _ transition: HostedTransition) {
        opened.feed.applied(transition)
        opened.journal.record(spin: "s", transition)
    }

    static func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }

    @Test func outboxEvents_TakePositionsInOrder_AndAreSentOnceDurable_WithTheirEvent() async throws {
        let directory = Self.directory()
        let opened = try Self.open(directory)
        Self.record(opened, Self.transition(1, gears: 2))
        Self.record(opened, Self.transition(2))
        opened.journal.record(spin: "s", outbox: [GearOutput(gear: "g", event: Array(#"{"type":"alone"}"#.utf8), cause: 0)])
        Self.record(opened, Self.transition(3, gears: 1))
        try await Self.waitUntil { opened.listener.through == 3 && opened.listener.sent.count == 4 }
        #expect(opened.listener.sent == [1, 2, 3, 4])
        let all = opened.listener.lock.withLock { opened.listener.durable.flatMap(\.outbox) }
        #expect(all.map(\.cause) == [1, 1, 0, 3])
        #expect(String(decoding: all[2].event, as: UTF8.self) == #"{"type":"alone"}"#)
        #expect(opened.feed.snapshot.sequence == 3)

        // The file: each event's outbox records follow it, in its batch.
        let decoded = JournalRecord.decode(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/s.journal"))))
        #expect(decoded.records.map(\.sequence) == [1, 0, 0, 2, 0, 3, 0])
        #expect(decoded.records.map(\.endsBatch) == [false, false, true, true, true, false, true])

        // A crash (no clean stop): recovery reads the outbox and its last position.
        opened.journal.abandon()
        let again = try Self.open(directory)
        let gears = try #require(again.outcome.gears["s"])
        #expect(gears.outbox.map(\.position) == [1, 2, 3, 4])
        #expect(gears.outboxPosition == 4)
        Self.record(again, Self.transition(4, gears: 1))
        try await Self.waitUntil { again.listener.sent == [5] }
        again.journal.abandon()
    }

    /// Torn at every byte: recovery keeps an event with its outbox records, or neither.
    @Test func aWriteTornAnywhere_KeepsAnEventAndItsGearEventsTogether() async throws {
        let directory = Self.directory()
        let opened = try Self.open(directory)
        Self.record(opened, Self.transition(1, gears: 1))
        Self.record(opened, Self.transition(2, endsBatch: false))
        Self.record(opened, Self.transition(3, gears: 2))
        Self.record(opened, Self.transition(4, gears: 1))
        try await Self.waitUntil { opened.listener.through == 4 }
        opened.journal.abandon()
        let path = directory + "/s.journal"
        let whole = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        for length in 0...whole.count {
            let decoded = JournalRecord.decode(Array(whole.prefix(length)))
            let (events, outbox) = try StoredSpin.separating(decoded.records, journal: path)
            let kept = events.map(\.sequence)
            // Which events made which outbox positions: 1 → 1; 3 → 2, 3; 4 → 4.
            let expected: [UInt64: [UInt64]] = [1: [1], 2: [], 3: [2, 3], 4: [4]]
            #expect(outbox.map(\.position) == kept.flatMap { expected[$0] ?? [] }, "cut at byte \(length)")
            #expect(kept != [1, 2], "event 2 is in event 3's batch")
            if decoded.damage != nil { #expect(decoded.damage?.kind == .tornTail, "cut at byte \(length)") }
        }
    }

    @Test func whatASpinConsumed_IsReadBackFromItsRecords() async throws {
        let directory = Self.directory()
        let opened = try Self.open(directory)
        Self.record(opened, Self.transition(1, consumed: ["pinger": 3]))
        Self.record(opened, Self.transition(2))
        Self.record(opened, Self.transition(3, consumed: ["pinger": 5, "other": 1]))
        try await Self.waitUntil { opened.listener.through == 3 }
        opened.journal.abandon()
        let again = try Self.open(directory)
        #expect(again.outcome.gears["s"]?.consumed == ["pinger": 5, "other": 1])
        again.journal.abandon()
    }

    @Test func aCompaction_KeepsTheOutboxNotYetConsumed_AndTheSnapshotCarriesThePositions() async throws {
        let directory = Self.directory()
        let opened = try Self.open(directory, retain: 2)
        // Compaction runs once the journal holds retain + 1000 records.
        for sequence in UInt64(1)...1010 {
            Self.record(opened, Self.transition(sequence, gears: sequence == 5 || sequence == 1009 ? 1 : 0,
                                                consumed: sequence == 7 ? ["pinger": 9] : [:]))
            if sequence == 1000 {
                try await Self.waitUntil { opened.listener.sent.count == 1 }
                // Position 1 (event 5's) is not consumed yet: a compaction keeps it.
                let first = opened.listener.lock.withLock { opened.listener.durable.flatMap(\.outbox) }
                opened.listener.lock.withLock { opened.listener.keep = first }
            }
        }
        try await Self.waitUntil { opened.listener.through == 1010 }
        // The compaction writes its files apart from the journal's writes (it may end later).
        try await Self.waitUntil { FileManager.default.fileExists(atPath: directory + "/s.snapshot.json") }
        let snapshot = try #require(FileManager.default.contents(atPath: directory + "/s.snapshot.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: snapshot) as? [String: Any])
        #expect(document["consumed"] as? [String: Int] == ["pinger": 9])
        #expect((document["outbox"] as? Int).map { $0 >= 1 } == true)
        opened.journal.abandon()
        let again = try Self.open(directory, retain: 2)
        let gears = try #require(again.outcome.gears["s"])
        #expect(gears.outbox.map(\.position).first == 1, "kept by the compaction")
        #expect(gears.outboxPosition == 2)
        #expect(gears.consumed == ["pinger": 9])
        #expect(again.outcome.sequences["s"] == 1010)
        again.journal.abandon()
    }
}
