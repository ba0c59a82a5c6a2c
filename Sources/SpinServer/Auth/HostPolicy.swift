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

    /// The host of a `Host` value (`uri-host [ ":" port ]`, RFC 9110 §7.2), lowercased,
    /// brackets and a trailing dot removed; nil when it is not of that shape.
    package static func hostName(of header: String) -> String? {
        let bytes = header.utf8
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return unicodeHostName(of: header) }
        // ASCII (every Host a client sends in practice): the same steps on bytes, with no
        // lowercased copy nor Character comparisons, on every request.
        var host = bytes[...], port = bytes[bytes.endIndex...]
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = bytes[bytes.index(after: bytes.startIndex)..<close]
            port = bytes[bytes.index(after: close)...]
        } else if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            host = bytes[..<colon]
            port = bytes[colon...]
        }
        if !port.isEmpty {
            guard port.first == UInt8(ascii: ":"),
                  port.dropFirst().allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        }
        if host.last == UInt8(ascii: ".") { host = host.dropLast() }
        guard !host.isEmpty else { return nil }
        return String(unsafeUninitializedCapacity: host.count) { buffer in
            for (offset, byte) in host.enumerated() {
                buffer[offset] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            }
            return host.count
        }
    }

    /// `hostName(of:)` of a value that is not ASCII, by Unicode's lowercase and characters.
    static func unicodeHostName(of header: String) -> String? {
        var text = Substring(header.lowercased())
        let host: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            text = text[text.index(after: close)...]
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            text = text[colon...]
        } else {
            host = text
            text = ""
        }
        if !text.isEmpty {
            let port = text.dropFirst()
            guard text.first == ":", port.allSatisfy(\.isASCIIDigit) else { return nil }
        }
        let name = host.hasSuffix(".") ? host.dropLast() : host
        return name.isEmpty ? nil : String(name)
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
        hostName(of: name) ?? name.lowercased()
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
