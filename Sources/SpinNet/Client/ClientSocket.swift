#if canImport(Glibc)
import Glibc
import SpinConcurrency

/// Why an outgoing connection failed or ended abnormally. Each carries the `errno` of the
/// failing call where there is one.
package enum ClientSocketError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `getaddrinfo(3)` found no address for the host (its `EAI_*` code).
    case unresolvable(host: String, code: Int32)
    /// No address of the host accepted a connection within the timeout (the errno of the
    /// last attempt; `ETIMEDOUT` when the time ran out).
    case connectFailed(host: String, port: Int, errno: Int32)
    /// Nothing arrived for the idle timeout (`SO_RCVTIMEO`).
    case timedOut
    /// `send(2)` or `recv(2)` failed (a reset peer included).
    case ioFailed(call: String, errno: Int32)

    package var description: String {
        switch self {
        case .unresolvable(let host, let code):
            return "cannot resolve \(host): \(String(cString: gai_strerror(code)))"
        case .connectFailed(let host, let port, let code):
            return "cannot connect to \(host):\(port): \(String(cString: strerror(code))) (errno \(code))"
        case .timedOut:
            return "the connection was silent for longer than its idle timeout"
        case .ioFailed(let call, let code):
            return "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

/// One outgoing TCP connection with blocking reads and writes, for clients (SpinClient's
/// state stream). The server side never uses it: it is non-blocking on Dispatch.
///
/// A blocked `receive` returns (with no bytes) once any thread calls `shutdown()`, which
/// is how a cancelled client stops waiting. The descriptor is closed when the value is
/// released, never while a call may still be using it.
package final class ClientSocket: Sendable {
    private let fd: Int32
    /// Serializes writers (a reply to a ping and a close from a cancelling task).
    private let writing = Protected(())

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit { _ = Glibc.close(fd) }

    /// Resolves `host` (a name or a numeric address) and connects to the first address
    /// that answers within `timeoutSeconds`. Reads that wait longer than
    /// `idleTimeoutSeconds` (if set) throw `ClientSocketError.timedOut`.
    package static func connect(host: String, port: Int, timeoutSeconds: Int = 10,
                                idleTimeoutSeconds: Int? = nil) throws(ClientSocketError) -> ClientSocket {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let code = getaddrinfo(bare, String(port), &hints, &list)
        guard code == 0, let first = list else { throw .unresolvable(host: host, code: code) }
        defer { freeaddrinfo(list) }
        var lastErrno = ECONNREFUSED
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { lastErrno = errno; continue }
            let outcome = connect(fd: fd, address: info.pointee.ai_addr, length: info.pointee.ai_addrlen,
                                  timeoutSeconds: timeoutSeconds)
            guard outcome == 0 else {
                lastErrno = outcome
                _ = Glibc.close(fd)
                continue
            }
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if let idleTimeoutSeconds {
                var limit = timeval(tv_sec: idleTimeoutSeconds, tv_usec: 0)
                _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            }
            return ClientSocket(fd: fd)
        }
        throw .connectFailed(host: host, port: port, errno: lastErrno)
    }

    /// A connect that gives up after `timeoutSeconds`: non-blocking, then `poll(2)`, then
    /// back to blocking. Returns 0 or the errno.
    private static func connect(fd: Int32, address: UnsafeMutablePointer<sockaddr>?, length: socklen_t,
                                timeoutSeconds: Int) -> Int32 {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        if Glibc.connect(fd, address, length) == 0 { return 0 }
        guard errno == EINPROGRESS else { return errno }
        var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&poller, 1, Int32(clamping: timeoutSeconds * 1000))
        guard ready > 0 else { return ready == 0 ? ETIMEDOUT : errno }
        var failure: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size) == 0 else { return errno }
        return failure
    }

    /// Writes every byte (MSG_NOSIGNAL: a reset peer is an error, not SIGPIPE).
    package func send(_ bytes: [UInt8]) throws(ClientSocketError) {
        let result: Int32? = writing.withLock { _ in
            bytes.withUnsafeBytes { raw -> Int32? in
                var offset = 0
                while offset < raw.count {
                    let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                    if n < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    offset += n
                }
                return nil
            }
        }
        if let result { throw .ioFailed(call: "send", errno: result) }
    }

    /// The next bytes that arrive, at most `maxBytes`; empty once the peer closed (or
    /// `shutdown()` was called). Blocks the calling thread: call it off the cooperative pool.
    package func receive(maxBytes: Int = 64 << 10) throws(ClientSocketError) -> [UInt8] {
        while true {
            var code: Int32 = 0
            let bytes = [UInt8](unsafeUninitializedCapacity: maxBytes) { buffer, count in
                let n = recv(fd, buffer.baseAddress, maxBytes, 0)
                count = max(n, 0)
                if n < 0 { code = errno }
            }
            if code == 0 { return bytes }
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: throw .timedOut
            case let code: throw .ioFailed(call: "recv", errno: code)
            }
        }
    }

    /// Ends both directions: a blocked `receive` returns empty, further sends fail. Safe
    /// from any thread, any number of times.
    package func shutdown() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
#endif
