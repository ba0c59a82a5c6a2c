import Foundation
import Logging
import ServiceLifecycle

/// `LoopServer` as a swift-service-lifecycle `Service`, to run in a `ServiceGroup` beside
/// an application's other services; the group turns SIGTERM and SIGINT into a graceful
/// shutdown (and, with JWT configured, SIGHUP into `reloadTokenKeys()`):
///
/// ```swift
/// let server = LoopServer(configuration: configuration, host: host, logger: logger)
/// let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint],
///                          cancellationSignals: [], logger: logger)
/// try await group.run()
/// ```
extension LoopServer: Service {
    /// Starts the server (`start()`) and logs `listening on URL`; waits for the group's
    /// graceful shutdown (or the task's cancellation); then shuts down as `shutdown()`
    /// does, within `limits.shutdownGraceSeconds`, and logs `stopped`.
    /// - Throws: the `LoopServerError` of `start()`, or `.cannotPersist` when what the
    ///   Spins applied could not all be made durable at shutdown.
    public func run() async throws {
        let port = try start()
        logger.info("listening on \(configuration.url(port: port))")
        // With JWT configured, SIGHUP re-reads the keys (instead of ending the process).
        let reloadSignal = tokenVerifier.map { verifier in
            ReloadSignal(SIGHUP) { [logger] in
                logger.info("SIGHUP: reloading the JWT keys")
                verifier.reload()
            }
        }
        defer { reloadSignal?.cancel() }
        // Returns on graceful shutdown; throws CancellationError on cancellation: both stop.
        try? await gracefulShutdown()
        logger.info("shutting down (up to \(configuration.limits.shutdownGraceSeconds) s)")
        if let failure = await shutdown() {
            logger.critical("stopped, but \(failure)")
            throw failure
        }
        logger.info("stopped")
    }
}
