import Logging
import SpinCore

/// The Spin server: hosts the Spins of a `SpinHost` over HTTP, WebSocket and SSE.
///
/// ```swift
/// let server = LoopServer(configuration: configuration, host: host, logger: logger)
/// let port = try server.start()      // binds, starts every Spin, serves
/// ...
/// await server.shutdown()            // stop accepting, close streams with 1001, finish requests
/// ```
public final class LoopServer: Sendable {
    public let configuration: SpinServerConfiguration
    public let host: SpinHost
    let logger: Logger

    public init(configuration: SpinServerConfiguration, host: SpinHost, logger: Logger) {
        self.configuration = configuration
        self.host = host
        self.logger = logger
    }

    /// Binds the listener, starts every hosted Spin and serves. Returns the bound port
    /// (the configured one, or the one picked for port 0).
    public func start() throws -> Int {
        throw LoopServerError.notImplemented
    }

    /// Graceful shutdown: stops accepting, closes streams with 1001, lets in-flight
    /// requests finish, then closes what is left after `shutdownGraceSeconds`, and stops
    /// every Spin.
    public func shutdown() async {}
}

public enum LoopServerError: Error, CustomStringConvertible {
    case notImplemented

    public var description: String { "the network layer is not wired yet" }
}
