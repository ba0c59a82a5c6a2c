import SpinWire

extension APIRouter {
    /// A request about `spin` while the Spin is between two nodes of a cluster
    /// (`ClusterRouting.pending`, or its events came back unapplied from a Spin that
    /// stopped here to move): it waits until the move ends, then is routed again from the
    /// start, to this node or to the new owner. It waits until `deadline` (set at the
    /// first wait, `ClusterNode.moveWait` from then, kept across further waits), then is
    /// answered 503 `spin_unavailable` with `Retry-After`. Nothing was applied meanwhile.
    func awaitMove(of spin: String, _ request: HTTPRequest, matched: (route: Route, name: Substring)?,
                   trace: RequestTrace?, deadline: ContinuousClock.Instant?,
                   respond: @escaping @Sendable (RouteOutcome) -> Void) {
        let deadline = deadline ?? ContinuousClock.now.advanced(by: cluster.moveWait)
        metrics.requestWaitedForMove()
        cluster.wait(for: spin, hops: ProxiedRequest.hops(of: request), until: deadline) { [self] routing in
            if case .unavailable(let retryAfter) = routing {
                return respond(.respond(.error(.spinUnavailable(spin, retryAfter: retryAfter))))
            }
            handle(request, matched: matched, trace: trace, moveDeadline: deadline, respond: respond)
        }
    }

    /// Answers `response`, unless its Spin stopped here before applying the request's
    /// events because it moves to another node (`APIError.reroutable`): then the request
    /// waits for the move and goes where the Spin runs next.
    func followMove(of spin: String, _ response: APIResponse, _ request: HTTPRequest,
                    matched: (route: Route, name: Substring)?, trace: RequestTrace?, deadline: ContinuousClock.Instant?,
                    respond: @escaping @Sendable (RouteOutcome) -> Void) {
        guard response.error?.reroutable == true, cluster.routes else { return respond(.respond(response)) }
        awaitMove(of: spin, request, matched: matched, trace: trace, deadline: deadline, respond: respond)
    }
}
