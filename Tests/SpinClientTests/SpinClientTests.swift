import Foundation
@testable import SpinClient
import Logging
import SpinServer
import Testing

/// Requests against a live server on port 0.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SpinClientTests {
    @Test func postWaitingForTheState_ReturnsTheStateAfterTheEvents() async throws {
        let live = try LiveServer.start()
        let client = live.client()
        let applied = try await client.post([Tally.Event(amount: 2), Tally.Event(amount: 3)], to: "tally",
                                            waitingFor: Tally.State.self)
        #expect(applied.state == Tally.State(count: 5))
        #expect(applied.sequence == 2)
        // Servers that reply per event say each was applied; older ones send no replies.
        #expect(applied.replies == nil || applied.replies == [PostedEventReply(applied: true), PostedEventReply(applied: true)])
        await live.shutdown()
    }

    @Test func postWithoutWaiting_IsAccepted_AndTheStateReadsBack() async throws {
        let live = try LiveServer.start()
        let client = live.client()
        #expect(try await client.post([Tally.Event(amount: 4)], to: "tally") == Accepted(accepted: 1, sequence: 1))
        #expect(try await client.post([Tally.Event(amount: 1), Tally.Event(amount: 1)], to: "tally")
                == Accepted(accepted: 2, sequence: 3))
        let snapshot = try await client.state(of: "tally", as: Tally.State.self)
        #expect(snapshot.name == "tally")
        #expect(snapshot.sequence == 3)
        #expect(snapshot.status == .running)
        #expect(snapshot.state == Tally.State(count: 6))
        await live.shutdown()
    }

    @Test func spins_AreListedAPageAtATime_InNameOrder() async throws {
        let live = try LiveServer.start()
        let client = live.client()
        let first = try await client.spins(limit: 1)
        #expect(first.spins.map(\.name) == ["shelf"])
        #expect(first.spins.first?.status == .running)
        #expect(first.spins.first?.sequence == 0)
        #expect(first.next == "shelf")
        let second = try await client.spins(after: first.next, limit: 1)
        #expect(second.spins.map(\.name) == ["tally"])
        #expect(second.next == nil)
        #expect(try await client.spins(prefix: "ta").spins.map(\.name) == ["tally"])
        #expect(try await client.spins(prefix: "x").spins.isEmpty)
        do {
            _ = try await client.spins(limit: 0)
            Issue.record("a limit of 0 was taken")
        } catch let error as SpinClientError {
            #expect(error.status == 400)
            #expect(error.code == "bad_request")
        }
        await live.shutdown()
    }

    @Test func history_ReadsEveryStateWithItsEventSenderAndTime_AndAnyStateByItsSequence() async throws {
        let storage = NSTemporaryDirectory() + "spin-client-history-\(UUID().uuidString)"
        let live = try LiveServer.start(storage: storage, tokens: [AccessToken(token: "t", scopes: [.read, .write], subject: "ann")]) {
            $0.storage.history = .all
            $0.storage.snapshotEvery = 10
        }
        let client = live.client(token: "t")
        let began = Date()
        for amount in 1...30 { _ = try await client.post([Tally.Event(amount: amount)], to: "tally") }
        var entries: [HistoryPage<Tally.State>.Entry] = []
        var from: UInt64?
        repeat {
            let page = try await client.history(of: "tally", from: from, limit: 7, as: Tally.State.self)
            entries += page.entries
            from = page.next
        } while from != nil
        #expect(entries.map(\.sequence) == Array(1...30))
        #expect(entries.map(\.state.count) == (1...30).map { $0 * ($0 + 1) / 2 })
        #expect(try entries.map { try $0.event(as: Tally.Event.self).amount } == Array(1...30))
        // The event's bytes as the server sent them.
        #expect(String(decoding: entries[0].event, as: UTF8.self) == #"{"type":"add","amount":1}"#)
        #expect(entries.allSatisfy { $0.sub == "ann" })
        #expect(entries.allSatisfy { ($0.at ?? .distantPast) >= began.addingTimeInterval(-1) && ($0.at ?? .distantFuture) <= Date() })
        let at = try await client.state(of: "tally", at: 4, as: Tally.State.self)
        #expect(at.sequence == 4 && at.state == Tally.State(count: 10))
        do {
            _ = try await client.state(of: "tally", at: 31, as: Tally.State.self)
            Issue.record("a sequence beyond the Spin's was read")
        } catch let error as SpinClientError {
            #expect(error.status == 404 && error.code == "sequence_not_found")
        }
        await live.shutdown()
    }

    @Test func anUnknownSpin_ThrowsSpinNotFound() async throws {
        let live = try LiveServer.start()
        await #expect(throws: SpinClientError.self) {
            try await live.client().post([Tally.Event(amount: 1)], to: "nope")
        }
        do {
            _ = try await live.client().state(of: "nope", as: Tally.State.self)
            Issue.record("an unknown Spin was read")
        } catch let error as SpinClientError {
            #expect(error.status == 404)
            #expect(error.code == "spin_not_found")
            #expect(!error.isRetryable)
        }
        await live.shutdown()
    }

    @Test func anEventTheSpinCannotDecode_Throws422InvalidEvent_AndChangesNothing() async throws {
        let live = try LiveServer.start()
        let client = live.client()
        do {
            _ = try await client.post([["type": "add"]], to: "tally", waitingFor: Tally.State.self)
            Issue.record("an event without an amount was applied")
        } catch let error as SpinClientError {
            guard case .rejected(let status, let code, let message, _) = error else {
                Issue.record("not the server's error: \(error)")
                return
            }
            #expect(status == 422)
            #expect(code == "invalid_event")
            #expect(message.contains("amount"))
        }
        #expect(try await client.state(of: "tally", as: Tally.State.self).sequence == 0)
        await live.shutdown()
    }

    @Test func theToken_IsSent_AndAMissingOneIs401() async throws {
        let live = try LiveServer.start(tokens: [AccessToken(token: "s3cret", scopes: [.read, .write])])
        do {
            _ = try await live.client().state(of: "tally", as: Tally.State.self)
            Issue.record("read without a token")
        } catch let error as SpinClientError {
            #expect(error.status == 401)
            #expect(error.code == "unauthorized")
        }
        let applied = try await live.client(token: "s3cret").post([Tally.Event(amount: 1)], to: "tally",
                                                                  waitingFor: Tally.State.self)
        #expect(applied.state.count == 1)
        await live.shutdown()
    }

    @Test func aServerThatIsNotThere_IsARetryableConnectionFailure() async throws {
        let live = try LiveServer.start()
        let client = live.client()
        await live.shutdown()
        do {
            _ = try await client.state(of: "tally", as: Tally.State.self)
            Issue.record("a stopped server answered")
        } catch let error as SpinClientError {
            #expect(error.isRetryable)
            #expect(error.status == nil)
        }
    }
}

