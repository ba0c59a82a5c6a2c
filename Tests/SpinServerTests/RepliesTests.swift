import Foundation
import Logging
import SpinCore
@testable import SpinServer
import SpinStorage
import SpinWire
import Testing

/// A turnstile with a partial reducer: `coin` only unlocks a locked one, `push` only
/// locks an unlocked one; any other event, and those two in the wrong state, are declined.
struct Turnstile: Codable, Sendable, Equatable {
    var locked = true
    var coins = 0

    struct Event: Codable, Sendable, Equatable {
        var type: String
    }

    static let reducer = Reducer<Turnstile, Event>.partial { state, event in
        switch (event.type, state.locked) {
        case ("coin", true): Turnstile(locked: false, coins: state.coins + 1)
        case ("push", false): Turnstile(locked: true, coins: state.coins)
        default: nil
        }
    }

    static func host() throws -> SpinHost {
        let host = SpinHost()
        try host.host(Spin(initialState: Turnstile(), feedbacks: [], reducer: reducer), named: "turnstile", kind: "turnstile")
        return host
    }
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct RepliesTests {
    @Test func waitTrue_RepliesOncePerEvent_AndAnIgnoredEventDoesNotCount() async throws {
        let host = try Turnstile.host()
        host.start()
        let router = makeRouter(host)
        let response = await router.post("/v1/spins/turnstile/events", #"[{"type":"coin"},{"type":"coin"},{"type":"push"},{"type":"push"}]"#,
                                         query: [("wait", "true")])
        #expect(response.status == 200)
        #expect(response.text == """
            {"sequence":2,"state":{"locked":true,"coins":1},"replies":[{"applied":true},\
            {"applied":false,"reason":"no_transition"},{"applied":true},{"applied":false,"reason":"no_transition"}]}
            """)
        // A batch of only ignored events still gets its answer, at the same sequence.
        let ignored = await router.post("/v1/spins/turnstile/events", #"{"type":"push"}"#, query: [("wait", "true")])
        #expect(ignored.text == #"{"sequence":2,"state":{"locked":true,"coins":1},"replies":[{"applied":false,"reason":"no_transition"}]}"#)
        // Without wait, 202 counts every event taken and says how many were ignored.
        let accepted = await router.post("/v1/spins/turnstile/events", #"[{"type":"push"},{"type":"coin"}]"#)
        #expect(accepted.status == 202)
        #expect(accepted.text == #"{"accepted":2,"sequence":3,"ignored":1}"#)
        let allApplied = await router.post("/v1/spins/turnstile/events", #"{"type":"push"}"#)
        #expect(allApplied.text == #"{"accepted":1,"sequence":4}"#)
        host.stop()
    }

    @Test(arguments: [SpinServerConfiguration.Storage.Fsync.always, .batch])
    func ignoredEvents_AreNotJournaled_AndABatchEndingInOne_IsStillDurable(
        fsync: SpinServerConfiguration.Storage.Fsync
    ) async throws {
        let storage = JournalRecoveryTests.temporaryDirectory()
        let (first, port) = try Self.start(storage: storage, fsync: fsync)
        // The batch's last event is ignored: its last applied one must end the batch, or
        // the journal would never write it and the answer would never come.
        let batch = try LiveServerTests.post(port, "/v1/spins/turnstile/events?wait=true",
                                             #"[{"type":"coin"},{"type":"push"},{"type":"push"}]"#)
        #expect(batch.status == 200)
        #expect(batch.body.jsonObject["sequence"] as? Int == 2)
        let none = try LiveServerTests.post(port, "/v1/spins/turnstile/events?wait=true", #"[{"type":"push"},{"type":"kick"}]"#)
        #expect(none.status == 200)
        #expect(none.body.jsonObject["sequence"] as? Int == 2)
        await first.shutdown()
        let records = JournalRecord.decode(try JournalRecoveryTests.file(storage + "/turnstile.journal")).records
        #expect(records.map(\.sequence) == [1, 2])
        #expect(records.map(\.endsBatch) == [false, true])
        let (second, again) = try Self.start(storage: storage, fsync: fsync)
        let recovered = try JournalRecoveryTests.spin(again, "turnstile")
        #expect(recovered["sequence"] as? Int == 2)
        let state = recovered["state"] as? [String: Any]
        #expect(state?["locked"] as? Bool == true && state?["coins"] as? Int == 1)
        await second.shutdown()
    }

    @Test func streamAck_SaysWhenAnEventWasIgnored() {
        let applied = StreamMessage.ack(id: .string("c1"), AppliedEvent(sequence: 3))
        #expect(String(decoding: applied.bytes, as: UTF8.self) == #"{"type":"ack","id":"c1","sequence":3}"#)
        let ignored = StreamMessage.ack(id: .string("c2"), AppliedEvent(sequence: 3, ignored: [0]))
        #expect(String(decoding: ignored.bytes, as: UTF8.self)
                == #"{"type":"ack","id":"c2","sequence":3,"applied":false,"reason":"no_transition"}"#)
        let some = StreamMessage.ack(id: .string("c3"), AppliedEvent(sequence: 4, count: 2, ignored: [1]))
        #expect(String(decoding: some.bytes, as: UTF8.self)
                == #"{"type":"ack","id":"c3","sequence":4,"replies":[{"applied":true},{"applied":false,"reason":"no_transition"}]}"#)
    }

    static func start(storage: String, fsync: SpinServerConfiguration.Storage.Fsync) throws -> (LoopServer, Int) {
        var configuration = SpinServerConfiguration(port: 0)
        configuration.storage = .init(directory: storage, fsync: fsync, persists: true, retainEvents: 100)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = LoopServer(configuration: configuration, host: try Turnstile.host(), logger: logger)
        return (server, try server.start())
    }
}
