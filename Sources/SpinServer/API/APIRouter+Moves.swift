import SpinWire

extension APIRouter {
    /// What a cluster node does with a request about one Spin that it does not serve.
    enum Forwarding: Sendable, Equatable {
        /// Send it on to the node that owns the Spin and relay the answer.
        case proxy(ProxiedRequest)
        /// The Spin is between two nodes: wait for the move to end (`awaitMove`).
        case awaitMove(spin: String)
        /// No node can serve it now (503 `spin_unavailable`).
        case refuse(APIError)
    }

    /// Cluster forwarding: in a cluster, a request about one Spin is served by the node
    /// that owns it. Nil when this node serves the request (it owns the Spin, the route
    /// is not about one Spin, or there is no cluster).
    func forwarding(_ request: HTTPRequest, route: Route, name: Substring) -> Forwarding? {
        guard route.concernsOneSpin, !name.isEmpty else { return nil }
        let spin = String(name)
        switch cluster.routing(of: spin, hops: ProxiedRequest.hops(of: request)) {
        case .local:
            return nil
        case .proxy(_, let advertise):
            guard let owner = AdvertiseURL(advertise) else { return .refuse(.spinUnavailable(spin, retryAfter: 1)) }
            return .proxy(ProxiedRequest(request, to: owner, from: cluster.node))
        case .pending:
            return .awaitMove(spin: spin)
        case .unavailable(let retryAfter):
            return .refuse(.spinUnavailable(spin, retryAfter: retryAfter))
        }
    }

    /// Carries out `forwarding` for `call`.
    func forward(_ call: RouteCall, _ forwarding: Forwarding) {
        switch forwarding {
        case .proxy(let proxied): call.respond(.proxy(proxied))
        case .awaitMove(let spin): awaitMove(of: spin, call)
        case .refuse(let error): call.fail(error)
        }
    }

    /// A request about `spin` while the Spin is between two nodes of a cluster
    /// (`ClusterRouting.pending`, or its events came back unapplied from a Spin that
    /// stopped here to move): it waits until the move ends, then is routed again from the
    /// start, to this node or to the new owner. It waits until the call's `moveDeadline`
    /// (set at the first wait, `ClusterNode.moveWait` from then, kept across further
    /// waits), then is answered 503 `spin_unavailable` with `Retry-After`. Nothing was
    /// applied meanwhile.
    func awaitMove(of spin: String, _ call: RouteCall) {
        let deadline = call.moveDeadline ?? ContinuousClock.now.advanced(by: cluster.moveWait)
        metrics.requestWaitedForMove()
        cluster.wait(for: spin, hops: ProxiedRequest.hops(of: call.request), until: deadline) { [self] routing in
            if case .unavailable(let retryAfter) = routing {
                return call.fail(.spinUnavailable(spin, retryAfter: retryAfter))
            }
            reroute(call, moveDeadline: deadline)
        }
    }

    /// Answers `response`, unless its Spin stopped here before applying the request's
    /// events because it moves to another node (`APIError.reroutable`): then the request
    /// waits for the move and goes where the Spin runs next.
    ///
    /// A Spin made at run time that fell asleep while the events waited (on a single
    /// server, or on the cluster node that serves it) is woken instead, and the request
    /// handled again. The wake goes through the queue that put it to sleep, so it comes
    /// after the sleep: handling the request again at once would find the Spin stopped
    /// again, and again, without end.
    func followMove(of spin: String, _ response: APIResponse, _ call: RouteCall) {
        guard response.error?.reroutable == true else { return call.reply(response) }
        if let runtimeSpins, runtimeSpins.isMade(spin),
           !cluster.routes || cluster.routing(of: spin, hops: ProxiedRequest.hops(of: call.request)) == .local {
            // Handled again at most until the move deadline: a Spin that keeps refusing (it
            // stops again and again) answers then, instead of the request going round the
            // runtime queue for ever and keeping it from everything else.
            let deadline = call.moveDeadline ?? ContinuousClock.now.advanced(by: cluster.moveWait)
            guard ContinuousClock.now < deadline else { return call.reply(response) }
            return runtimeSpins.wake(spin) { [self] woke in
                // Awake now (woken by this request or another): handled again.
                if case .success = woke, let current = host.spin(named: spin), !current.isStopped {
                    return reroute(call, moveDeadline: deadline)
                }
                // Still stopped: the server stops or it was deleted (answered as it was), or
                // on a cluster its partition moved meanwhile (it follows).
                guard cluster.routes else { return call.reply(response) }
                awaitMove(of: spin, call)
            }
        }
        guard cluster.routes else { return call.reply(response) }
        awaitMove(of: spin, call)
    }
}
