import Foundation
import Logging
import SpinCore
@testable import SpinServer
import SpinStorage
import SpinWire
import Testing
@testable import SpinConcurrency

/// `GearRouter` with real loops and no sockets or journal: the test plays the journal
/// (what is durable when) and the restarts.
@Suite(.timeLimit(.minutes(1)))
struct GearRouterTests {
    struct Ping: Codable, Sendable, Equatable { var n: Int }

    /// A catching Spin that keeps every n it caught, in order (and declines n = 0).
    static func catcher(_ gear: Gear<Ping>) -> Spin<[Int], Int> {
        Spin(initialState: [], feedbacks: [
            Feedback<[Int], Int>(attachedTo: gear, propagating: { (ping: Ping) -> Int? in ping.n }),
        ], reducer: Reducer(decliningInPlace: { (state: inout [Int], n: Int) -> Bool in
            guard n != 0 else { return false }
            state.append(n)
            return true
        }))
    }

    /// A sending Spin: each event n propagates Ping(n) from its state.
    static func sender(_ gear: Gear<Ping>) -> Spin<Int, Int> {
        Spin(initialState: 0, feedbacks: [
            Feedback<Int, Int>(attachedTo: gear, propagating: { (state: Int) -> Ping? in state > 0 ? Ping(n: state) : nil }),
        ], reducer: Reducer { (_: Int, n: Int) in n })
    }

    final class Setup: @unchecked Sendable {
        let host = SpinHost()
        let gear = Gear<Ping>()
        let router: GearRouter
        var consumption: GearConsumption?

        init(backlog: Int = 100, mode: GearRouter.Mode = .journaled, consumed: [String: UInt64] = [:],
             start: Bool = true) throws {
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            router = GearRouter(mode: mode, backlog: backlog, logger: logger)
            try host.host(GearRouterTests.sender(gear), named: "sender")
            try host.host(GearRouterTests.catcher(gear), named: "receiver")
            try host.host(gear, named: "g", attachedTo: ["sender", "receiver"])
            router.install(host.gears)
            host.prepare(feedbackBudget: 1000)
            consumption = router.register(receiver, consumed: consumed, durable: 0)
            if start { host.start() }
        }

        var receiver: any HostedSpin { host.spin(named: "receiver")! }

        /// What the receiver caught so far.
        var caught: [Int] {
            (try? JSONDecoder().decode([Int].self, from: Data(receiver.snapshot().state.bytes))) ?? []
        }

        func waitFor(_ expected: [Int]) async throws {
            for _ in 0..<300 where caught != expected { try await Task.sleep(for: .milliseconds(10)) }
            #expect(caught == expected)
        }

        /// The receiver's journal is durable through its current sequence.
        func receiverDurable() {
            router.journalDurable(spin: "receiver", through: receiver.snapshot().sequence, outbox: [])
            router.settleDown()
        }
    }

