/// An IPv4 or IPv6 socket address: what the listener binds to and what a connection
/// reports as its peer. A value type; the sockaddr bytes are kept so the syscall layer
/// (`Socket+Glibc.swift`) can hand them to the kernel as they are.
package struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family, without any sockaddr detail.
    package enum Family: Sendable, Hashable {
        case ipv4
        case ipv6
    }

    /// The numeric host (`127.0.0.1`, `::1`), never a name: SpinNet does no DNS.
    package let host: String
    /// The port in host byte order.
    package let port: Int
    /// IPv4 or IPv6.
    package let family: Family

    /// An address from a numeric host and a port. Throws `SocketError.invalidAddress`
    /// when the host is neither a dotted IPv4 nor an IPv6 literal, or the port is not
    /// in 0...65535 (0 asks the kernel for a free port at bind time).
    package init(host: String, port: Int) throws(SocketError) {
        guard (0...65_535).contains(port) else {
            throw .invalidAddress("\(host):\(port)")
        }
        var bare = host
        if bare.hasPrefix("["), bare.hasSuffix("]") {
            bare = String(bare.dropFirst().dropLast())
        }
        if Self.isIPv4(bare) {
            family = .ipv4
        } else if Self.isIPv6(bare) {
            family = .ipv6
        } else {
            throw .invalidAddress("\(host):\(port)")
        }
        self.host = bare
        self.port = port
    }

    /// Made by the syscall layer from a kernel-filled sockaddr.
    init(uncheckedHost host: String, port: Int, family: Family) {
        self.host = host
        self.port = port
        self.family = family
    }

    /// `127.0.0.1:8080` or `[::1]:8080`.
    package var description: String {
        switch family {
        case .ipv4: return "\(host):\(port)"
        case .ipv6: return "[\(host)]:\(port)"
        }
    }
}

extension SocketAddress {
    static func isIPv4(_ host: String) -> Bool { Syscall.isIPv4(host) }
    static func isIPv6(_ host: String) -> Bool { Syscall.isIPv6(host) }
}
