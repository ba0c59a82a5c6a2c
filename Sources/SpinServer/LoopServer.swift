import Foundation
import Logging
import SpinCore
import SpinNet

/// The Spin server: hosts the Spins of a `SpinHost` over HTTP, WebSocket and SSE.
///
/// ```swift
/// let server = LoopServer(configuration: configuration, host: host, logger: logger)
/// let port = try server.start()      // starts every Spin, binds, serves
/// ...
/// await server.shutdown()            // stop accepting, close streams with 1001, finish requests
/// ```
public final class LoopServer: Sendable {
    public let configuration: SpinServerConfiguration
    public let host: SpinHost
    let logger: Logger
    private let context: ServerContext
    /// The Spins' journal when `storage.persists`.
    private let journal: Journal?
    private let running = Protected<Running?>(nil)

    private struct Running {
        var socketServer: SocketServer
        var subscriptions: [SpinSubscription]
    }

    public init(configuration: SpinServerConfiguration, host: SpinHost, logger: Logger) {
        self.configuration = configuration
        self.host = host
        self.logger = logger
        var limits = APIRouter.Limits()
        limits.inbox = configuration.limits.inbox
        let journal = configuration.storage.persists
            ? Journal(directory: configuration.storage.directory, policy: configuration.storage.fsync, logger: logger)
            : nil
        self.journal = journal
        let router = APIRouter(host: host, access: AccessControl(tokens: configuration.tokens), metrics: Metrics(),
                               limits: limits, durability: journal ?? ImmediateDurability(),
                               echoEndpoint: configuration.testing.echoEndpoint)
        self.context = ServerContext(configuration: configuration, router: router, logger: logger)
    }

    /// SpinNet's per-connection limits from ours. The pending output a connection may hold
    /// takes at least two of the largest WebSocket messages (the echo of one a client may
    /// send, and one more behind it), so a larger `maxWebSocketMessageBytes` does not turn
    /// into closed connections (Autobahn 9.*: 16 MiB messages).
    static func connectionLimits(_ limits: SpinServerConfiguration.Limits) -> ConnectionLimits {
        ConnectionLimits(
            maxPendingOutput: max(4 << 20, 2 * limits.maxWebSocketMessageBytes + (64 << 10)),
            idleTimeout: .seconds(limits.idleTimeoutSeconds),
            requestHeadTimeout: .seconds(limits.headerTimeoutSeconds),
            streamIdleTimeout: .seconds(max(limits.idleTimeoutSeconds, limits.pingIntervalSeconds * 3)))
    }

    /// Recovers every hosted Spin from storage (when `storage.persists`), starts them,
    /// binds the listener and serves. Returns the bound port (the configured one, or the
    /// one picked for port 0). Throws when stored state cannot be recovered, the address
    /// cannot be bound (in use, not local) or the TLS files cannot be used; the error's
    /// description says which.
    public func start() throws -> Int {
        let limits = configuration.limits
        let connectionLimits = Self.connectionLimits(limits)
        let netConfiguration = SpinNet.ServerConfiguration(
            host: configuration.host, port: configuration.port, maxConnections: limits.maxConnections,
            limits: connectionLimits)
        let tls = configuration.tls.map {
            TLSConfiguration(certificateChainPath: $0.certificate, privateKeyPath: $0.key)
        }
        let context = self.context
        let socketServer = SocketServer(configuration: netConfiguration, tls: tls) { connection in
            HTTPConnectionHandler(connection: connection, context: context)
        }
        guard running.withLock({ $0 == nil }) else { throw LoopServerError.alreadyStarted }
        var subscriptions: [SpinSubscription] = []
        if let journal {
            do {
                try FileManager.default.createDirectory(atPath: configuration.storage.directory,
                                                        withIntermediateDirectories: true)
                for spin in host.spins {
                    let sequence = try journal.recover(spin)
                    if sequence > 0 { logger.info("recovered \(spin.name) at sequence \(sequence)") }
                    let name = spin.name
                    subscriptions.append(spin.observe { journal.record(spin: name, $0) })
                }
            } catch {
                throw LoopServerError.cannotRecover(reason: "\(error)")
            }
        }
        // Counted from the first event: observe before the Spins start.
        let metrics = context.metrics
        subscriptions += host.spins.map { spin in
            let name = spin.name
            return spin.observe { _ in metrics.eventApplied(spin: name) }
        }
        host.start()
        let address: SocketAddress
        do {
            address = try socketServer.start()
        } catch {
            for subscription in subscriptions { subscription.cancel() }
            host.stop()
            throw LoopServerError.cannotListen(host: configuration.host, port: configuration.port, reason: "\(error)")
        }
        running.withLock { $0 = Running(socketServer: socketServer, subscriptions: subscriptions) }
        return address.port
    }

    /// Graceful shutdown: stops accepting, closes streams with 1001, lets the requests in
    /// flight finish, closes what is left after `shutdownGraceSeconds`, then stops every
    /// Spin.
    public func shutdown() async {
        guard let running = running.withLock({ running -> Running? in
            defer { running = nil }
            return running
        }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            running.socketServer.shutdown(deadline: .seconds(configuration.limits.shutdownGraceSeconds)) {
                continuation.resume()
            }
        }
        host.stop()
        for subscription in running.subscriptions { subscription.cancel() }
        journal?.close()
    }

    /// Open client connections now.
    public var openConnections: Int { context.metrics.openConnections }
}

public enum LoopServerError: Error, CustomStringConvertible {
    case cannotListen(host: String, port: Int, reason: String)
    case cannotRecover(reason: String)
    case alreadyStarted

    public var description: String {
        switch self {
        case .cannotListen(let host, let port, let reason): "cannot serve on \(host):\(port): \(reason)"
        case .cannotRecover(let reason): "cannot recover the stored Spins: \(reason)"
        case .alreadyStarted: "the server is already started"
        }
    }
}
