#if canImport(Glibc)
import Glibc

/// Every syscall SpinNet makes, on Glibc. Nothing else in the package touches a socket
/// (the storage files are SpinStorage's). Functions return plain values or throw
/// `SocketError` with the errno captured at the failing call.
enum Syscall {
    /// The outcome of a non-blocking `recv`/`send`.
    enum IOResult: Equatable {
        /// This many bytes moved (for `recv`, 0 means the peer closed its write side).
        case bytes(Int)
        /// EAGAIN / EWOULDBLOCK: try again when the source fires.
        case wouldBlock
        /// ECONNRESET / EPIPE / ENOTCONN / ETIMEDOUT: the peer is gone. Expected, not a bug.
        case reset(errno: Int32)
        /// Any other errno.
        case failed(errno: Int32)
    }

    /// The outcome of `accept4`.
    enum AcceptResult: Equatable {
        case accepted(fd: Int32, peer: SocketAddress?)
        case wouldBlock
        /// EMFILE / ENFILE / ENOBUFS / ENOMEM: out of descriptors or memory; the listener
        /// backs off and tries again later.
        case outOfResources(errno: Int32)
        /// ECONNABORTED, EPROTO, EPERM...: this one connection failed; keep accepting.
        case transient(errno: Int32)
        case failed(errno: Int32)
    }

    /// SIGPIPE would kill the process when a peer resets a connection during a write
    /// that does not pass MSG_NOSIGNAL (OpenSSL's own socket BIO, a library...). We send
    /// with MSG_NOSIGNAL ourselves; this is the process-wide belt to those braces.
    static func ignoreSIGPIPE() {
        _ = signal(SIGPIPE, SIG_IGN)
    }

    /// A non-blocking, close-on-exec listening socket bound to `address`, with
    /// SO_REUSEADDR (restart without waiting out TIME_WAIT) and IPV6_V6ONLY for IPv6
    /// (so `::` and `0.0.0.0` can be bound side by side). Returns the fd and the bound
    /// address (with the kernel's port when `address.port` is 0).
    static func makeListener(address: SocketAddress, backlog: Int32) throws(SocketError) -> (Int32, SocketAddress) {
        let domain = address.family == .ipv4 ? AF_INET : AF_INET6
        let fd = socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .listenFailed(call: "socket", errno: errno) }
        var ok = false
        defer { if !ok { _ = Glibc.close(fd) } }

        var one: Int32 = 1
        guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .listenFailed(call: "setsockopt(SO_REUSEADDR)", errno: errno)
        }
        if address.family == .ipv6 {
            guard setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw .listenFailed(call: "setsockopt(IPV6_V6ONLY)", errno: errno)
            }
        }
        var storage = try sockaddrStorage(for: address)
        let bound = withUnsafePointer(to: &storage.0) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, storage.1) }
        }
        guard bound == 0 else { throw .listenFailed(call: "bind", errno: errno) }
        guard listen(fd, backlog) == 0 else { throw .listenFailed(call: "listen", errno: errno) }

        var local = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0, let boundAddress = socketAddress(from: local) else {
            throw .listenFailed(call: "getsockname", errno: errno)
        }
        ok = true
        return (fd, boundAddress)
    }

    /// One non-blocking `accept`; the new fd is made non-blocking and close-on-exec
    /// (Glibc's Swift module does not export `accept4`, a _GNU_SOURCE call), with
    /// TCP_NODELAY (responses are written whole; Nagle would only add latency).
    static func accept(listener: Int32) -> AcceptResult {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.accept(listener, $0, &length)
            }
        }
        if fd >= 0 {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return .accepted(fd: fd, peer: socketAddress(from: storage))
        }
        let code = errno
        switch code {
        case EAGAIN, EWOULDBLOCK, EINTR: return .wouldBlock
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .outOfResources(errno: code)
        case ECONNABORTED, EPROTO, EPERM, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH,
             EOPNOTSUPP, ENETUNREACH, ENETDOWN:
            return .transient(errno: code)
        default: return .failed(errno: code)
        }
    }

    /// One non-blocking `recv` into `buffer`.
    static func receive(fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n >= 0 { return .bytes(n) }
            let code = errno
            if code == EINTR { continue }
            return classify(code)
        }
    }

    /// One non-blocking `send` with MSG_NOSIGNAL: a reset peer gives EPIPE, not SIGPIPE.
    static func send(fd: Int32, bytes: UnsafeRawBufferPointer) -> IOResult {
        while true {
            let n = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .bytes(n) }
            let code = errno
            if code == EINTR { continue }
            return classify(code)
        }
    }

    /// `shutdown(fd, SHUT_WR)`: sends FIN after what is queued; the read side stays open.
    static func shutdownWrite(fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes a descriptor; EINTR is not retried (Linux closes the fd anyway).
    static func close(fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// SO_LINGER 0 then close: the kernel sends RST instead of FIN and frees the socket
    /// at once. Used for connections refused over the connection limit.
    static func abort(fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        _ = Glibc.close(fd)
    }

    static func isIPv4(_ host: String) -> Bool {
        var addr = in_addr()
        return inet_pton(AF_INET, host, &addr) == 1
    }

    static func isIPv6(_ host: String) -> Bool {
        var addr = in6_addr()
        return inet_pton(AF_INET6, host, &addr) == 1
    }

    private static func classify(_ code: Int32) -> IOResult {
        switch code {
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        case ECONNRESET, EPIPE, ENOTCONN, ETIMEDOUT, ECONNABORTED: return .reset(errno: code)
        default: return .failed(errno: code)
        }
    }

    private static func sockaddrStorage(for address: SocketAddress) throws(SocketError) -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        switch address.family {
        case .ipv4:
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(UInt16(address.port).bigEndian)
            guard inet_pton(AF_INET, address.host, &sin.sin_addr) == 1 else {
                throw .invalidAddress(address.description)
            }
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: sin) { raw.copyMemory(from: $0) }
            }
            return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
        case .ipv6:
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = in_port_t(UInt16(address.port).bigEndian)
            guard inet_pton(AF_INET6, address.host, &sin6.sin6_addr) == 1 else {
                throw .invalidAddress(address.description)
            }
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: sin6) { raw.copyMemory(from: $0) }
            }
            return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
    }

    private static func socketAddress(from storage: sockaddr_storage) -> SocketAddress? {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: &storage) { raw -> SocketAddress? in
                var sin = raw.loadUnaligned(as: sockaddr_in.self)
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                guard inet_ntop(AF_INET, &sin.sin_addr, &text, socklen_t(text.count)) != nil else { return nil }
                return SocketAddress(uncheckedHost: text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) },
                                     port: Int(UInt16(bigEndian: sin.sin_port)), family: .ipv4)
            }
        case AF_INET6:
            return withUnsafeBytes(of: &storage) { raw -> SocketAddress? in
                var sin6 = raw.loadUnaligned(as: sockaddr_in6.self)
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                guard inet_ntop(AF_INET6, &sin6.sin6_addr, &text, socklen_t(text.count)) != nil else { return nil }
                return SocketAddress(uncheckedHost: text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) },
                                     port: Int(UInt16(bigEndian: sin6.sin6_port)), family: .ipv6)
            }
        default:
            return nil
        }
    }
}
#endif

#if canImport(Glibc)
extension Syscall {
    /// nil when `path` opens for reading, else the errno of open(2).
    static func unreadable(path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        _ = Glibc.close(fd)
        return nil
    }
}
#endif
