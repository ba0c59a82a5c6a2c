/// Where a request about one Spin is served in a cluster, from the lease of the Spin's
/// partition (`SpinPartitions`): here, by the owner (this
/// node proxies the request, streams included, since a browser's WebSocket does not
/// follow redirects), later (a move is under way: the request waits for it to end), or
/// nowhere for now (503 `spin_unavailable` with `Retry-After`: the owner stopped
/// answering and its lease has not run out).
package enum ClusterRouting: Sendable, Equatable {
    /// This node serves the Spin.
    case local
    /// `node` owns the Spin: send the request on to its `advertise` URL.
    case proxy(node: String, advertise: String)
    /// The Spin is between owners for a moment: its lease is free or given back (a
    /// hand-over, a node leaving, start-up), taken by this node and recovering, or held
    /// by a node that left and gives it back. The request waits (bounded) and is routed
    /// again when the view changes.
    case pending
    /// The owner stopped sending heartbeats without leaving (it crashed or hangs): no
    /// node can serve the Spin before its lease runs out; the client may try again after
    /// `retryAfterSeconds`.
    case unavailable(retryAfterSeconds: Int)

    /// The most times one request is sent on from node to node: a node that hands a Spin
    /// over may pass a request it got from another node on to the new owner, but no
    /// further, so that nodes whose views differ for a moment cannot pass it around.
    package static let maxHops = 2

    /// The decision for a request about a Spin of `partition`, at `now`.
    ///
    /// - Parameters:
    ///   - serving: the partitions this node serves (`LeasePlanner.serving`).
    ///   - view: the newest view of the database this node read.
    ///   - node: this node's name.
    ///   - leaseDuration: `cluster.leaseSeconds`.
    ///   - hops: how many nodes sent the request on already (`ProxiedRequest.hops`); at
    ///     `maxHops` it is served here or waits until it can be, never sent on again.
    package static func decide<Instant: InstantProtocol>(
        partition: Int, now: Instant, serving: Set<Int>, view: ClusterView<Instant>, node: String,
        leaseDuration: Duration, hops: Int = 0
    ) -> ClusterRouting where Instant.Duration == Duration {
        if serving.contains(partition) {
            // Served here, unless this node's lease of it has run out by its own clock: a
            // node that was paused past its lease answers nothing from memory (a read is
            // not fenced) until its lease loop has looked at the database again (and
            // stopped serving the partition, or renewed the lease).
            if let lease = view.leases[partition], lease.node == node, now >= lease.expiresAt { return .pending }
            return .local
        }
        if hops >= maxHops { return .pending }
        // Free or expired: the placed node takes it at once (it is told of the release).
        guard let lease = view.validLease(of: partition, now: now) else { return .pending }
        // Acquired and recovering from the journal, or being handed over from here.
        if lease.node == node { return .pending }
        guard let owner = view.node(named: lease.node), !owner.advertise.isEmpty else {
            return .unavailable(retryAfterSeconds: wholeSeconds(now.duration(to: lease.expiresAt)))
        }
        if owner.isLive(now: now, leaseDuration: leaseDuration) {
            return .proxy(node: owner.name, advertise: owner.advertise)
        }
        // A node that left gives its leases back as it goes.
        if owner.heartbeatAt == nil { return .pending }
        // The owner stopped sending heartbeats: its lease runs out at `expiresAt`.
        return .unavailable(retryAfterSeconds: wholeSeconds(now.duration(to: lease.expiresAt)))
    }

    /// `duration` rounded up to whole seconds, at least 1 (what `Retry-After` takes).
    static func wholeSeconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }
}
