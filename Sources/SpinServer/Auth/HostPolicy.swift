/// Which `Host` a request may name when the server has no tokens (docs/PROTOCOL.md,
/// Security): the listen address, `localhost` and its subdomains, the loopback
/// literals (`127.x.y.z`, `[::1]`), and the names of `listen.allowedHosts`, on any
/// port. Everything else is answered 421 `misdirected_request`.
///
/// Why: without tokens, anyone who can reach the server may use it, and a web page can
/// reach a server on the visitor's loopback through DNS rebinding (its own name, moved
/// to 127.0.0.1). The browser still sends that name as `Host`, so refusing names that
/// are not ours closes the hole. With tokens the attacker's page has no token, so the
/// check is off.
///
/// A server that listens on all interfaces (`0.0.0.0`, `::`) has no single address to
/// accept: without tokens it serves only loopback names and `allowedHosts`, so the
/// names clients use to reach it must be listed there. `"*"` in `allowedHosts` turns the
/// check off (behind a proxy that checks `Host` itself).
///
/// A request without `Host` (HTTP/1.0; HTTP/1.1 requires one and the parser answers 400)
/// passes: browsers always send one, so it cannot be a rebound page.
package struct HostPolicy: Sendable, Equatable {
    /// Lowercased names and literals, without brackets or port.
    package let names: Set<String>
    /// False when tokens are configured or `allowedHosts` holds `*`.
    package let enforced: Bool

    /// Every `Host` passes (tests of other concerns, servers with tokens).
    package static let any = HostPolicy(names: [], enforced: false)

    private init(names: Set<String>, enforced: Bool) {
        self.names = names
        self.enforced = enforced
    }

    /// The policy of a server listening on `listenHost` (a numeric address) with
    /// `allowedHosts` names, enforced only when `tokensConfigured` is false.
    package init(listenHost: String, allowedHosts: [String], tokensConfigured: Bool) {
        var names = Set(allowedHosts.map { Self.normalized($0) })
        let listen = Self.normalized(listenHost)
        if listen != "0.0.0.0" && listen != "::" { names.insert(listen) }
        self.init(names: names, enforced: !tokensConfigured && !names.contains("*"))
    }

    /// Whether a request with this `Host` value (nil: none) is served.
    package func allows(host header: String?) -> Bool {
        guard enforced, let header else { return true }
        guard let name = Self.hostName(of: header) else { return false }
        // The listen address (what local clients name) first: one hash look-up.
        return names.contains(name) || Self.isLoopback(name)
    }

    /// The host of a `Host` value (`uri-host [ ":" port ]`, RFC 9110 §7.2), ASCII
    /// letters lowercased (a host name is ASCII: IDNA names travel as punycode),
    /// brackets and a trailing dot removed; nil when it is not of that shape. Read on the
    /// bytes (every request asks): one copy, one String.
    package static func hostName(of header: String) -> String? {
        var bytes = Array(header.utf8)
        for index in bytes.indices where bytes[index] >= 0x41 && bytes[index] <= 0x5A { bytes[index] |= 0x20 }
        let (colon, open, close) = (UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"))
        var host = bytes.startIndex..<bytes.endIndex
        var rest = bytes.endIndex..<bytes.endIndex
        if bytes.first == open {
            guard let end = bytes.firstIndex(of: close) else { return nil }
            host = 1..<end
            rest = (end + 1)..<bytes.endIndex
        } else if let separator = bytes.firstIndex(of: colon) {
            host = 0..<separator
            rest = separator..<bytes.endIndex
        }
        if !rest.isEmpty {
            guard bytes[rest.lowerBound] == colon,
                  bytes[(rest.lowerBound + 1)...].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        }
        var end = host.upperBound
        if end > host.lowerBound, bytes[end - 1] == UInt8(ascii: ".") { end -= 1 }
        return end > host.lowerBound ? String(decoding: bytes[host.lowerBound..<end], as: UTF8.self) : nil
    }

    /// `localhost`, `*.localhost` (RFC 6761 §6.3: always loopback, never delegated),
    /// `127.0.0.0/8` and `::1`.
    static func isLoopback(_ name: String) -> Bool {
        if name == "localhost" || name.hasSuffix(".localhost") || name == "::1" { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127"
            && octets.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCIIDigit) && Int($0)! <= 255 }
    }

    /// A configured name or address as `hostName(of:)` makes it.
    private static func normalized(_ name: String) -> String {
        hostName(of: name) ?? String(decoding: name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
