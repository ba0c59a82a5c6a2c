import Logging
import Metrics
import Prometheus

extension LoopServer {
    /// Bootstraps the process's logging and metrics for a server, in one call: swift-log
    /// with `SpinLogging`'s handlers at `log`'s level and format, and swift-metrics with a
    /// Prometheus factory over the registry it returns (pass that to
    /// `LoopServer(…, metricsRegistry:)`, and your own counters and timers are served on
    /// `GET /metrics` beside the server's).
    ///
    /// Call it before hosting: a `Logger` takes its handler when it is made, so one made
    /// before (a kind's `context.logger` too) would ignore `log.format` and `log.level`.
    /// `SpinServerProgram` calls it right after loading the configuration.
    ///
    /// ```swift
    /// let registry = LoopServer.bootstrap(log: configuration.log)   // once per process
    /// let host = try kinds.makeHost(configuration)
    /// let server = LoopServer(configuration: configuration, host: host, logger: Logger(label: "greeter"),
    ///                         metricsRegistry: registry)
    /// ```
    ///
    /// swift-log and swift-metrics can each be bootstrapped once per process: call this
    /// once, from the program's entry point, never from a library or a test that makes
    /// many servers.
    public static func bootstrap(log: SpinServerConfiguration.Log) -> PrometheusCollectorRegistry {
        SpinLogging.bootstrap(log: log)
        return bootstrapMetricsSystem()
    }
}
