#if canImport(Glibc)
import Dispatch
import Glibc
import Synchronization

extension Connection {
    /// Opens a plain TCP connection to `host:port` without blocking: the connect is
    /// non-blocking and its writability waited for by this connection's event loop, so
    /// no thread waits for it. Once connected, the new connection runs on
    /// the same loop as this one (its callbacks and this connection's never run at the
    /// same time, so a relay between them needs no lock), with this connection's limits:
    /// `handler` makes its handler, which hears `didOpen` first as on accepted ones.
    ///
    /// A numeric host is resolved at once; a name is resolved by `getaddrinfo` on a
    /// global queue (a short blocking call per connect, never held for the connection's
    /// life). Addresses are tried in order until one accepts within what is left of
    /// `timeout`. `failed` hears why no connection was made (`ETIMEDOUT` when the time
    /// ran out). Both run on this connection's loop; exactly one of them runs, unless
    /// the returned attempt is cancelled first.
    ///
    /// The new connection is not counted by any server: whoever made it closes it.
    package func connectOutgoing(
        host: String, port: Int, timeout: Duration,
        handler: @escaping @Sendable (Connection) -> ConnectionHandler,
        failed: @escaping @Sendable (ClientSocketError) -> Void
    ) -> OutgoingConnectAttempt {
        let attempt = OutgoingConnectAttempt(host: host, port: port, loop: loop, limits: sharedLimits,
                                             handler: handler, failed: failed)
        attempt.start(timeout: timeout)
        return attempt
    }
}

/// One `Connection.connectOutgoing` in progress. `cancel()` stops it (the socket being
/// connected is closed, neither callback runs).
///
/// `@unchecked Sendable`: its state is confined to the loop's thread.
package final class OutgoingConnectAttempt: @unchecked Sendable, LoopWatcher {
    private let host: String
    private let port: Int
    private let loop: EventLoop
    private let limits: SharedConnectionLimits
    private let handler: @Sendable (Connection) -> ConnectionHandler
    private let failed: @Sendable (ClientSocketError) -> Void

    // Confined to the loop's thread.
    private var finished = false
    private var addresses: [ResolvedAddress] = []
    private var fd: Int32 = -1
    /// The loop's watch on the socket being connected.
    private var registration: LoopRegistration?
    private var lastErrno = ECONNREFUSED

    private static let nextID = Atomic<UInt64>(1 << 48)   // apart from a server's accepted ids

    fileprivate init(host: String, port: Int, loop: EventLoop, limits: SharedConnectionLimits,
                     handler: @escaping @Sendable (Connection) -> ConnectionHandler,
                     failed: @escaping @Sendable (ClientSocketError) -> Void) {
        self.host = host
        self.port = port
        self.loop = loop
        self.limits = limits
        self.handler = handler
        self.failed = failed
    }

    /// Stops the attempt: neither callback runs any more. Safe from any thread, after
    /// the attempt finished too.
    package func cancel() {
        loop.execute { self.finish(nil) }
    }

    fileprivate func start(timeout: Duration) {
        let loop = self.loop
        DispatchQueue.global().asyncAfter(deadline: .now() + DispatchTimeInterval(timeout)) {
            loop.execute {
                guard !self.finished else { return }
                self.finish(.connectFailed(host: self.host, port: self.port, errno: ETIMEDOUT))
            }
        }
        if let numeric = ResolvedAddress.resolve(host: host, port: port, numericOnly: true) {
            loop.execute { self.resolved(.success(numeric)) }
            return
        }
        let (host, port) = (self.host, self.port)
        DispatchQueue.global().async {
            let result = ResolvedAddress.lookUp(host: host, port: port)
            self.loop.execute { self.resolved(result) }
        }
    }

    private func resolved(_ result: Result<[ResolvedAddress], ClientSocketError>) {
        guard !finished else { return }
        switch result {
        case .failure(let error):
            finish(error)
        case .success(let list):
            addresses = list
            tryNext()
        }
    }

    /// Starts a non-blocking connect to the next address, or fails when none is left.
    private func tryNext() {
        while !addresses.isEmpty {
            let address = addresses.removeFirst()
            let socketFD = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                                  | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socketFD >= 0 else { lastErrno = errno; continue }
            let outcome = address.storage.withUnsafeBytes { raw in
                Glibc.connect(socketFD, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), address.length)
            }
            if outcome == 0 {
                fd = socketFD
                connected()
                return
            }
            guard errno == EINPROGRESS else {
                lastErrno = errno
                _ = Glibc.close(socketFD)
                continue
            }
            fd = socketFD
            let registration = loop.watch(fd: socketFD, watcher: self)
            self.registration = registration
            if let code = loop.setInterest(registration, reading: false, writing: true) {
                stopWatching(closing: true)
                lastErrno = code
                continue
            }
            return
        }
        finish(.connectFailed(host: host, port: port, errno: lastErrno))
    }

    func loopReadable() {}

    /// The socket being connected became writable: connected, or refused.
    func loopWritable() {
        guard !finished, fd >= 0 else { return }
        var failure: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size) != 0 { failure = errno }
        stopWatching(closing: failure != 0)
        if failure == 0 {
            connected()
        } else {
            lastErrno = failure
            tryNext()
        }
    }

    /// Stops watching the socket; closes it when `closing` (a failed attempt), else
    /// keeps it for the connection.
    private func stopWatching(closing: Bool) {
        let socketFD = fd
        if closing { fd = -1 }
        if let registration {
            loop.unwatch(registration)
            self.registration = nil
        }
        if closing, socketFD >= 0 { _ = Glibc.close(socketFD) }
    }

    private func connected() {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let connection = Connection(fd: fd, remoteAddress: nil, id: Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue,
                                    loop: loop, limits: limits, tls: nil, onClosed: { _ in })
        fd = -1
        finished = true
        connection.start(handlerFactory: handler)
    }

    /// Ends the attempt: `error` is reported unless nil (cancelled).
    private func finish(_ error: ClientSocketError?) {
        guard !finished else { return }
        finished = true
        addresses = []
        stopWatching(closing: true)
        if let error { failed(error) }
    }
}

/// One address `getaddrinfo` returned, copied out of its list.
private struct ResolvedAddress: Sendable {
    var family: Int32
    var storage: [UInt8]
    var length: socklen_t

    /// Every address of `host` (a name or a numeric address, an IPv6 one with or
    /// without brackets); nil when `numericOnly` and the host is a name, or nothing resolves.
    static func resolve(host: String, port: Int, numericOnly: Bool) -> [ResolvedAddress]? {
        try? lookUp(host: host, port: port, numericOnly: numericOnly).get()
    }

    static func lookUp(host: String, port: Int, numericOnly: Bool = false) -> Result<[ResolvedAddress], ClientSocketError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        if numericOnly { hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }
        var list: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let code = getaddrinfo(bare, String(port), &hints, &list)
        guard code == 0, let first = list else { return .failure(.unresolvable(host: host, code: code)) }
        defer { freeaddrinfo(list) }
        var addresses: [ResolvedAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            guard let address = info.pointee.ai_addr else { continue }
            let length = info.pointee.ai_addrlen
            let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(length)))
            addresses.append(ResolvedAddress(family: info.pointee.ai_family, storage: bytes, length: length))
        }
        return addresses.isEmpty ? .failure(.unresolvable(host: host, code: EAI_NONAME)) : .success(addresses)
    }
}
#endif
