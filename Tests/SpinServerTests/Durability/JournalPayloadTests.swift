import Foundation
import Logging
@testable import SpinServer
import SpinStorage
import SpinWire
import Testing

struct JournalPayloadTests {
    @Test func anEventWithoutOrigin_IsStoredAsItsJSONAlone_AsEveryJournalBeforeMetadata() {
        let transition = HostedTransition(sequence: 1, event: .raw(Array(#"{"type":"reset"}"#.utf8)), state: .null)
        #expect(JournalPayload.encode(transition) == Array(#"{"type":"reset"}"#.utf8))
        let decoded = JournalPayload.decode(Array(#"{"type":"reset"}"#.utf8))
        #expect(decoded.origin == nil && Array(decoded.event) == Array(#"{"type":"reset"}"#.utf8))
    }

    @Test func anOrigin_IsAJSONTextSequenceBeforeTheEvent_AndComesBack() {
        let transition = HostedTransition(sequence: 1, event: .raw(Array(#"{"type":"reset"}"#.utf8)), state: .null,
                                          origin: "al\"ice\n")
        let payload = JournalPayload.encode(transition)
        #expect(payload == [0x1E] + Array(#"{"sub":"al\"ice\n"}"#.utf8) + [0x0A] + Array(#"{"type":"reset"}"#.utf8))
        let decoded = JournalPayload.decode(payload)
        #expect(decoded.origin == "al\"ice\n")
        #expect(Array(decoded.event) == Array(#"{"type":"reset"}"#.utf8))
    }

    @Test func aDamagedMetadataHeader_IsLeftWholeForTheEventDecoderToRefuse() {
        for payload in [[0x1E] + Array(#"{"sub":"a"}"#.utf8), [0x1E] + Array("nope\n{}".utf8)] {
            let decoded = JournalPayload.decode(payload)
            #expect(decoded.origin == nil && Array(decoded.event) == payload)
        }
    }
}

/// Who sent each event is journaled and survives a restart (audit).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct JournalAuditTests {
    @Test func theSubjectOfAWrite_IsJournaled_AndShownWithItsStateMessageAfterARestart() async throws {
        let storage = JournalRecoveryTests.temporaryDirectory()
        var configuration = SpinServerConfiguration(port: 0)
        configuration.storage = .init(directory: storage, fsync: .batch, persists: true)
        configuration.tokens = [AccessToken(token: "alice-token", scopes: [.write], subject: "alice"),
                                AccessToken(token: "anonymous", scopes: [.write])]
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        func start() throws -> (LoopServer, Int) {
            let server = LoopServer(configuration: configuration, host: try makeExampleHost(start: false), logger: logger)
            return (server, try server.start())
        }
        let (first, port) = try start()
        func post(_ token: String, _ body: String) throws -> Int {
            let client = try RawClient(port: port)
            client.send("POST /v1/spins/levels/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            return client.readResponse()?.status ?? 0
        }
        #expect(try post("alice-token", #"{"type":"set","left":5,"right":5}"#) == 202)
        #expect(try post("anonymous", #"{"type":"set","left":6,"right":6}"#) == 202)
        await first.shutdown()
        let records = JournalRecord.decode(Array(try Data(contentsOf: URL(fileURLWithPath: storage + "/levels.journal")))).records
        // The client's events carry their sender; levels' own feedback events do not.
        let sets = records.map { JournalPayload.decode($0.payload) }.filter { $0.event.starts(with: Array(#"{"type":"set""#.utf8)) }
        #expect(sets.map(\.origin) == ["alice", nil])
        #expect(records.map { JournalPayload.decode($0.payload).origin }.count { $0 != nil } == 1)

        let (second, _) = try start()
        let history = try #require(second.context.router.feeds.feed("levels").retained(after: 0))
        let sent = try #require(history.first { $0.origin != nil })
        #expect(sent.origin == "alice")
        let message = String(decoding: StreamMessage.state(sent, epoch: "e"), as: UTF8.self)
        #expect(message.contains(#""event":{"type":"set","left":5,"right":5},"sub":"alice","state":"#))
        await second.shutdown()
    }
}
