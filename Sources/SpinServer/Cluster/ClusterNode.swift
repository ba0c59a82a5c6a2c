import SpinCore

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
        let decide: @Sendable (_ spin: String, _ forwarded: Bool) -> ClusterRouting
        init(_ decide: @escaping @Sendable (String, Bool) -> ClusterRouting) { self.decide = decide }
    }

    /// - Parameter advertise: the URL to show until `bind(advertise:)` gives the real
    ///   one (with port 0 the port is known only once the listener is bound).
    package init(node: String, advertise: String) {
        self.node = node
        state = Protected((advertise, nil))
    }

    /// The URL this node advertises.
    package var advertise: String { state.withLock { $0.advertise } }

    /// Sets the advertised URL once the listener is bound.
    package func bind(advertise: String) {
        state.withLock { $0.advertise = advertise }
    }

    /// Shows `status` (the shared cluster, as the lease loop last read it) from now on.
    package func publish(_ status: ClusterStatus) {
        state.withLock { $0.shared = status }
    }

    /// The cluster now: the published view, or this node alone owning `hostedSpins`.
    package func status(hostedSpins: [String]) -> ClusterStatus {
        let (advertise, shared) = state.withLock { ($0.advertise, $0.shared) }
        return shared ?? .single(node: node, advertise: advertise, spins: hostedSpins)
    }

    private let trouble = Protected<String?>(nil)

    /// What keeps this node from its part in the cluster now (the lease loop cannot
    /// reach the database), or nil: `/readyz` answers 503 with it.
    package var problem: String? { trouble.withLock { $0 } }

    /// Sets (or clears, with nil) `problem`.
    package func report(problem: String?) {
        trouble.withLock { $0 = problem }
    }

    /// From now on, `routing(of:forwarded:)` answers what `decide` says (the lease loop
    /// sets it once it runs; tests set a fixed one).
    package func route(with decide: @escaping @Sendable (_ spin: String, _ forwarded: Bool) -> ClusterRouting) {
        let decider = Decider(decide)
        self.decide.withLock { $0 = decider }
    }

    /// Where a request about `spin` is served: here unless a cluster's lease loop says
    /// otherwise. `forwarded`: another node sent the request on (it is never sent on twice).
    package func routing(of spin: String, forwarded: Bool) -> ClusterRouting {
        guard let decider = decide.withLock({ $0 }) else { return .local }
        return decider.decide(spin, forwarded)
    }
}
