import Dispatch
import SpinCore
import Synchronization
import SpinConcurrency

/// This server as `GET /v1/cluster` and `/metrics` show it: its node name, the URL it
/// advertises, and the newest view of the shared cluster when there is one.
///
/// Without a shared database (the file backend) the server is a cluster of one that
/// owns every hosted Spin. A cluster's lease loop calls `publish` after each tick with
/// what it read, and the answers follow that from then on.
package final class ClusterNode: Sendable {
    /// `cluster.node`.
    package let node: String
    private let state: Protected<(advertise: String, shared: ClusterStatus?)>
    /// Where requests about a Spin are served; nil: here (a server that shares nothing).
    /// Boxed: a function value read through `Protected`'s `inout` is re-abstracted, and
    /// each read would wrap it in one more thunk (a chain that grows with every request).
    private let decide = Protected<Decider?>(nil)

    private final class Decider: Sendable {
        let decide: @Sendable (_ spin: String, _ hops: Int) -> ClusterRouting
        init(_ decide: @escaping @Sendable (String, Int) -> ClusterRouting) { self.decide = decide }
    }
    /// The requests waiting for a move to end (`wait`).
    private let waiting = Protected(Waiting())

    /// - Parameter advertise: the URL to show until `bind(advertise:)` gives the real
    ///   one (with port 0 the port is known only once the listener is bound).
    /// - Parameter moveWait: how long a request waits for its Spin to move between nodes
    ///   (`wait`) before it is answered 503: a lease (`cluster.leaseSeconds`).
    package init(node: String, advertise: String, moveWait: Duration = .seconds(10)) {
        self.node = node
        self.moveWait = moveWait
        state = Protected((advertise, nil))
    }

    /// How long a request waits for its Spin to move between nodes.
    package let moveWait: Duration

    /// Whether a lease loop routes the requests (a cluster node); false: every Spin is here.
    package var routes: Bool { decide.withLock { $0 } != nil }

    /// The URL this node advertises.
    package var advertise: String { state.withLock { $0.advertise } }

    /// Sets the advertised URL once the listener is bound.
    package func bind(advertise: String) {
        state.withLock { $0.advertise = advertise }
    }

    /// Shows `status` (the shared cluster, as the lease loop last read it) from now on,
    /// and routes the requests waiting for a move again.
    package func publish(_ status: ClusterStatus) {
        state.withLock { $0.shared = status }
        wake()
    }

    /// The cluster now: the published view, or this node alone owning `hostedSpins`.
    package func status(hostedSpins: [String]) -> ClusterStatus {
        let (advertise, shared) = state.withLock { ($0.advertise, $0.shared) }
        return shared ?? .single(node: node, advertise: advertise, spins: hostedSpins)
    }

    private let trouble = Protected<String?>(nil)

    /// Where this node is in its life as a cluster member.
    package enum Standing: Sendable, Equatable {
        /// Started, and the Spins are still finding their owners (a node without a
        /// shared database never is).
        case joining
        /// Placement settled once since the start.
        case member
        /// A graceful stop hands its Spins over.
        case leaving
    }

    private let standing = Protected(Standing.member)
    private let leavingFlag = Atomic(false)

    /// Sets where this node is (the server: joining at the start, leaving at a graceful
    /// stop; the lease loop: a member once placement settled). Leaving is for good.
    package func stand(_ new: Standing) {
        standing.withLock { if $0 != .leaving { $0 = new } }
        if new == .leaving { leavingFlag.store(true, ordering: .relaxed) }
    }

    /// The node is leaving: every answer closes its connection (`Connection: close`),
    /// so that clients open their next one to a node that stays, and none has a request
    /// under way on an idle connection when this node stops listening.
    package var isLeaving: Bool { leavingFlag.load(ordering: .relaxed) }

    /// What keeps this node from its part in the cluster now (the lease loop cannot
    /// reach the database, placement has not settled since the start, or the node is
    /// leaving), or nil: `/readyz` answers 503 with it.
    package var problem: String? {
        if let trouble = trouble.withLock({ $0 }) { return trouble }
        switch standing.withLock({ $0 }) {
        case .member: return nil
        case .joining: return "the cluster's Spins have not all found their owners since this node started"
        case .leaving: return "this node is leaving the cluster and hands its Spins over"
        }
    }

    /// Sets (or clears, with nil) `problem`.
    package func report(problem: String?) {
        trouble.withLock { $0 = problem }
    }

    /// From now on, `routing(of:hops:)` answers what `decide` says (the lease loop
    /// sets it once it runs; tests set a fixed one).
    package func route(with decide: @escaping @Sendable (_ spin: String, _ hops: Int) -> ClusterRouting) {
        let decider = Decider(decide)
        self.decide.withLock { $0 = decider }
        wake()
    }

    /// Where a request about `spin` is served: here unless a cluster's lease loop says
    /// otherwise. `hops`: how many nodes sent the request on already.
    package func routing(of spin: String, hops: Int) -> ClusterRouting {
        guard let decider = decide.withLock({ $0 }) else { return .local }
        return decider.decide(spin, hops)
    }

    // MARK: Waiting for a move

    /// The most requests that wait for moves at once; beyond it a request that would
    /// wait is answered 503 `spin_unavailable` at once.
    package static let maxWaiting = 4096

    private struct Waiter {
        var spin: String
        var hops: Int
        var resume: @Sendable (ClusterRouting) -> Void
    }

    private struct Waiting {
        var waiters: [UInt64: Waiter] = [:]
        var next: UInt64 = 0
    }

    /// Waits until the routing of `spin` is no longer `.pending` (a move ended), then
    /// calls `resume` with it; at `deadline` (or at once when `maxWaiting` requests wait
    /// already) with `.unavailable(retryAfterSeconds: 1)`. `resume` runs on the thread
    /// that noticed (the lease loop's, or a timer's).
    package func wait(for spin: String, hops: Int, until deadline: ContinuousClock.Instant,
                      resume: @escaping @Sendable (ClusterRouting) -> Void) {
        let id = waiting.withLock { waiting -> UInt64? in
            guard waiting.waiters.count < Self.maxWaiting else { return nil }
            waiting.next &+= 1
            waiting.waiters[waiting.next] = Waiter(spin: spin, hops: hops, resume: resume)
            return waiting.next
        }
        guard let id else { return resume(.unavailable(retryAfterSeconds: 1)) }
        let delay = DispatchTimeInterval(ContinuousClock.now.duration(to: deadline))
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
            guard let waiter = waiting.withLock({ $0.waiters.removeValue(forKey: id) }) else { return }
            waiter.resume(.unavailable(retryAfterSeconds: 1))
        }
        // The view may have changed since the caller asked.
        let routing = routing(of: spin, hops: hops)
        if routing != .pending, let waiter = waiting.withLock({ $0.waiters.removeValue(forKey: id) }) {
            waiter.resume(routing)
        }
    }

    /// How many requests wait for a move now.
    package var waitingCount: Int { waiting.withLock { $0.waiters.count } }

    /// Routes the waiting requests again, resuming those whose move ended, oldest first.
    /// Called after each look at the cluster.
    package func wake() {
        guard decide.withLock({ $0 }) != nil else { return }
        let candidates = waiting.withLock { $0.waiters.sorted { $0.key < $1.key } }
        guard !candidates.isEmpty else { return }
        for (id, waiter) in candidates {
            let routing = routing(of: waiter.spin, hops: waiter.hops)
            if routing == .pending { continue }
            guard waiting.withLock({ $0.waiters.removeValue(forKey: id) }) != nil else { continue }
            waiter.resume(routing)
        }
    }
}
