
/// The routes about the server as a whole: its probes, its metrics and its cluster.
extension APIRouter {
    /// `GET /healthz`: the process answers.
    func health() -> APIResponse {
        .json(200, .object([("status", .string("ok"))]))
    }

    /// `GET /readyz`: ready once every Spin is recovered and running, no Spin's storage
    /// fails and (in a cluster) the node can do its part; 503 with `Retry-After` until then.
    func readiness() -> Result<APIResponse, APIError> {
        let failing = feeds.failing
        if !failing.isEmpty { return .failure(.storageFailing(failing)) }
        if let problem = cluster.problem { return .failure(.notReady(clusterProblem: problem)) }
        guard host.isReady else { return .failure(.notReady(clusterProblem: nil)) }
        return .success(.json(200, .object([("status", .string("ready"))])))
    }

    /// `GET /metrics`, in Prometheus' text format. A cluster node reports the Spins it
    /// serves (each Spin's figures come from its owner).
    func metricsPage() -> APIResponse {
        let spins = host.spins.filter(\.isPrepared).map { spin in
            let feed = feeds.feed(spin.name)
            let failing = feed.isFailing
            return Metrics.SpinReading(name: spin.name, sequence: spin.snapshot().sequence, pending: spin.pendingEvents,
                                       suspended: spin.status == .suspended && !failing,
                                       durable: feed.snapshot.sequence, storageFailing: failing,
                                       unrecoverable: spin.unrecoverable != nil)
        }
        let onDisk = runtimeSpins?.onDiskOnly ?? 0
        let owned = cluster.status(hostedSpins: host.spins.map(\.name)).spins(of: cluster.node).count + onDisk
        return APIResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                           body: Array(metrics.render(spins: spins, ownedSpins: owned, gears: gears?.reading,
                                                      residency: (host.count, onDisk)).utf8))
    }

    /// `GET /v1/cluster`: the nodes of the cluster and the Spins each owns.
    func clusterStatus() -> APIResponse {
        .json(200, cluster.status(hostedSpins: host.spins.map(\.name)).json)
    }

    /// `GET /`: the dashboard. Open, like a login page; its API calls carry the token.
    func dashboard() -> APIResponse {
        APIResponse(status: 200, headers: [
            "Content-Type": "text/html; charset=utf-8",
            "Cache-Control": "no-cache",
            // Framed only by itself and the allowed origins: a page of those may hand the
            // dashboard tokens (postMessage), no other may frame it at all.
            "Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors \(frameAncestors)",
            "X-Content-Type-Options": "nosniff",
        ], body: Array(Dashboard.html.utf8))
    }

    /// `GET /openapi.json`, rendered once.
    func openAPIDocument() -> APIResponse {
        APIResponse(status: 200, headers: ["Content-Type": "application/json"], body: openAPI.document(of: host))
    }
}
