import Foundation
@testable import SpinClient
import SpinServer
import Testing

/// The state stream against a live server on port 0: order, reconnection, cancellation.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SpinStateStreamTests {
    @Test func theStream_YieldsTheSnapshot_ThenEveryStateInOrder() async throws {
        let live = try LiveServer.start()
        let client = live.client()
        _ = try await client.post([Tally.Event(amount: 10)], to: "tally")
        var states = client.states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        let snapshot = try #require(try await states.next())
        #expect(snapshot.kind == .snapshot)
        #expect(snapshot.sequence == 1)
        #expect(snapshot.state == Tally.State(count: 10))
        #expect(snapshot.event == nil)
        for amount in 1...5 { _ = try await client.post([Tally.Event(amount: amount)], to: "tally") }
        let updates = try await states.next(5)
        #expect(updates.map(\.kind) == Array(repeating: .state, count: 5))
        #expect(updates.map(\.sequence) == [2, 3, 4, 5, 6])
        #expect(updates.map(\.state.count) == [11, 13, 16, 20, 25])
        #expect(try updates.map { try $0.event(as: Tally.Event.self) } == (1...5).map { Tally.Event(amount: $0) })
        #expect(Set(updates.map(\.epoch)) == [snapshot.epoch])
        await live.shutdown()
    }

    @Test func since_ResumesAfterThatSequence_WithoutASnapshot() async throws {
        let live = try LiveServer.start()
        let client = live.client()
        _ = try await client.post((1...4).map { Tally.Event(amount: $0) }, to: "tally")
        var states = client.states(of: "tally", as: Tally.State.self, since: 2).makeAsyncIterator()
        let updates = try await states.next(2)
        #expect(updates.map(\.kind) == [.state, .state])
        #expect(updates.map(\.sequence) == [3, 4])
        #expect(updates.map(\.state.count) == [6, 10])
        await live.shutdown()
    }

    @Test func aRestartedServer_WithTheSameHistory_IsResumedWithNoGapAndNoDuplicate() async throws {
        let storage = LiveServer.temporaryDirectory()
        let first = try LiveServer.start(storage: storage)
        let client = first.client()
        // Read all along in a task of its own: the stream sees the shutdown at once and
        // retries (refused) while the server is down.
        let (updates, received) = AsyncStream<StateUpdate<Tally.State>>.makeStream()
        let consumer = Task {
            for try await update in client.states(of: "tally", as: Tally.State.self) { received.yield(update) }
        }
        var seen = updates.makeAsyncIterator()
        var all = await seen.next(1)
        _ = try await client.post((1...3).map { Tally.Event(amount: $0) }, to: "tally")
        all += await seen.next(3)
        await first.shutdown()
        // Same port, same storage: the same history, so the same epoch.
        let second = try LiveServer.start(port: first.port, storage: storage)
        _ = try await client.post([Tally.Event(amount: 4), Tally.Event(amount: 5)], to: "tally")
        all += await seen.next(2)
        _ = try await client.post([Tally.Event(amount: 6)], to: "tally")
        all += await seen.next(1)
        #expect(all.map(\.kind) == [.snapshot] + Array(repeating: .state, count: 6))
        #expect(all.map(\.sequence) == Array(0...6))
        #expect(all.map(\.state.count) == [0, 1, 3, 6, 10, 15, 21])
        #expect(Set(all.map(\.epoch)).count == 1)
        consumer.cancel()
        await second.shutdown()
    }

    @Test func aConnectionCutWithoutAClose_IsResumed_WithTheStatesMissedMeanwhile() async throws {
        let live = try LiveServer.start()
        let proxy = try CuttableProxy(to: live.port)
        let direct = live.client()
        let client = SpinClient(baseURL: proxy.url, streamOptions: direct.streamOptions)
        let (updates, received) = AsyncStream<StateUpdate<Tally.State>>.makeStream()
        let consumer = Task {
            for try await update in client.states(of: "tally", as: Tally.State.self) { received.yield(update) }
        }
        var seen = updates.makeAsyncIterator()
        var all = await seen.next(1)
        _ = try await direct.post([Tally.Event(amount: 1), Tally.Event(amount: 2)], to: "tally")
        all += await seen.next(2)
        proxy.cut()
        // Applied while the stream cannot reach the server: it must fetch them on return.
        _ = try await direct.post([Tally.Event(amount: 3), Tally.Event(amount: 4), Tally.Event(amount: 5)], to: "tally")
        try proxy.restore()
        all += await seen.next(3)
        _ = try await direct.post([Tally.Event(amount: 6)], to: "tally")
        all += await seen.next(1)
        #expect(all.map(\.kind) == [.snapshot] + Array(repeating: .state, count: 6))
        #expect(all.map(\.sequence) == Array(0...6))
        #expect(all.map(\.state.count) == [0, 1, 3, 6, 10, 15, 21])
        consumer.cancel()
        proxy.cut()
        await live.shutdown()
    }

    @Test func aConnectionThatGoesSilent_IsGivenUpAfterTheIdleTimeout_AndResumed() async throws {
        let live = try LiveServer.start()
        let proxy = try CuttableProxy(to: live.port)
        let direct = live.client()
        var options = direct.streamOptions
        options.idleTimeoutSeconds = 1
        var states = SpinClient(baseURL: proxy.url, streamOptions: options)
            .states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        var all = try await states.next(1)
        proxy.stall()
        _ = try await direct.post([Tally.Event(amount: 1), Tally.Event(amount: 2)], to: "tally")
        all += try await states.next(2)
        #expect(all.map(\.kind) == [.snapshot, .state, .state])
        #expect(all.map(\.sequence) == [0, 1, 2])
        proxy.cut()
        await live.shutdown()
    }

    @Test func aHostName_IsResolved() async throws {
        let live = try LiveServer.start()
        let client = SpinClient(baseURL: URL(string: "http://localhost:\(live.port)")!)
        var states = client.states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        #expect(try await states.next()?.kind == .snapshot)
        await live.shutdown()
    }

    @Test func aRestartedServer_WithANewHistory_SendsANewSnapshot() async throws {
        // In memory: each start is a new history (a new epoch), from sequence 0.
        let first = try LiveServer.start()
        let client = first.client()
        var states = client.states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        var before = try await states.next(1)   // connects: the snapshot at 0
        _ = try await client.post([Tally.Event(amount: 7)], to: "tally")
        before += try await states.next(1)
        #expect(before.map(\.sequence) == [0, 1])
        await first.shutdown()
        let second = try LiveServer.start(port: first.port)
        let snapshot = try #require(try await states.next())
        #expect(snapshot.kind == .snapshot)
        #expect(snapshot.sequence == 0)
        #expect(snapshot.state == Tally.State(count: 0))
        #expect(snapshot.epoch != before.last?.epoch)
        _ = try await client.post([Tally.Event(amount: 1)], to: "tally")
        let after = try #require(try await states.next())
        #expect(after.kind == .state)
        #expect(after.sequence == 1)
        #expect(after.epoch == snapshot.epoch)
        await second.shutdown()
    }

    @Test func cancellingTheConsumer_EndsTheSequence_AndClosesTheConnection() async throws {
        let live = try LiveServer.start()
        let client = live.client()
        let firstArrived = AsyncStream<Void>.makeStream()
        let consumer = Task {
            var count = 0
            for try await _ in client.states(of: "tally", as: Tally.State.self) {
                count += 1
                firstArrived.continuation.yield()
            }
            return count
        }
        for await _ in firstArrived.stream { break }
        #expect(try await live.openWebSockets() == 1)
        consumer.cancel()
        #expect(try await consumer.value == 1)   // ended without an error
        #expect(try await eventually { try await live.openWebSockets() == 0 })
        await live.shutdown()
    }

    /// Each stream blocks a thread of its own in its reads, none of the shared pools'. (On
    /// Dispatch's global queue, the reads of the first streams held every thread until
    /// the server's next ping: without pings, this test runs out of time.)
    @Test func aHundredStreamsAtOnce_EachGetTheSnapshotAndTheNextState() async throws {
        let live = try LiveServer.start { $0.limits.pingIntervalSeconds = 3600 }
        let client = live.client()
        let (snapshots, arrived) = AsyncStream<Void>.makeStream()
        let readers = (0..<100).map { _ in
            Task {
                var states = client.states(of: "tally", as: Tally.State.self).makeAsyncIterator()
                let first = try await states.next()
                arrived.yield()
                return try [first] + [await states.next()]
            }
        }
        var waiting = snapshots.makeAsyncIterator()
        #expect(await waiting.next(100).count == 100)
        _ = try await client.post([Tally.Event(amount: 5)], to: "tally")
        for reader in readers {
            let updates = try await reader.value
            #expect(updates.map { $0?.sequence } == [0, 1])
            #expect(updates.last??.state == Tally.State(count: 5))
        }
        await live.shutdown()
    }

    @Test func aStreamOfAnUnknownSpin_Throws404_InsteadOfRetrying() async throws {
        let live = try LiveServer.start()
        var states = live.client().states(of: "nope", as: Tally.State.self).makeAsyncIterator()
        do {
            _ = try await states.next()
            Issue.record("an unknown Spin streamed")
        } catch let error as SpinClientError {
            #expect(error.code == "spin_not_found")
        }
        #expect(try await states.next() == nil)   // finished
        await live.shutdown()
    }

    @Test func aStreamWithoutTheToken_Throws401_AndWithItStreams() async throws {
        let live = try LiveServer.start(tokens: [AccessToken(token: "s3cret", scopes: [.read])])
        var refused = live.client().states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        let error = await #expect(throws: SpinClientError.self) { _ = try await refused.next() }
        #expect(error?.status == 401)
        #expect(error?.code == "unauthorized")
        var states = live.client(token: "s3cret").states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        #expect(try await states.next()?.kind == .snapshot)
        await live.shutdown()
    }

    @Test func anEventSentOverTheStream_IsAcknowledged_AndItsStateStillComes() async throws {
        let live = try LiveServer.start()
        var states = live.client().states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        #expect(try await states.send(Tally.Event(amount: 3)) == 1)   // connects first
        let updates = try await states.next(2)
        #expect(updates.map(\.kind) == [.snapshot, .state])
        #expect(updates.last?.sequence == 1)
        #expect(updates.last?.state == Tally.State(count: 3))
        let refused = await #expect(throws: SpinClientError.self) { _ = try await states.send(["type": "add"]) }
        #expect(refused?.code == "invalid_event")
        #expect(try await states.send(Tally.Event(amount: 4)) == 2)
        #expect(try await states.next()?.state == Tally.State(count: 7))
        await live.shutdown()
    }

    @Test func anEventSentWithAReadOnlyToken_IsRefusedAsForbidden() async throws {
        let live = try LiveServer.start(tokens: [AccessToken(token: "reader", scopes: [.read])])
        var states = live.client(token: "reader").states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        let refused = await #expect(throws: SpinClientError.self) { _ = try await states.send(Tally.Event(amount: 1)) }
        #expect(refused?.code == "forbidden")
        #expect(try await states.next()?.sequence == 0)
        await live.shutdown()
    }

    @Test func anHTTPSURL_IsRefusedByTheStream() async throws {
        let client = SpinClient(baseURL: URL(string: "https://127.0.0.1:1")!)
        var states = client.states(of: "tally", as: Tally.State.self).makeAsyncIterator()
        await #expect(throws: SpinClientError.self) { _ = try await states.next() }
    }
}
