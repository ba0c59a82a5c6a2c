import Metrics
import Prometheus

extension LoopServer {
    /// Bootstraps swift-metrics' global `MetricsSystem` with a Prometheus factory over a new
    /// registry and returns that registry; pass it to `LoopServer(…, metricsRegistry:)`, and
    /// every `Counter`, `Timer`, `Gauge` or `Recorder` made through swift-metrics anywhere in
    /// the process (a Spin's feedbacks, a library) is served on `GET /metrics` beside the
    /// server's own.
    ///
    /// ```swift
    /// let registry = LoopServer.bootstrapMetricsSystem()
    /// let server = LoopServer(configuration: configuration, host: host, logger: logger,
    ///                         metricsRegistry: registry)
    /// // in a feedback:
    /// Counter(label: "orders_placed_total", dimensions: [("spin", "orders")]).increment()
    /// ```
    ///
    /// `MetricsSystem` can be bootstrapped once per process: call this once, from the
    /// program's entry point, never from a library or a test that makes many servers.
    public static func bootstrapMetricsSystem() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }

    /// The registry this server's metrics live in (what `GET /metrics` renders).
    public var metricsRegistry: PrometheusCollectorRegistry { context.metrics.registry }
}
