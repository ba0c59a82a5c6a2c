/// Where a request about one Spin is served in a cluster: here, by the owner (this
/// node proxies the request, streams included, since a browser's WebSocket does not
/// follow redirects), or nowhere for now (503 `spin_unavailable` with `Retry-After`,
/// while no live node holds the Spin's lease, as during a takeover).
package enum ClusterRouting: Sendable, Equatable {
    /// This node serves the Spin.
    case local
    /// `node` owns the Spin: send the request on to its `advertise` URL.
    case proxy(node: String, advertise: String)
    /// No live owner now; the client may try again after `retryAfterSeconds`.
    case unavailable(retryAfterSeconds: Int)

    /// The decision for a request about `spin`, at `now`.
    ///
    /// - Parameters:
    ///   - serving: the Spins this node serves (`LeasePlanner.serving`).
    ///   - view: the newest view of the database this node read.
    ///   - node: this node's name.
    ///   - leaseDuration: `cluster.leaseSeconds`.
    ///   - forwarded: the request came from another node (`ProxiedRequest`): it is
    ///     served here or not at all, never forwarded again, so that nodes whose views
    ///     differ for a moment cannot pass it back and forth.
    package static func decide<Instant: InstantProtocol>(
        spin: String, now: Instant, serving: Set<String>, view: ClusterView<Instant>, node: String,
        leaseDuration: Duration, forwarded: Bool = false
    ) -> ClusterRouting where Instant.Duration == Duration {
        if serving.contains(spin) { return .local }
        if forwarded { return .unavailable(retryAfterSeconds: 1) }
        guard let lease = view.validLease(of: spin, now: now) else {
            // Free or expired: the placed node takes it at its next tick.
            return .unavailable(retryAfterSeconds: wholeSeconds(leaseDuration / 3))
        }
        if lease.node == node {
            // Acquired, still recovering from the journal.
            return .unavailable(retryAfterSeconds: 1)
        }
        guard let owner = view.node(named: lease.node), owner.isLive(now: now, leaseDuration: leaseDuration),
              !owner.advertise.isEmpty else {
            // The owner stopped sending heartbeats: its lease runs out at `expiresAt`.
            return .unavailable(retryAfterSeconds: wholeSeconds(now.duration(to: lease.expiresAt)))
        }
        return .proxy(node: owner.name, advertise: owner.advertise)
    }

    /// `duration` rounded up to whole seconds, at least 1 (what `Retry-After` takes).
    static func wholeSeconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }
}

extension APIError {
    /// 503 `spin_unavailable` with `Retry-After`: no live node holds the Spin's lease
    /// now (a takeover or hand-over is under way); nothing was applied.
    package static func spinUnavailable(_ spin: String, retryAfter: Int) -> APIError {
        APIError(status: 503, code: "spin_unavailable",
                 message: "no node serves Spin \"\(spin)\" right now (its owner is changing); nothing was applied; retry in \(retryAfter) s",
                 headers: [("Retry-After", String(retryAfter))])
    }
}
