import Dispatch
import Synchronization
import SpinConcurrency

/// A TCP listener (IPv4 or IPv6, plain or TLS) whose accepted connections run on the
/// process's event loops (`EventLoop`: one thread each, waiting in `epoll_wait` for many
/// connections) — no thread per connection.
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
/// listener pauses, backs off from 10 ms doubling to 1 s, and resumes. With
/// `maxConnections` open it pauses too, and resumes as soon as one closes: the new
/// connections wait in the kernel's backlog (`ServerConfiguration.backlog`) instead of
/// being accepted and reset, so a burst is served late rather than refused.
/// `onConnectionLimit` hears each such pause.
///
/// `@unchecked Sendable`: listener state is confined to `acceptQueue`; the connection
/// registry and the statistics are behind mutexes.
package final class SocketServer: @unchecked Sendable {
    /// Counters since `start()`, for metrics and tests.
    package struct Statistics: Sendable, Hashable {
        /// Connections handed to a handler.
        package var accepted = 0
        /// Times accepting paused because `maxConnections` connections were open (new
        /// ones waited in the backlog until one closed).
        package var limitReached = 0
        /// Times accepting paused on EMFILE/ENFILE/ENOBUFS/ENOMEM.
        package var acceptBackoffs = 0
    }

    private enum State { case idle, listening, draining, stopped }

    package let configuration: ServerConfiguration
    private let tlsConfiguration: TLSConfiguration?
    private let handlerFactory: @Sendable (Connection) -> ConnectionHandler
    private let onConnectionLimit: @Sendable (_ openConnections: Int) -> Void
    private let acceptQueue = DispatchQueue(label: "spin.net.accept")
    private let loops: [EventLoop]
    /// `configuration.limits`, shared by every connection.
    private let limits: SharedConnectionLimits
    private let registry = Protected<[ObjectIdentifier: Connection]>([:])
    private let counters = Protected(Statistics())
    private let nextID = Atomic<UInt64>(1)

    // Confined to `acceptQueue`.
    private var state = State.idle
    private var listenFD: Int32 = -1
    private var acceptSource: DispatchSourceRead?
    /// Whether `acceptSource` is suspended now; it is while backing off or at the limit.
    private var acceptSuspended = false
    private var backingOff = false
    private var atConnectionLimit = false
    private var backoff = SocketServer.initialBackoff
    private var nextLoop = 0
    private var tlsContext: TLSContext?
    private var completions: [@Sendable () -> Void] = []

    private static let initialBackoff = Duration.milliseconds(10)
    private static let maximumBackoff = Duration.seconds(1)

    /// Test hook: replaces `accept4` (to simulate EMFILE). Set before `start()`.
    nonisolated(unsafe) var acceptOverride: (@Sendable (Int32) -> Syscall.AcceptResult)?

    /// A server that is not listening yet. `handlerFactory` is called on each new
    /// connection's event loop, once, before `didOpen`. `onConnectionLimit` is called on the
    /// accept queue each time `maxConnections` connections are open and accepting
    /// pauses (to log and count it; it must not block).
    package init(
        configuration: ServerConfiguration,
        tls: TLSConfiguration? = nil,
        onConnectionLimit: @escaping @Sendable (_ openConnections: Int) -> Void = { _ in },
        handlerFactory: @escaping @Sendable (Connection) -> ConnectionHandler
    ) {
        self.configuration = configuration
        self.tlsConfiguration = tls
        self.onConnectionLimit = onConnectionLimit
        self.handlerFactory = handlerFactory
        self.loops = EventLoop.loops(count: configuration.eventLoopCount)
        self.limits = SharedConnectionLimits(configuration.limits)
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
            source.setCancelHandler { [weak self] in
                self?.takeLastConnections(from: fd)
                Syscall.close(fd: fd)
                self?.listenerClosed = true
                self?.finishIfDrained()
            }
            acceptSource = source
            listenerClosed = false
            state = .listening
            source.resume()
            return bound
        }
    }

    /// Open connections (accepted and not yet closed).
    package var connectionCount: Int { registry.withLock { $0.count } }

    /// Counters since `start()`.
    package var statistics: Statistics { counters.withLock { $0 } }

    /// Graceful shutdown: stop accepting at once (taking in, as the listener closes, the
    /// connections the kernel already completed), call `shutdownRequested` on every
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
            acceptQueue.asyncAfter(deadline: .now() + DispatchTimeInterval(deadline)) { [self] in
                guard state == .draining else { return }
                let remaining = registry.withLock { Array($0.values) }
                for connection in remaining { connection.forceClose(.serverShutdown) }
            }
            finishIfDrained()
        }
    }

    // MARK: - Accepting (on acceptQueue)

    private func acceptReady() {
        for _ in 0..<64 {
            guard state == .listening, !atConnectionLimit else { return }
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

    /// The listening descriptor is closed (or was never opened): a drained shutdown may
    /// finish.
    private var listenerClosed = true

    /// Just before a graceful shutdown closes the listener: connections the kernel
    /// completed and nobody accepted yet would be reset by the close, request and all.
    /// They are taken in and asked to finish like the others (answered with
    /// `Connection: close`).
    private func takeLastConnections(from fd: Int32) {
        guard state == .draining else { return }
        while !atConnectionLimit {
            switch acceptOverride?(fd) ?? Syscall.accept(listener: fd) {
            case .accepted(let accepted, let peer): admit(fd: accepted, peer: peer).requestShutdown()
            case .transient: continue
            case .wouldBlock, .outOfResources, .failed: return
            }
        }
    }

    /// Starts a connection. Accepting never runs past `maxConnections` (it pauses at
    /// the limit), so every accepted descriptor is served.
    @discardableResult
    private func admit(fd: Int32, peer: SocketAddress?) -> Connection {
        let loop = loops[nextLoop]
        nextLoop = (nextLoop + 1) % loops.count
        let connection = Connection(
            fd: fd, remoteAddress: peer, id: nextID.wrappingAdd(1, ordering: .relaxed).oldValue,
            loop: loop, limits: limits, tls: tlsContext,
            onClosed: { [weak self] connection in self?.connectionClosed(connection) })
        let open = registry.withLock { registry -> Int in
            registry[ObjectIdentifier(connection)] = connection
            return registry.count
        }
        counters.withLock { $0.accepted += 1 }
        let factory = handlerFactory
        loop.enqueue { connection.start(handlerFactory: factory) }
        if open >= configuration.maxConnections {
            atConnectionLimit = true
            counters.withLock { $0.limitReached += 1 }
            updateAcceptSource()
            onConnectionLimit(open)
        }
        return connection
    }

    /// EMFILE and friends: stop watching the listener (it would fire in a loop), wait,
    /// and try again; the backoff doubles up to a second and resets on success.
    private func pauseAccepting() {
        guard !backingOff else { return }
        backingOff = true
        updateAcceptSource()
        let delay = backoff
        backoff = min(backoff * 2, Self.maximumBackoff)
        acceptQueue.asyncAfter(deadline: .now() + DispatchTimeInterval(delay)) { [weak self] in
            guard let self else { return }
            self.backingOff = false
            self.updateAcceptSource()
        }
    }

    /// Suspends or resumes the listener's source so that it watches the backlog exactly
    /// while listening, not backing off and under the connection limit. A resumed
    /// source fires again for connections already waiting.
    private func updateAcceptSource() {
        guard let source = acceptSource else { return }
        let watch = state == .listening && !backingOff && !atConnectionLimit
        if watch, acceptSuspended {
            acceptSuspended = false
            source.resume()
        } else if !watch, !acceptSuspended {
            acceptSuspended = true
            source.suspend()
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
        acceptQueue.async { [self] in
            if atConnectionLimit, connectionCount < configuration.maxConnections {
                atConnectionLimit = false
                updateAcceptSource()
            }
            finishIfDrained()
        }
    }

    private func finishIfDrained() {
        guard state == .draining, listenerClosed, registry.withLock({ $0.isEmpty }) else { return }
        state = .stopped
        let done = completions
        completions = []
        for completion in done { completion() }
    }
}