    static func records(_ positions: ClosedRange<UInt64>, n: (UInt64) -> Int = { Int($0) }) -> [OutboxRecord] {
        positions.map { OutboxRecord(position: $0, gear: "g", cause: $0, event: Array(#"{"n":\#(n($0))}"#.utf8)) }
    }

    @Test func anOutboxEvent_IsDeliveredOnlyOnceItsJournalSaysItIsDurable_InPositionOrder() async throws {
        let setup = try Setup()
        defer { setup.host.stop() }
        setup.router.settleDown()
        #expect(setup.caught == [])
        setup.router.journalDurable(spin: "sender", through: 2, outbox: Self.records(1...2))
        try await setup.waitFor([1, 2])
        setup.router.journalDurable(spin: "sender", through: 3, outbox: Self.records(3...3))
        try await setup.waitFor([1, 2, 3])
        setup.receiverDurable()
        #expect(setup.router.reading.pending["g"]?["receiver"] == 0)
    }

    @Test func aSenderSpin_PropagatesIntoItsCapture_NotToTheCatchersDirectly() async throws {
        let setup = try Setup(start: false)
        defer { setup.host.stop() }
        let capture = try #require(setup.router.sender("sender"))
        let sender = try #require(setup.host.spin(named: "sender"))
        let stash = Protected<[GearOutput]>([])
        let first = sender.observe({ transition in capture.begin(transition.sequence) },
                                   afterFeedbacks: { capture.end { outputs, _ in stash.withLock { $0 += outputs } } },
                                   unencodable: { _ in })
        setup.host.start()
        let batch = try sender.decodeEvents(json: Array("[4, 5]".utf8))
        #expect(sender.submit(batch, inboxLimit: 10, withState: false) { _ in } == .accepted)
        for _ in 0..<300 where stash.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(stash.withLock { $0.map { String(decoding: $0.event, as: UTF8.self) } } == [#"{"n":4}"#, #"{"n":5}"#])
        #expect(stash.withLock { $0.map(\.cause) } == [1, 2])
        setup.router.settleDown()
        #expect(setup.caught == [], "nothing was sent before it was durable")
        first.cancel()
    }

    /// A restart after any step: the receiver, recovered with what it consumed, gets the
    /// rest of the outbox, each event once, in order.
    @Test(arguments: 0...6)
    func afterARestart_ACatchingSpinGetsWhatItHadNotConsumed_Once(consumed: Int) async throws {
        let setup = try Setup(consumed: consumed == 0 ? [:] : ["sender": UInt64(consumed)], start: false)
        defer { setup.host.stop() }
        setup.router.seed("sender", outbox: Self.records(1...6))
        setup.host.start()
        try await setup.waitFor(Array((consumed + 1)...max(consumed + 1, 6)).filter { $0 <= 6 })
        setup.receiverDurable()
        let reading = setup.router.reading
        #expect(reading.redelivered["g"] ?? 0 == 6 - consumed)
        #expect(reading.duplicatesDropped["g"] ?? 0 == consumed)
    }

    @Test func eventsSentAgainAfterARestart_AreMarkedRedelivered_OnTheGearStream() async throws {
        let setup = try Setup(consumed: ["sender": 1], start: false)
        defer { setup.host.stop() }
        let shown = Protected<[GearTraffic]>([])
        let observation = try #require(setup.host.gear(named: "g")).observe { traffic in shown.withLock { $0.append(traffic) } }
        defer { observation.cancel() }
        setup.router.seed("sender", outbox: Self.records(1...2))
        setup.host.start()
        try await setup.waitFor([2])
        setup.router.journalDurable(spin: "sender", through: 3, outbox: Self.records(3...3))
        try await setup.waitFor([2, 3])
        let traffic = shown.withLock { $0 }
        #expect(traffic.map(\.position) == [2, 3], "the consumed one is not shown again")
        #expect(traffic.map(\.redelivered) == [true, false])
        #expect(String(decoding: StreamMessage.gear(traffic[0]).bytes, as: UTF8.self)
                == #"{"type":"gear","gear":"g","from":"sender","position":2,"redelivered":true,"event":{"n":2}}"#)
    }

    @Test func whatACatchingSpinDeclined_IsConsumed_AndJournaledWithItsNextEvent() async throws {
        let setup = try Setup()
        defer { setup.host.stop() }
        // n = 0 is declined by the catcher's reducer.
        setup.router.journalDurable(spin: "sender", through: 3,
                                    outbox: Self.records(1...3) { $0 == 2 ? 0 : Int($0) })
        try await setup.waitFor([1, 3])
        // The decline of 2 waits for the receiver's next journaled event.
        let noted = try #require(setup.consumption).take()
        #expect(noted == ["sender": 2])
    }

    @Test func aSuspendedCatcher_GetsNothing_UntilItResumes_ThenEverythingInOrder() async throws {
        let setup = try Setup()
        defer { setup.host.stop() }
        setup.receiver.suspend(reason: "test")
        setup.router.settleDown()
        setup.router.journalDurable(spin: "sender", through: 3, outbox: Self.records(1...3))
        setup.router.settleDown()
        try await Task.sleep(for: .milliseconds(50))
        #expect(setup.caught == [])
        setup.router.settleDown()
        #expect(setup.router.reading.pending["g"]?["receiver"] == 3)
        #expect(setup.receiver.resume(applying: nil) { _ in })
        try await setup.waitFor([1, 2, 3])
    }

    @Test func pastTheBacklog_ASuspendedCatcherLags_AndTheSenderKeepsNoMore() async throws {
        let setup = try Setup(backlog: 3)
        defer { setup.host.stop() }
        setup.receiver.suspend(reason: "test")
        setup.router.settleDown()
        setup.router.journalDurable(spin: "sender", through: 5, outbox: Self.records(1...5))
        setup.router.settleDown()
        let reading = setup.router.reading
        #expect(reading.pending["g"]?["receiver"] == 3, "the outbox keeps 3 for it")
        let reason = try #require(reading.lagging["receiver"]?["sender"])
        #expect(reason.contains("limits.gearBacklog (3)") && reason.contains("suspended"))
        // Once it resumes it gets the 3 kept, and records that it skipped 1 and 2.
        #expect(setup.receiver.resume(applying: nil) { _ in })
        try await setup.waitFor([3, 4, 5])
        #expect(try #require(setup.consumption).take()["sender"] == 2)
        #expect(setup.router.outboxToKeep(of: "sender").isEmpty == false)
        setup.receiverDurable()
        #expect(setup.router.outboxToKeep(of: "sender").isEmpty)
    }

    @Test func aRollback_DeliversAgainWhatTheCatcherTookAfterItsDurableState() async throws {
        let setup = try Setup()
        defer { setup.host.stop() }
        setup.router.journalDurable(spin: "sender", through: 2, outbox: Self.records(1...2))
        try await setup.waitFor([1, 2])
        setup.router.journalDurable(spin: "receiver", through: 1, outbox: [])
        setup.router.journalDurable(spin: "sender", through: 3, outbox: Self.records(3...3))
        try await setup.waitFor([1, 2, 3])
        // Its storage failed: it goes back to sequence 1 (its state then: [1]).
        let done = Protected(false)
        setup.receiver.hold(rollback: {
            setup.router.rolledBack("receiver", to: 1)
            return (1, .raw(Array("[1]".utf8)), 2)
        }, then: { done.withLock { $0 = true } })
        for _ in 0..<300 where !done.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(setup.caught == [1])
        setup.receiver.release()
        try await setup.waitFor([1, 2, 3])
    }

    @Test func anEventTheCatchersTypeCannotDecode_IsSkipped_AndShownOnTheGearStream() async throws {
        let setup = try Setup()
        defer { setup.host.stop() }
        let shown = Protected<[GearTraffic]>([])
        let observation = try #require(setup.host.gear(named: "g")).observe { traffic in shown.withLock { $0.append(traffic) } }
        defer { observation.cancel() }
        let bad = OutboxRecord(position: 1, gear: "g", cause: 1, event: Array(#"{"m":1}"#.utf8))
        setup.router.journalDurable(spin: "sender", through: 2, outbox: [bad] + Self.records(2...2))
        try await setup.waitFor([2])
        let traffic = shown.withLock { $0 }
        #expect(traffic.map(\.position) == [1, 2, 1])
        let skipped = try #require(traffic.last?.skipped)
        #expect(skipped.spin == "receiver" && skipped.reason.contains("Ping"))
        #expect(String(decoding: StreamMessage.gear(traffic[2]).bytes, as: UTF8.self).hasPrefix(#"{"type":"skipped","gear":"g","from":"sender","position":1,"spin":"receiver""#))
    }

    @Test func inMemory_AnEventIsSentWhenItsStateWasGiven_AndSettlesOnceTaken() async throws {
        let setup = try Setup(mode: .inMemory)
        defer { setup.host.stop() }
        setup.router.sent("sender", [GearOutput(gear: "g", event: Array(#"{"n":7}"#.utf8), cause: 1)])
        setup.router.sent("sender", [GearOutput(gear: "g", event: Array(#"{"n":8}"#.utf8), cause: 2)])
        try await setup.waitFor([7, 8])
        setup.router.settleDown()
        #expect(setup.router.reading.pending["g"]?["receiver"] == 0)
    }

    @Test func inMemory_ARollBack_DoesNotStopLaterEventsFromSettling() async throws {
        let setup = try Setup(mode: .inMemory)
        defer { setup.host.stop() }
        setup.router.sent("sender", [GearOutput(gear: "g", event: Array(#"{"n":7}"#.utf8), cause: 1)])
        try await setup.waitFor([7])
        // A refused state of the receiver (too large) sends it back to 1.
        setup.router.rolledBack("receiver", to: 1)
        setup.router.sent("sender", [GearOutput(gear: "g", event: Array(#"{"n":8}"#.utf8), cause: 2)])
        try await setup.waitFor([7, 8])
        setup.router.settleDown()
        #expect(setup.router.reading.pending["g"]?["receiver"] == 0, "in memory, what is taken is settled")
    }

    @Test func aGapInASendersPositions_DoesNotStallDelivery_OnceWhatWasTakenSettles() async throws {
        let setup = try Setup()
        defer { setup.host.stop() }
        // Position 2 went on a Gear no Spin here catches: the outbox has 1 and 3.
        let records = Self.records(1...3).filter { $0.position != 2 }
        setup.router.journalDurable(spin: "sender", through: 3, outbox: records)
        try await setup.waitFor([1])
        setup.router.settleDown()
        #expect(setup.caught == [1], "3 waits: the receiver's take of 1 is not durable yet")
        // The receiver's journal catches up: 1 settles, and 3 follows without another event.
        setup.receiverDurable()
        try await setup.waitFor([1, 3])
        setup.receiverDurable()
        #expect(setup.router.reading.pending["g"]?["receiver"] == 0)
    }

    @Test func anEventFromOutsideTheServersSpins_IsDeliveredAtOnce() async throws {
        let setup = try Setup()
        defer { setup.host.stop() }
        setup.gear.propagate(Ping(n: 9), from: "a script")
        try await setup.waitFor([9])
    }
}

/// A `LoopServer` routing a Gear between two Swift Spins, on real storage: what a Spin's
/// initial state propagates is sent once, not again at a restart; what an event's state
/// propagates leaves once it is durable.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct LoopServerGearTests {
    /// A sender whose every state s propagates Ping(s + 100) (its initial state too).
    static func host() throws -> (SpinHost, Gear<GearRouterTests.Ping>) {
        let host = SpinHost()
        let gear = Gear<GearRouterTests.Ping>()
        // Its events are objects too: {"n": 5} sets its state to 5.
        try host.host(Spin(initialState: 0, feedbacks: [
            Feedback<Int, GearRouterTests.Ping>(attachedTo: gear, propagating: { (state: Int) -> GearRouterTests.Ping? in
                GearRouterTests.Ping(n: state + 100)
            }),
        ], reducer: Reducer { (_: Int, event: GearRouterTests.Ping) in event.n }), named: "sender")
        try host.host(GearRouterTests.catcher(gear), named: "receiver")
        try host.host(gear, named: "g", attachedTo: ["sender", "receiver"])
        return (host, gear)
    }

    static func start(_ storage: String?) throws -> (LoopServer, Int) {
        var configuration = SpinServerConfiguration(port: 0)
        if let storage { configuration.storage = .init(directory: storage, fsync: .batch, persists: true) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = LoopServer(configuration: configuration, host: try host().0, logger: logger)
        return (server, try server.start())
    }

    static func caught(_ server: LoopServer) -> [Int] {
        guard let spin = server.host.spin(named: "receiver") else { return [] }
        return (try? JSONDecoder().decode([Int].self, from: Data(spin.snapshot().state.bytes))) ?? []
    }

    static func waitFor(_ expected: [Int], _ server: LoopServer) async throws {
        for _ in 0..<300 where caught(server) != expected { try await Task.sleep(for: .milliseconds(10)) }
        #expect(caught(server) == expected)
    }

    /// A Gear event whose `encode(to:)` throws for 13.
    struct Fragile: Codable, Sendable {
        var n: Int
        func encode(to encoder: any Encoder) throws {
            guard n != 13 else {
                throw EncodingError.invalidValue(n, .init(codingPath: [], debugDescription: "13 does not encode"))
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(n, forKey: .n)
        }
    }

    /// A sender that propagates `Fragile(n)` for each state n > 0, starting at `start`, and
    /// a receiver that records what it catches; served journaled, started.
    static func startFragile(sender start: Int) throws -> (SpinHost, LoopServer, port: Int, caught: Protected<[Int]>) {
        let host = SpinHost()
        let gear = Gear<Fragile>()
        try host.host(Spin(initialState: start, feedbacks: [
            Feedback<Int, GearRouterTests.Ping>(attachedTo: gear, propagating: { (state: Int) -> Fragile? in
                state > 0 ? Fragile(n: state) : nil
            }),
        ], reducer: Reducer { (_: Int, event: GearRouterTests.Ping) in event.n }), named: "sender")
        let caught = Protected<[Int]>([])
        try host.host(Spin(initialState: 0, feedbacks: [
            Feedback<Int, Int>(attachedTo: gear, propagating: { (event: Fragile) -> Int? in
                caught.withLock { $0.append(event.n) }
                return nil
            }),
        ], reducer: Reducer { (state: Int, n: Int) in state + n }), named: "receiver")
        try host.host(gear, named: "g", attachedTo: ["sender", "receiver"])
        var configuration = SpinServerConfiguration(port: 0)
        configuration.storage = .init(directory: JournalOutboxTests.directory(), fsync: .batch, persists: true)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = LoopServer(configuration: configuration, host: host, logger: logger)
        let port = try server.start()
        return (host, server, port, caught)
    }

    @Test func aGearEventThatDoesNotEncode_SuspendsItsSender_WhichGoesBack_AndNothingIsSent() async throws {
        let (host, server, port, caught) = try Self.startFragile(sender: 0)
        #expect(try LiveServerTests.post(port, "/v1/spins/sender/events", #"{"n":5}"#).status == 202)
        let refused = try LiveServerTests.post(port, "/v1/spins/sender/events", #"{"n":13}"#)
        #expect(refused.status == 500 && refused.body.contains("encoding_failed") && refused.body.contains("13 does not encode"))
        let sender = try #require(host.spin(named: "sender"))
        for _ in 0..<300 where sender.snapshot().sequence != 1 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(sender.snapshot().sequence == 1 && sender.status == .suspended)
        try await Task.sleep(for: .milliseconds(100))
        #expect(caught.withLock { $0 } == [5], "13 was never sent")
        await server.shutdown()
    }

    /// A Gear event that does not encode outside any transition (the one a Spin without
    /// history sends for its initial state) suspends its sender through its Gear capture,
    /// and nothing is sent.
    @Test func aGearEventThatDoesNotEncode_ApartFromATransition_SuspendsItsSender() async throws {
        let (host, server, _, caught) = try Self.startFragile(sender: 13)
        let sender = try #require(host.spin(named: "sender"))
        for _ in 0..<300 where sender.status != .suspended { try await Task.sleep(for: .milliseconds(10)) }
        #expect(sender.status == .suspended && sender.snapshot().sequence == 0)
        try await Task.sleep(for: .milliseconds(100))
        #expect(caught.withLock { $0 }.isEmpty, "13 was never sent")
        await server.shutdown()
    }

    @Test(arguments: [true, false])
    func theInitialStatesGearEvent_IsSentOnce_AndARestartSendsNothingAgain(persists: Bool) async throws {
        let storage = persists ? JournalOutboxTests.directory() : nil
        let (first, port) = try Self.start(storage)
        try await Self.waitFor([100], first)
        #expect(try LiveServerTests.post(port, "/v1/spins/sender/events", #"{"n":5}"#).status == 202)
        try await Self.waitFor([100, 105], first)
        await first.shutdown()
        guard persists else { return }
        let (second, again) = try Self.start(storage)
        try await Task.sleep(for: .milliseconds(200))
        #expect(Self.caught(second) == [100, 105], "the state it started from sent nothing again")
        #expect(try LiveServerTests.post(again, "/v1/spins/sender/events", #"{"n":7}"#).status == 202)
        try await Self.waitFor([100, 105, 107], second)
        await second.shutdown()
    }
}