/// `create(_:kind:)`, `restore`, `fork` and `delete(_:)` against a server with kind `tally` (`tally-*`).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SpinClientCreationTests {
    static func start() throws -> LoopServer {
        var configuration = SpinServerConfiguration(port: 0)
        configuration.kinds = [.init(name: "tally", kind: "tally", names: .init("tally-*"))]
        var kinds = SpinKindRegistry()
        kinds.register("tally") { context in try context.host(Tally.spin()) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return LoopServer(configuration: configuration, host: try kinds.makeHost(configuration), logger: logger)
    }

    @Test func create_MakesTheSpin_ThenSaysItExisted_RestoreAndForkFromItsHistory_AndDeleteRemovesIt() async throws {
        let server = try Self.start()
        let port = try server.start()
        let client = SpinClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        let made = try await client.create("tally-1", kind: "tally")
        #expect(made.outcome == .created && made.name == "tally-1" && made.kind == "tally" && made.sequence == 0)
        #expect(try await client.post([Tally.Event(amount: 2)], to: "tally-1").sequence == 1)
        let again = try await client.create("tally-1", kind: "tally")
        #expect(again.outcome == .existed && again.sequence == 1)
        do {
            _ = try await client.create("tally-2", kind: "nope")
            Issue.record("an unknown kind made a Spin")
        } catch let error as SpinClientError {
            #expect(error.status == 404 && error.code == "kind_not_found")
        }
        // Restored, then forked, from its history (no journal: the feed's, in memory).
        #expect(try await client.post([Tally.Event(amount: 5)], to: "tally-1").sequence == 2)
        let restored = try await client.restore("tally-1", at: 1, as: Tally.State.self)
        #expect(restored.name == "tally-1" && restored.sequence == 3 && restored.at == 1 && restored.state == Tally.State(count: 2))
        #expect(try await client.state(of: "tally-1", as: Tally.State.self).state == Tally.State(count: 2))
        let fork = try await client.fork("tally-1", at: 2, as: "tally-9")
        #expect(fork == SpinForked(name: "tally-9", kind: "tally", sequence: 1, from: "tally-1", at: 2))
        #expect(try await client.state(of: "tally-9", as: Tally.State.self).state == Tally.State(count: 7))
        do {
            _ = try await client.fork("tally-1", at: 2, as: "tally-9")
            Issue.record("a fork took a name in use")
        } catch let error as SpinClientError {
            #expect(error.status == 409 && error.code == "spin_exists")
        }
        do {
            _ = try await client.restore("tally-1", at: 9, as: Tally.State.self)
            Issue.record("a sequence beyond the Spin's was restored")
        } catch let error as SpinClientError {
            #expect(error.status == 404 && error.code == "sequence_not_found")
        }
        let deleted = try await client.delete("tally-1")
        #expect(deleted.outcome == .deleted && deleted.sequence == 3 && deleted.status.rawValue == "deleted")
        do {
            try await client.delete("tally-1")
            Issue.record("a deleted Spin was deleted again")
        } catch let error as SpinClientError {
            #expect(error.status == 404 && error.code == "spin_not_found")
        }
        await server.shutdown()
    }
}
