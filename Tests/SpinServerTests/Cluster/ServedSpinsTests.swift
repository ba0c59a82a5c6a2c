import Dispatch
import Foundation
import Logging
import SpinCore
@testable import SpinServer
import SpinStorage
import SpinWire
import Testing
@testable import SpinConcurrency

/// A cluster node's Spins as their leases come and go (`ServedSpins`): a planned move
/// refuses nothing. Without sockets or a database: the journal writes to a directory,
/// the router is asked directly, and the test plays the lease loop (routing, `servePartition`, `retirePartition`).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ServedSpinsTests {
    struct Add: Codable, Sendable {
        var type = "add"
    }

    /// The partitions of the node's fence, and Spin `gate`'s.
    static let partitions = SpinPartitions(count: 4)
    static let gate = partitions.partition(of: "gate")

    /// Holds the reducer in the first event it applies until `open()`.
    final class Gate: Sendable {
        private let state = Protected((held: false, open: false))
        private let entered = DispatchSemaphore(value: 0)
        private let proceed = DispatchSemaphore(value: 0)

        init(open: Bool = false) { state.withLock { $0.open = open } }

        /// In the reducer: the first event waits for `open()`.
        func pass() {
            let waits = state.withLock { state -> Bool in
                defer { state.held = true }
                return !state.held && !state.open
            }
            guard waits else { return }
            entered.signal()
            proceed.wait()
        }

        /// Returns once the reducer waits in `pass`.
        func held() async { await ServedSpinsTests.blocking { self.entered.wait() } }

        func open() {
            state.withLock { $0.open = true }
            proceed.signal()
        }
    }

    /// One node serving Spin `gate`, whose reducer is held by `gate`.
    struct Node {
        let host: SpinHost
        let feeds: SpinFeeds
        let journal: Journal
        let served: ServedSpins
        let router: APIRouter
        /// What the node's routing says (the test's lease loop).
        let routing: Protected<ClusterRouting>
        /// Where the journal writes.
        let directory: String

        init(gate: Gate) throws {
            let directory = NSTemporaryDirectory() + "spin-served-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let host = SpinHost()
            try host.host(Spin(initialState: 0, feedbacks: [], reducer: Reducer { (count: Int, _: Add) in
                gate.pass()
                return count + 1
            }), named: "gate")
            host.startWithoutLoops()
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let journal = Journal(store: FileSpinStore(directory: directory),
                                  storage: .init(directory: directory, fsync: .batch, persists: true), logger: logger)
            try journal.open()
            _ = journal.start(onFailure: { _ in }, onRecovery: { _ in })
            let feeds = SpinFeeds(retain: 100, immediate: false)
            served = ServedSpins(host: host, feeds: feeds, journal: journal, fence: LeaseFence(node: "a", partitions: ServedSpinsTests.partitions),
                                 gears: GearRouter(mode: .journaled, backlog: 100, logger: logger),
                                 feedbackBudget: 1000, logger: logger) { hosted, feed, _ in
                [hosted.observe { transition in
                    feed.applied(transition)
                    journal.record(spin: hosted.name, transition)
                }]
            }
            let routing = Protected(ClusterRouting.local)
            let cluster = ClusterNode(node: "a", advertise: "http://a:1", moveWait: .seconds(10))
            cluster.route { _, _ in routing.withLock { $0 } }
            router = APIRouter(host: host, access: AccessControl(tokens: []), metrics: Metrics(), feeds: feeds,
                               cluster: cluster)
            (self.host, self.feeds, self.journal, self.routing, self.directory) = (host, feeds, journal, routing, directory)
        }

        /// The lease loop sees the Spin at its new owner `b` and routes what waits there.
        func movedToB() {
            routing.withLock { $0 = .proxy(node: "b", advertise: "http://127.0.0.1:9") }
            router.cluster.publish(.single(node: "a", advertise: "http://a:1", spins: []))
        }

        func close() {
            host.stop()
            try? journal.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    static let post = makeRequest("POST", "/v1/spins/gate/events", headers: [("Content-Type", "application/json")],
                                  body: Array(#"{"type":"add"}"#.utf8))

    /// Runs `body` (which blocks) off the cooperative pool.
    static func blocking(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                body()
                continuation.resume()
            }
        }
    }

    /// Polls `condition` until it holds or 5 s pass.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(5))
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    /// What the router makes of `request`, or nil when it is not answered within `timeout`.
    static func outcome(of request: HTTPRequest, _ router: APIRouter,
                        within timeout: Duration = .seconds(2)) async -> RouteOutcome? {
        let outcome = Protected<RouteOutcome?>(nil)
        router.handle(request, admission: router.admit(request)) { result in outcome.withLock { $0 = result } }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            if let result = outcome.withLock({ $0 }) { return result }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    @Test func aHandOverWhileAnEventIsBeingApplied_AcknowledgesItOnceCommitted_AndSendsTheNextOneToTheNewOwner() async throws {
        let gate = Gate()
        let node = try Node(gate: gate)
        defer { node.close() }
        try node.served.servePartition(Self.gate, epoch: 1)
        let applying = Task { await Self.outcome(of: Self.post, node.router, within: .seconds(10)) }
        await gate.held()
        // A second request waits behind the first, not yet taken by the Spin.
        let waiting = Task { await Self.outcome(of: Self.post, node.router, within: .seconds(10)) }
        #expect(await Self.eventually { node.host.spin(named: "gate")?.pendingEvents == 1 })
        // The node hands the Spin over (a SIGTERM, a node joining): the lease loop routes
        // its requests to the move first, then stops serving it.
        node.routing.withLock { $0 = .pending }
        let retired = Protected(false)
        DispatchQueue.global().async {
            node.served.retirePartition(Self.gate)
            retired.withLock { $0 = true }
        }
        // The waiting request came back unapplied and waits for the move.
        #expect(await Self.eventually { node.router.cluster.waitingCount == 1 })
        // The hand-over must not go on while the first event is being applied: given time
        // to, it must still be waiting for it.
        try await Task.sleep(for: .milliseconds(300))
        #expect(!retired.withLock { $0 })
        gate.open()
        #expect(await Self.eventually { retired.withLock { $0 } })
        // Applied before the Spin stopped: acknowledged, once its commit was done.
        guard case .respond(let answer)?? = await applying.value else {
            Issue.record("expected an answer to the event being applied")
            return
        }
        #expect(answer.status == 202, "\(answer.status) \(answer.errorCode ?? "")")
        #expect(answer.text == #"{"accepted":1,"sequence":1}"#)
        // Not applied: sent to the new owner once it serves, never refused.
        node.movedToB()
        guard case .proxy(let proxied)?? = await waiting.value else {
            Issue.record("expected the waiting event to go to the new owner")
            return
        }
        #expect(proxied.owner.port == 9)
        // What was acknowledged is durable: served here again, the Spin recovers it.
        try node.served.servePartition(Self.gate, epoch: 2)
        #expect(node.host.spin(named: "gate")?.snapshot().sequence == 1)
    }

    @Test func anEventThatReachesASpinNoLongerServedHere_FollowsItToItsOwner() async throws {
        let node = try Node(gate: Gate(open: true))
        defer { node.close() }
        try node.served.servePartition(Self.gate, epoch: 1)
        node.served.retirePartition(Self.gate)
        // The request was routed here just before the node stopped serving the Spin (the
        // routing read before the lease loop changed it), and reaches the instance in its
        // place: refused as stopped, it waits for the move instead of for a loop that
        // never runs here.
        let asked = Protected(0)
        node.router.cluster.route { _, _ in
            asked.withLock { asked in
                asked += 1
                return asked == 1 ? .local : .proxy(node: "b", advertise: "http://127.0.0.1:9")
            }
        }
        guard case .proxy(let proxied)? = await Self.outcome(of: Self.post, node.router) else {
            Issue.record("expected the event to go to the Spin's owner")
            return
        }
        #expect(proxied.owner.port == 9)
        // A node that stopped serving a Spin is not failing it: /readyz says nothing of it.
        #expect(node.feeds.failing.isEmpty)
    }
}
