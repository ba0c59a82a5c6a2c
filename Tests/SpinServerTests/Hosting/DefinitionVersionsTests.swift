import Foundation
import Logging
@testable import SpinServer
import SpinMachines
import SpinStorage
import SpinCore
import SpinJSON
import Testing

/// A machine Spin recovered under a newer version of its file, without sockets: its events
/// replayed through the version each was applied under, one migration at the next
/// sequence (journaled with both versions, replayed and never repeated), and each
/// definition problem that Spin's alone (`RecoveryError.isolates`).
@Suite struct DefinitionVersionsTests {
    static let v1 = #"""
        { "initial": "green", "context": { "cycles": 0 },
          "states": { "green": { "on": { "NEXT": "red" } },
                      "red": { "on": { "NEXT": { "target": "green", "actions": [ { "type": "assign", "set": { "cycles": { "add": 1 } } } ] } } } } }
        """#
    /// `green` is `go`, `cycles` is `rounds`, and a round counts 10.
    static let v2 = #"""
        { "version": 2, "initial": "go", "context": { "rounds": 0 },
          "states": { "go": { "on": { "NEXT": "red" } },
                      "red": { "on": { "NEXT": { "target": "go", "actions": [ { "type": "assign", "set": { "rounds": { "add": 10 } } } ] } } } },
          "migrations": { "1": { "states": { "green": "go" }, "context": { "rename": { "cycles": "rounds" } } } } }
        """#

    /// The Spin `l` of `json`, given `older` (version → file) as storage would.
    static func spin(_ json: String, older: [Int: String] = [:]) throws -> any HostedSpin {
        let host = SpinHost()
        try host.host(machine: try MachineDefinition(json: Array(json.utf8), file: "light.json"), named: "l")
        let spin = try #require(host.spin(named: "l"))
        let definition = try #require(spin.storedDefinition)
        #expect(definition.storedName == "spin.l")
        let taken = definition.take(older: older.mapValues { Array($0.utf8) })
        #expect(taken.problem == nil && taken.skipped.isEmpty)
        return spin
    }

    static func record(_ sequence: UInt64, _ type: String, version: Int32 = 1) -> JournalRecord.Record {
        var transition = HostedTransition(sequence: sequence, event: .raw(Array(#"{"type":"\#(type)"}"#.utf8)), state: .null)
        transition.version = version
        return JournalPayload.records([transition])[0]
    }

    static func text(_ json: JSONValue) -> String { String(decoding: json.bytes, as: UTF8.self) }

    @Test func eventsOfAnOlderVersion_ReplayThroughIt_ThenOneMigrationAtTheNextSequence() throws {
        let spin = try Self.spin(Self.v2, older: [1: Self.v1])
        #expect(spin.definitionVersion == 2)
        let records = (1...3).map { Self.record($0, "NEXT") }
        let recovered = try spin.recover(snapshot: nil, records: records, keep: 10)
        // Version 1 counted the round as 1 (version 2 would have made it 10).
        #expect(recovered.sequence == 4)
        #expect(Self.text(recovered.state) == #"{"value":"red","context":{"rounds":1}}"#)
        let migration = try #require(recovered.migration)
        #expect(migration.sequence == 4 && migration.version == 2 && migration.migratedFrom == 1)
        #expect(Self.text(migration.event) == #"{"type":"spin.migrated","from":1,"to":2}"#)
        #expect(recovered.history.map(\.sequence) == [1, 2, 3, 4])
        #expect(recovered.history.map(\.version) == [1, 1, 1, 2])

        // Journaled, the migration is replayed as it was, not made again.
        let again = try Self.spin(Self.v2, older: [1: Self.v1])
        let journaled = records + [JournalPayload.records([migration])[0], Self.record(5, "NEXT", version: 2)]
        let replayed = try again.recover(snapshot: nil, records: journaled, keep: 10)
        #expect(replayed.migration == nil && replayed.sequence == 5)
        #expect(Self.text(replayed.state) == #"{"value":"go","context":{"rounds":11}}"#)
    }

    @Test func aSnapshotOfAnOlderVersion_IsMigrated_AndOneOfTheCurrentIsTakenAsItIs() throws {
        let spin = try Self.spin(Self.v2, older: [1: Self.v1])
        let old = Array(#"{"sequence":7,"state":{"value":"green","context":{"cycles":3}}}"#.utf8)
        let recovered = try spin.recover(snapshot: old, records: [], keep: 10)
        #expect(recovered.sequence == 8 && recovered.migration?.migratedFrom == 1)
        #expect(Self.text(recovered.state) == #"{"value":"go","context":{"rounds":3}}"#)

        let current = try Self.spin(Self.v2, older: [1: Self.v1])
        let snapshot = Array(#"{"sequence":8,"version":2,"state":{"value":"go","context":{"rounds":3}}}"#.utf8)
        let taken = try current.recover(snapshot: snapshot, records: [Self.record(9, "NEXT", version: 2)], keep: 10)
        #expect(taken.migration == nil && taken.sequence == 9)
        #expect(Self.text(taken.state) == #"{"value":"red","context":{"rounds":3}}"#)
    }

    @Test func eachDefinitionProblem_IsThatSpinsAlone_NamingTheVersions() throws {
        func problem(_ spin: any HostedSpin, snapshot: String? = nil, _ records: [JournalRecord.Record]) -> RecoveryError? {
            do {
                _ = try spin.recover(snapshot: snapshot.map { Array($0.utf8) }, records: records, keep: 1)
                return nil
            } catch {
                return error as? RecoveryError
            }
        }
        // Recorded under a newer version than the file's.
        let newer = try #require(problem(try Self.spin(Self.v1), [Self.record(1, "NEXT", version: 2)]))
        #expect(newer.isolates && newer.problem.contains("version 2") && newer.problem.contains("newer than the version this server runs (1)"))
        // Version 1's events, and no stored copy of version 1.
        let unkept = try #require(problem(try Self.spin(Self.v2), [Self.record(1, "NEXT")]))
        #expect(unkept.isolates && unkept.problem.contains("version 1") && unkept.problem.contains("keeps no copy"))
        // A state no migration maps.
        let unmapped = Self.v2.replacingOccurrences(of: #""states": { "green": "go" }, "#, with: "")
        let failed = try #require(problem(try Self.spin(unmapped, older: [1: Self.v1]),
                                          snapshot: #"{"sequence":1,"state":{"value":"green","context":{}}}"#, []))
        #expect(failed.isolates && failed.problem.contains(#"its state "green" (version 1) is not a state of version 2"#))
        // A version 2 event after version 1's, with no migration between.
        let skipped = try #require(problem(try Self.spin(Self.v2, older: [1: Self.v1]),
                                           [Self.record(1, "NEXT"), Self.record(2, "NEXT", version: 2)]))
        #expect(skipped.isolates && skipped.sequence == 2)
    }

    @Test func aStoredVersionThatNoLongerLoads_IsSkipped_AndOnlyTheSpinsThatNeedItAreUnrecoverable() throws {
        let host = SpinHost()
        try host.host(machine: try MachineDefinition(json: Array(Self.v2.utf8), file: "light.json"), named: "l")
        let spin = try #require(host.spin(named: "l"))
        let taken = try #require(spin.storedDefinition).take(older: [1: Array(#"{"initial": "gone"}"#.utf8)])
        #expect(taken.problem == nil)
        #expect(taken.skipped.count == 1 && taken.skipped[0].hasPrefix("the stored copy of version 1 no longer loads: "))
        // A Spin recorded under version 1 cannot replay; one of version 2 can.
        do {
            _ = try spin.recover(snapshot: nil, records: [Self.record(1, "NEXT")], keep: 1)
            Issue.record("an event of a version that did not load was replayed")
        } catch let error as RecoveryError {
            #expect(error.isolates && error.problem.contains("of which the storage keeps no copy"))
        }
        let current = try spin.fresh().recover(snapshot: nil, records: [Self.record(1, "NEXT", version: 2)], keep: 1)
        #expect(Self.text(current.state) == #"{"value":"red","context":{"rounds":0}}"#)
    }

    @Test func theJournal_KeepsEachVersion_AndWritesTheMigrationDurablyBeforeTheSpinRuns() throws {
        let directory = NSTemporaryDirectory() + "spin-versions-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        func journal() throws -> Journal {
            let journal = Journal(store: FileSpinStore(directory: directory),
                                  storage: .init(directory: directory, fsync: .batch, persists: true), logger: logger)
            try journal.open()
            return journal
        }
        let first = try journal()
        let old = try Self.spin(Self.v1)
        try first.keep(try #require(old.storedDefinition))
        #expect(try first.store.definitions(named: "spin.l") == [1: Array(Self.v1.utf8)])
        try first.store.startJournal(spin: "l", cuttingAt: nil)
        try first.store.append((1...3).map { Self.record($0, "NEXT") }, spin: "l")
        try first.store.commit(spin: "l", sync: true)
        try first.close()

        let second = try journal()
        let host = SpinHost()
        try host.host(machine: try MachineDefinition(json: Array(Self.v2.utf8), file: "light.json"), named: "l")
        let spin = try #require(host.spin(named: "l"))
        try second.keep(try #require(spin.storedDefinition))
        #expect(try second.store.definitions(named: "spin.l").keys.sorted() == [1, 2])
        let outcome = try second.recover([(spin, SpinFeed(name: "l", retain: 10, immediate: false))])
        #expect(outcome.sequences["l"] == 4)
        try second.close()

        let stored = try FileSpinStore(directory: directory)
        _ = try stored.open()
        defer { stored.close() }
        let records = try stored.read(spin: "l", repair: false).records
        #expect(records.map(\.sequence) == [1, 2, 3, 4])
        let (metadata, event) = JournalPayload.read(try #require(records.last).payload)
        #expect(metadata.v == 2 && metadata.migrated == 1)
        #expect(String(decoding: event, as: UTF8.self) == #"{"type":"spin.migrated","from":1,"to":2}"#)
    }

    // MARK: A Swift kind registered with a version

    struct Tally: Codable, Sendable, Equatable { var total: Int }
    enum TallyEvent: Codable, Sendable { case add(Int) }

    /// Version 2 of a kind whose version 1 state was `{"count": n}`; its events are the same.
    static func tallyHost() throws -> SpinHost {
        var kinds = SpinKindRegistry()
        kinds.register("tally", version: 2, migrate: { data, from in
            guard from == 1, let old = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let count = old["count"] as? Int else {
                throw CocoaError(.coderReadCorrupt)
            }
            return try JSONSerialization.data(withJSONObject: ["total": count])
        }) { context in
            try context.host(Spin(initialState: Tally(total: 0), feedbacks: [],
                                  reducer: Reducer { (state: Tally, event: TallyEvent) in
                                      guard case .add(let n) = event else { return state }
                                      return Tally(total: state.total + n)
                                  }))
        }
        let configuration = try SpinKindRegistryTests.load(#"{"spins": [{"name": "t", "kind": "tally"}]}"#, kinds: kinds)
        return try kinds.makeHost(configuration)
    }

    static func add(_ sequence: UInt64, _ n: Int) -> JournalRecord.Record {
        Self.record(sequence, json: #"{"add":{"_0":\#(n)}}"#)
    }

    static func record(_ sequence: UInt64, json: String) -> JournalRecord.Record {
        JournalPayload.records([HostedTransition(sequence: sequence, event: .raw(Array(json.utf8)), state: .null)])[0]
    }

    @Test func aSwiftKindsOlderSnapshot_IsMigratedAsJSON_ItsEventsReplayedThroughTheCurrentCode() throws {
        let spin = try #require(try Self.tallyHost().spin(named: "t"))
        #expect(spin.definitionVersion == 2 && spin.storedDefinition?.storedName == "swift.tally")
        let snapshot = Array(#"{"sequence":2,"state":{"count":5}}"#.utf8)
        let recovered = try spin.recover(snapshot: snapshot, records: [Self.add(3, 4)], keep: 10)
        #expect(recovered.sequence == 4 && recovered.migration?.migratedFrom == 1)
        #expect(Self.text(recovered.state) == #"{"total":9}"#)
        // A snapshot of version 2 is taken as it is.
        let current = Array(#"{"sequence":4,"version":2,"state":{"total":9}}"#.utf8)
        let again = try #require(try Self.tallyHost().spin(named: "t"))
        let taken = try again.recover(snapshot: current, records: [], keep: 1)
        #expect(taken.migration == nil && Self.text(taken.state) == #"{"total":9}"#)
    }

    @Test func aSwiftKindsEventTheCurrentCodeCannotDecode_OrAStateItsMigrateRefuses_LeavesThatSpinUnrecoverable() throws {
        let spin = try #require(try Self.tallyHost().spin(named: "t"))
        do {
            _ = try spin.recover(snapshot: nil, records: [Self.add(1, 1), Self.record(2, json: #"{"reset":{}}"#)], keep: 1)
            Issue.record("an event of version 1 the current code cannot decode was replayed")
        } catch let error as RecoveryError {
            #expect(error.isolates && error.sequence == 2)
            #expect(error.problem.contains("event 2 does not decode as an event of version 2 (it was applied under version 1)"))
        }
        let other = try #require(try Self.tallyHost().spin(named: "t"))
        do {
            _ = try other.recover(snapshot: Array(#"{"sequence":1,"state":{"tally":1}}"#.utf8), records: [], keep: 1)
            Issue.record("a snapshot migrate refused was taken")
        } catch let error as RecoveryError {
            #expect(error.isolates && error.problem.contains("of version 1 cannot be migrated to version 2 (swift.tally)"))
        }
    }
}
