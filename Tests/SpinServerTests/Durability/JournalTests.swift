import Foundation
import Logging
@testable import SpinServer
import Testing

@Suite struct JournalRecordTests {
    @Test func crc32_MatchesTheStandardCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    @Test func records_RoundTrip() {
        let bytes = JournalRecord.encode(sequence: 1, payload: Array(#"{"type":"reset"}"#.utf8))
            + JournalRecord.encode(sequence: 2, payload: Array(#"{"type":"increase"}"#.utf8))
        let decoded = JournalRecord.decode(bytes)
        #expect(decoded.records.map(\.sequence) == [1, 2])
        #expect(decoded.records.last.map { String(decoding: $0.payload, as: UTF8.self) } == #"{"type":"increase"}"#)
        #expect(decoded.validLength == bytes.count)
    }

    @Test func aTornOrCorruptTail_IsWhereDecodingStops() {
        let first = JournalRecord.encode(sequence: 1, payload: Array("{}".utf8))
        let second = JournalRecord.encode(sequence: 2, payload: Array("{}".utf8))
        let torn = JournalRecord.decode(first + second.dropLast(3))
        #expect(torn.records.count == 1)
        #expect(torn.validLength == first.count)
        var corrupt = second
        corrupt[corrupt.count - 1] ^= 0xFF
        let flipped = JournalRecord.decode(first + corrupt)
        #expect(flipped.records.count == 1)
        #expect(flipped.validLength == first.count)
        #expect(JournalRecord.decode([0xFF, 0xFF, 0xFF, 0xFF] + Array(repeating: 0, count: 20)).validLength == 0)
    }
}

// Serialized: the raw clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct JournalRecoveryTests {
    static func start(storage: String, fsync: SpinServerConfiguration.Storage.Fsync = .batch) throws -> (LoopServer, Int) {
        var configuration = SpinServerConfiguration(port: 0)
        configuration.storage = .init(directory: storage, fsync: fsync, persists: true)
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
        let before = try Self.spin(port, "levels")
        await first.shutdown()
        let (second, again) = try Self.start(storage: storage, fsync: fsync)
        let after = try Self.spin(again, "levels")
        #expect(after["sequence"] as? Int == before["sequence"] as? Int)
        #expect(after["state"] as? [String: Int] == ["left": 3, "right": 3])
        await second.shutdown()
    }

    @Test func aCrash_IsRecoveredFromTheJournal_AndATornTailIsCut() async throws {
        let storage = Self.temporaryDirectory()
        let (first, port) = try Self.start(storage: storage, fsync: .always)
        #expect(try LiveServerTests.post(port, "/v1/spins/levels/events?wait=true",
                                          #"{"type":"set","left":8,"right":8}"#).status == 200)
        let before = try Self.spin(port, "levels")["sequence"] as? Int
        // A crash: no shutdown snapshot, and half a record at the end of the journal.
        let journal = storage + "/levels.journal"
        let handle = try #require(FileHandle(forWritingAtPath: journal))
        handle.seekToEndOfFile()
        handle.write(Data(JournalRecord.encode(sequence: 999, payload: Array("{}".utf8)).dropLast(2)))
        handle.closeFile()
        let snapshot = storage + "/levels.snapshot.json"
        try? FileManager.default.removeItem(atPath: snapshot)
        let (second, again) = try Self.start(storage: storage)
        let after = try Self.spin(again, "levels")
        #expect(after["sequence"] as? Int == before)
        #expect(after["state"] as? [String: Int] == ["left": 8, "right": 8])
        #expect(JournalRecord.decode(Array(try Data(contentsOf: URL(fileURLWithPath: journal)))).validLength
                == (try FileManager.default.attributesOfItem(atPath: journal)[.size] as? Int))
        await second.shutdown()
        await first.shutdown()
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
