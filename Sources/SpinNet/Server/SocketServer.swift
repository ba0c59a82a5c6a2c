import Dispatch
import Synchronization

/// A TCP listener (IPv4 or IPv6, plain or TLS) whose accepted connections run on a
/// small pool of serial Dispatch queues, each driving many connections through
/// Dispatch read/write/timer sources — no thread per connection.
///
/// ```swift
/// let server = SocketServer(configuration: .init(host: "::1", port: 0), tls: nil) { connection in
///     MyHTTPHandler(connection)                          // a ConnectionHandler
/// }
/// let address = try server.start()                        // the kernel's port when 0
/// server.shutdown(deadline: .seconds(10)) { print("all closed") }
/// ```
///
/// Accepting runs on its own serial queue. Out of descriptors (EMFILE/ENFILE) the
/// listener pauses, backs off from 10 ms doubling to 1 s, and resumes; a connection
/// beyond `maxConnections` is accepted and closed at once.
///
/// `@unchecked Sendable`: listener state is confined to `acceptQueue`; the connection
/// registry and the statistics are behind mutexes.
package final class SocketServer: @unchecked Sendable {
    /// Counters since `start()`, for metrics and tests.
    package struct Statistics: Sendable, Hashable {
        /// Connections handed to a handler.
        package var accepted = 0
        /// Connections closed at accept because `maxConnections` were open.
        package var rejectedOverLimit = 0
        /// Times accepting paused on EMFILE/ENFILE/ENOBUFS/ENOMEM.
        package var acceptBackoffs = 0
    }

    private enum State { case idle, listening, draining, stopped }

    package let configuration: ServerConfiguration
    private let tlsConfiguration: TLSConfiguration?
    private let handlerFactory: @Sendable (Connection) -> ConnectionHandler
    private let acceptQueue = DispatchQueue(label: "spin.net.accept")
    private let loops: [EventLoop]
    private let registry = Locked<[ObjectIdentifier: Connection]>([:])
    private let counters = Locked(Statistics())
    private let nextID = Atomic<UInt64>(1)

    // Confined to `acceptQueue`.
    private var state = State.idle
    private var listenFD: Int32 = -1
    private var acceptSource: DispatchSourceRead?
    private var acceptSuspended = false
    private var backoff = SocketServer.initialBackoff
    private var nextLoop = 0
    private var tlsContext: TLSContext?
    private var completions: [@Sendable () -> Void] = []

    private static let initialBackoff = Duration.milliseconds(10)
    private static let maximumBackoff = Duration.seconds(1)

    /// Test hook: replaces `accept4` (to simulate EMFILE). Set before `start()`.
    nonisolated(unsafe) var acceptOverride: (@Sendable (Int32) -> Syscall.AcceptResult)?

    /// A server that is not listening yet. `handlerFactory` is called on each new
    /// connection's queue, once, before `didOpen`.
    package init(
        configuration: ServerConfiguration,
        tls: TLSConfiguration? = nil,
        handlerFactory: @escaping @Sendable (Connection) -> ConnectionHandler
    ) {
        self.configuration = configuration
        self.tlsConfiguration = tls
        self.handlerFactory = handlerFactory
        self.loops = (0..<configuration.eventQueueCount).map {
            EventLoop(label: "spin.net.loop.\($0)", bufferSize: configuration.limits.readBufferSize)
        }
    }

    deinit {
        // Not shut down: at least release the listening descriptor.
        stopListening()
    }

    /// Loads TLS (if configured), binds, listens and starts accepting. Returns the
    /// bound address, with the kernel's port when the configured port is 0. Throws
    /// `SocketError` (bad address, bind/listen failure with errno, started twice) or
    /// `TLSError` (certificate or key unreadable, invalid or mismatched).
    @discardableResult
    package func start() throws -> SocketAddress {
        try acceptQueue.sync {
            guard state == .idle else { throw SocketError.alreadyStarted }
            Syscall.ignoreSIGPIPE()
            let address = try SocketAddress(host: configuration.host, port: configuration.port)
            if let tlsConfiguration {
                tlsContext = try TLSContext(configuration: tlsConfiguration)
            }
            let (fd, bound) = try Syscall.makeListener(address: address, backlog: configuration.backlog)
            listenFD = fd
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: acceptQueue)
            source.setEventHandler { [weak self] in self?.acceptReady() }
            source.setCancelHandler { Syscall.close(fd: fd) }
            acceptSource = source
            state = .listening
            source.resume()
            return bound
        }
    }

    /// Open connections (accepted and not yet closed).
    package var connectionCount: Int { registry.withLock { $0.count } }

    /// Counters since `start()`.
    package var statistics: Statistics { counters.withLock { $0 } }

    /// Graceful shutdown: stop accepting at once, call `shutdownRequested` on every
    /// open connection, force-close (`CloseReason.serverShutdown`) those still open
    /// after `deadline`, and call `completion` (on an internal queue) once every
    /// connection has closed. Safe to call more than once and before `start()`.
    package func shutdown(deadline: Duration, completion: @escaping @Sendable () -> Void) {
        acceptQueue.async { [self] in
            switch state {
            case .idle, .stopped:
                state = .stopped
                completion()
                return
            case .draining:
                completions.append(completion)
                return
            case .listening:
                break
            }
            state = .draining
            completions.append(completion)
            stopListening()
            let open = registry.withLock { Array($0.values) }
            for connection in open { connection.requestShutdown() }
            acceptQueue.asyncAfter(deadline: .now() + Self.dispatchInterval(deadline)) { [self] in
                guard state == .draining else { return }
                let remaining = registry.withLock { Array($0.values) }
                for connection in remaining { connection.forceClose(.serverShutdown) }
            }
            finishIfDrained()
        }
    }

    // MARK: - Accepting (on acceptQueue)

    private func acceptReady() {
        guard state == .listening else { return }
        for _ in 0..<64 {
            let result = acceptOverride?(listenFD) ?? Syscall.accept(listener: listenFD)
            switch result {
            case .accepted(let fd, let peer):
                backoff = Self.initialBackoff
                admit(fd: fd, peer: peer)
            case .wouldBlock:
                return
            case .transient:
                continue
            case .outOfResources, .failed:
                counters.withLock { $0.acceptBackoffs += 1 }
                pauseAccepting()
                return
            }
        }
    }

    private func admit(fd: Int32, peer: SocketAddress?) {
        let loop = loops[nextLoop]
        nextLoop = (nextLoop + 1) % loops.count
        let connection = Connection(
            fd: fd, remoteAddress: peer, id: nextID.wrappingAdd(1, ordering: .relaxed).oldValue,
            loop: loop, limits: configuration.limits, tls: tlsContext,
            onClosed: { [weak self] connection in self?.connectionClosed(connection) })
        let admitted = registry.withLock { registry -> Bool in
            guard registry.count < configuration.maxConnections else { return false }
            registry[ObjectIdentifier(connection)] = connection
            return true
        }
        guard admitted else {
            // Over the limit: the peer sees an immediate close; the open connections
            // keep their descriptors and buffers.
            Syscall.close(fd: fd)
            counters.withLock { $0.rejectedOverLimit += 1 }
            return
        }
        counters.withLock { $0.accepted += 1 }
        let factory = handlerFactory
        loop.queue.async { connection.start(handlerFactory: factory) }
    }

    /// EMFILE and friends: stop watching the listener (it would fire in a loop), wait,
    /// and try again; the backoff doubles up to a second and resets on success.
    private func pauseAccepting() {
        guard let source = acceptSource, !acceptSuspended else { return }
        acceptSuspended = true
        source.suspend()
        let delay = backoff
        backoff = min(backoff * 2, Self.maximumBackoff)
        acceptQueue.asyncAfter(deadline: .now() + Self.dispatchInterval(delay)) { [weak self] in
            guard let self, self.state == .listening, self.acceptSuspended else { return }
            self.acceptSuspended = false
            self.acceptSource?.resume()
        }
    }

    private func stopListening() {
        guard let source = acceptSource else { return }
        if acceptSuspended {
            acceptSuspended = false
            source.resume()
        }
        source.cancel()  // the cancel handler closes the listening descriptor
        acceptSource = nil
    }

    private func connectionClosed(_ connection: Connection) {
        registry.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) }
        acceptQueue.async { [self] in finishIfDrained() }
    }

    private func finishIfDrained() {
        guard state == .draining, registry.withLock({ $0.isEmpty }) else { return }
        state = .stopped
        let done = completions
        completions = []
        for completion in done { completion() }
    }

    static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(Int(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)))
    }
}
