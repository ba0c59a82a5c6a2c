import Foundation
import Logging
@testable import SpinServer
import SpinStorage
import Testing

// Serialized: the raw clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct JournalRecoveryTests {
    static func start(storage: String, fsync: SpinServerConfiguration.Storage.Fsync = .batch, retain: Int = 10000,
                      onCorruption: SpinServerConfiguration.Storage.OnCorruption = .refuse) throws -> (LoopServer, Int) {
        var configuration = SpinServerConfiguration(port: 0)
        configuration.storage = .init(directory: storage, fsync: fsync, persists: true, retainEvents: retain,
                                      onCorruption: onCorruption)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = LoopServer(configuration: configuration, host: try makeExampleHost(start: false), logger: logger)
        return (server, try server.start())
    }

    static func spin(_ port: Int, _ name: String) throws -> [String: Any] {
        let client = try RawClient(port: port)
        client.send("GET /v1/spins/\(name) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return client.readResponse()?.body.jsonObject ?? [:]
    }

    /// `spin` once its feedbacks stopped emitting: the same sequence twice, 50 ms apart
    /// (levels keeps applying its own events for a while after a POST's answer).
    static func settled(_ port: Int, _ name: String) async throws -> [String: Any] {
        var last = try spin(port, name)
        for _ in 0..<200 {
            try await Task.sleep(for: .milliseconds(50))
            let now = try spin(port, name)
            if now["sequence"] as? Int == last["sequence"] as? Int { return now }
            last = now
        }
        Issue.record("\(name) never settled")
        return last
    }

    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "spin-journal-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test(arguments: [SpinServerConfiguration.Storage.Fsync.always, .batch, .none])
    func stateAndSequence_SurviveARestart(fsync: SpinServerConfiguration.Storage.Fsync) async throws {
        let storage = Self.temporaryDirectory()
        let (first, port) = try Self.start(storage: storage, fsync: fsync)
        #expect(try LiveServerTests.post(port, "/v1/spins/levels/events?wait=true",
                                          #"[{"type":"set","left":3,"right":3},{"type":"increaseLeft"}]"#).status == 200)
        let before = try await Self.settled(port, "levels")
        await first.shutdown()
        let (second, again) = try Self.start(storage: storage, fsync: fsync)
        let after = try Self.spin(again, "levels")
        #expect(after["sequence"] as? Int == before["sequence"] as? Int)
        #expect(after["state"] as? [String: Int] == ["left": 3, "right": 3])
        await second.shutdown()
    }

    static func file(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Posts `count` separate events (one journal record each) to levels, which ignores
    /// them once converged.
    static func postRecords(_ port: Int, count: Int) throws {
        for _ in 0..<count {
            #expect(try LiveServerTests.post(port, "/v1/spins/levels/events", #"{"type":"increaseLeft"}"#).status == 202)
        }
    }

    @Test func aTornTail_IsCut_AndTheRestIsRecovered() async throws {
        let storage = Self.temporaryDirectory()
        let (first, port) = try Self.start(storage: storage, fsync: .always)
        #expect(try LiveServerTests.post(port, "/v1/spins/levels/events?wait=true",
                                          #"{"type":"set","left":8,"right":8}"#).status == 200)
        let before = try Self.spin(port, "levels")["sequence"] as? Int
        await first.shutdown()
        // The process died in the middle of a write: half a record at the end.
        let journal = storage + "/levels.journal"
        let handle = try #require(FileHandle(forWritingAtPath: journal))
        handle.seekToEndOfFile()
        handle.write(Data(JournalRecord.encode(sequence: 999, payload: Array("{}".utf8)).dropLast(2)))
        handle.closeFile()
        let (second, again) = try Self.start(storage: storage)
        let after = try Self.spin(again, "levels")
        #expect(after["sequence"] as? Int == before)
        #expect(after["state"] as? [String: Int] == ["left": 8, "right": 8])
        #expect(JournalRecord.decode(try Self.file(journal)).damage == nil)
        await second.shutdown()
    }

    @Test func aCorruptJournal_StopsStartUp_NamingTheFileAndOffset_AndChangesNothing() async throws {
        let storage = Self.temporaryDirectory()
        let (first, port) = try Self.start(storage: storage, fsync: .always)
        try Self.postRecords(port, count: 20)
        let sequence = try #require(try Self.spin(port, "levels")["sequence"] as? Int)
        await first.shutdown()
        let journal = storage + "/levels.journal"
        var bytes = try Self.file(journal)
        let records = JournalRecord.decode(bytes).records
        // A flipped byte in the payload of the fifth record from the end.
        let offset = records.dropLast(5).reduce(0) { $0 + 16 + $1.payload.count }
        bytes[offset + 18] ^= 0x04
        try Data(bytes).write(to: URL(fileURLWithPath: journal))
        do {
            let (server, _) = try Self.start(storage: storage)
            await server.shutdown()
            Issue.record("started from a corrupt journal")
        } catch {
            #expect("\(error)".contains("levels.journal"))
            #expect("\(error)".contains("byte \(offset)"))
            #expect("\(error)".contains("--repair"))
        }
        #expect(try Self.file(journal) == bytes)
        // With the repair, the journal is cut there: the five events from it are gone.
        let (repaired, port2) = try Self.start(storage: storage, onCorruption: .truncate)
        #expect(try Self.spin(port2, "levels")["sequence"] as? Int == sequence - 5)
        #expect(JournalRecord.decode(try Self.file(journal)).damage == nil)
        await repaired.shutdown()
    }

    @Test func aSecondServer_OnTheSameStorage_RefusesToStart() async throws {
        let storage = Self.temporaryDirectory()
        let (first, _) = try Self.start(storage: storage)
        do {
            let (second, _) = try Self.start(storage: storage)
            await second.shutdown()
            Issue.record("two servers started on one storage directory")
        } catch {
            #expect("\(error)".contains("one storage directory serves one server"))
            #expect("\(error)".contains("pid \(getpid())"))
        }
        await first.shutdown()
        let (third, _) = try Self.start(storage: storage)
        await third.shutdown()
    }

    @Test func theJournal_IsCompacted_KeepingTheRetainedEvents() async throws {
        let storage = Self.temporaryDirectory()
        let (first, port) = try Self.start(storage: storage, fsync: .none, retain: 30)
        // Batches of 400: records = events; compaction is due at 30 + 1000.
        let batch = "[" + Array(repeating: #"{"type":"increaseLeft"}"#, count: 400).joined(separator: ",") + "]"
        for _ in 0..<3 {
            #expect(try LiveServerTests.post(port, "/v1/spins/levels/events", batch).status == 202)
        }
        let sequence = try #require(try Self.spin(port, "levels")["sequence"] as? Int)
        let state = try Self.spin(port, "levels")["state"] as? [String: Int]
        await first.shutdown()
        let records = JournalRecord.decode(try Self.file(storage + "/levels.journal")).records
        #expect(records.count >= 30 && records.count < 1030)
        #expect(records.last?.sequence == UInt64(sequence))
        let snapshot = try #require(try JSONSerialization.jsonObject(with: Data(Self.file(storage + "/levels.snapshot.json"))) as? [String: Any])
        #expect(snapshot["sequence"] as? Int == Int(records[0].sequence) - 1)
        let (second, again) = try Self.start(storage: storage, retain: 30)
        #expect(try Self.spin(again, "levels")["sequence"] as? Int == sequence)
        #expect(try Self.spin(again, "levels")["state"] as? [String: Int] == state)
        await second.shutdown()
    }

    @Test(arguments: [(SpinServerConfiguration.Storage.Fsync.none, true), (.batch, false), (.always, false)])
    func theEpoch_ChangesOnlyWhenAStopUnderNoneWasUnclean(fsync: SpinServerConfiguration.Storage.Fsync, changes: Bool) async throws {
        let storage = Self.temporaryDirectory()
        let epochFile = storage + "/levels.epoch"
        let (first, _) = try Self.start(storage: storage, fsync: fsync)
        await first.shutdown()
        let epoch = try Self.file(epochFile)
        let (second, _) = try Self.start(storage: storage, fsync: fsync)
        await second.shutdown()
        #expect(try Self.file(epochFile) == epoch, "a clean restart keeps the epoch")
        // An unclean stop: the marker a clean shutdown leaves is missing.
        try FileManager.default.removeItem(atPath: storage + "/.clean")
        let (third, _) = try Self.start(storage: storage, fsync: fsync)
        await third.shutdown()
        #expect((try Self.file(epochFile) != epoch) == changes)
    }

    @Test func unusableStoredState_StopsStartUpNamingTheSpin() async throws {
        let storage = Self.temporaryDirectory()
        try Data(#"{"sequence":4,"state":{"left":"x"}}"#.utf8).write(to: URL(fileURLWithPath: storage + "/levels.snapshot.json"))
        do {
            _ = try Self.start(storage: storage)
            Issue.record("started from a snapshot that does not decode")
        } catch {
            #expect("\(error)".contains("levels"))
        }
    }
}
