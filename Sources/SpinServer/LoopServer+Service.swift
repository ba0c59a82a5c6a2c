import Foundation
import Logging
import ServiceLifecycle

/// `LoopServer` as a swift-service-lifecycle `Service`, to run in a `ServiceGroup` beside
/// an application's other services; the group turns SIGTERM and SIGINT into a graceful
/// shutdown; SIGHUP re-reads the JWT keys (`reloadTokenKeys()`) when JWT is configured,
/// and never ends the process:
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
        // SIGHUP re-reads what can be re-read (the JWT keys), and never ends the process
        // (its default action): a SIGHUP sent to "reload" must not take the server down.
        let reloadSignal = ReloadSignal(SIGHUP) { [logger, tokenVerifier] in
            guard let tokenVerifier else {
                return logger.notice("SIGHUP: nothing to reload (the configuration file is read at start-up: restart to apply a change to it)")
            }
            logger.info("SIGHUP: reloading the JWT keys")
            tokenVerifier.reload()
        }
        defer { reloadSignal.cancel() }
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
