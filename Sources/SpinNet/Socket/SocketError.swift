#if canImport(Glibc)
import Glibc
#endif

/// Errors of the socket layer. Each carries the `errno` of the syscall that failed
/// (captured at the call, as FlyingFox's `SocketError.makeFailed`), so a log line says
/// what the kernel said. None of them reaches an HTTP client: a failure to listen stops
/// start-up; a failure on a connection closes it.
package enum SocketError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The host is not a numeric IPv4/IPv6 address, or the port is out of range.
    case invalidAddress(String)
    /// `socket(2)`, `setsockopt(2)`, `bind(2)`, `listen(2)`, `getsockname(2)`, `fcntl(2)`
    /// failed while creating the listener.
    case listenFailed(call: String, errno: Int32)
    /// `start()` was called twice, or after `shutdown`.
    case alreadyStarted
    /// `recv(2)` or `send(2)` failed on a connection with an errno other than
    /// EAGAIN/EINTR/ECONNRESET/EPIPE (those are expected and handled).
    case ioFailed(call: String, errno: Int32)

    package var description: String {
        switch self {
        case .invalidAddress(let text):
            return "invalid address \(text): a numeric IPv4/IPv6 host and a port in 0...65535 are required"
        case .listenFailed(let call, let code):
            return "\(call) failed: \(Self.describe(errno: code)) (errno \(code))"
        case .alreadyStarted:
            return "the server was already started"
        case .ioFailed(let call, let code):
            return "\(call) failed: \(Self.describe(errno: code)) (errno \(code))"
        }
    }

    /// The C library's text for an errno.
    static func describe(errno code: Int32) -> String {
        String(cString: strerror(code))
    }
}
