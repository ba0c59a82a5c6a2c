/// The request-target of the request line (RFC 9112 §3.2), split into its parts.
/// `path` and `query` stay percent-encoded exactly as received; `pathSegments` and
/// `queryItems` are the decoded views a router wants.
package struct HTTPRequestTarget: Sendable, Hashable {
    /// The four forms of RFC 9112 §3.2.
    package enum Form: Sendable, Hashable {
        /// `/path?query` (§3.2.1), the normal form.
        case origin
        /// `http://host/path?query` (§3.2.2); the host comes from the target.
        case absolute
        /// `host:port` (§3.2.3), CONNECT only; the parser rejects CONNECT, so never returned.
        case authority
        /// `*` (§3.2.4), OPTIONS only.
        case asterisk
    }

    /// One `name=value` member of the query, percent-decoded, `+` read as a space
    /// (application/x-www-form-urlencoded, as browsers and curl --data-urlencode send).
    package struct QueryItem: Sendable, Hashable {
        package var name: String
        package var value: String?
        package init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// The target exactly as received.
    package var raw: String
    package var form: Form
    /// `http` or `https` for absolute-form, nil otherwise.
    package var scheme: String?
    /// The authority of an absolute-form target (`host[:port]`), nil otherwise.
    package var authority: String?
    /// The percent-encoded path, always starting with `/` (asterisk-form: `*`).
    package var path: String
    /// The raw query after `?`, nil when there is no `?`.
    package var query: String?

    package init(raw: String, form: Form, scheme: String? = nil, authority: String? = nil, path: String, query: String?) {
        self.raw = raw
        self.form = form
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.query = query
    }

    /// An origin-form target from `/path?query` (for tests and the server's own requests).
    package init(origin: String) {
        let parts = origin.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        self.init(raw: origin, form: .origin, path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : nil)
    }

    /// The path's segments, percent-decoded: `/v1/spins/a%20b` → `["v1", "spins", "a b"]`.
    /// Decoding after splitting keeps `%2F` inside its segment.
    package var pathSegments: [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map {
            Self.percentDecoded($0.utf8, plusIsSpace: false)
        }
    }

    /// The decoded query members in order; `a=1&b&c=` → a: "1", b: nil, c: "".
    package var queryItems: [QueryItem] {
        guard let query else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { member in
            if let equals = member.firstIndex(of: "=") {
                return QueryItem(
                    name: Self.percentDecoded(member[..<equals].utf8, plusIsSpace: true),
                    value: Self.percentDecoded(member[member.index(after: equals)...].utf8, plusIsSpace: true))
            }
            return QueryItem(name: Self.percentDecoded(member.utf8, plusIsSpace: true), value: nil)
        }
    }

    /// The first decoded value of query member `name`; nil when it has none (`?b`).
    package func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    /// The first decoded value of query member `name`, "" for a member without `=`
    /// (`?wait` asks as `?wait=` does); nil only when the member is absent.
    package func queryParameter(_ name: String) -> String? {
        queryItems.first { $0.name == name }.map { $0.value ?? "" }
    }

    /// Percent-decodes `bytes` (RFC 3986 §2.1). A `%` not followed by two hex digits is
    /// kept literally; the result is read as UTF-8 with replacement of invalid sequences.
    static func percentDecoded(_ bytes: some Collection<UInt8>, plusIsSpace: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                let first = bytes.index(after: index)
                if first != bytes.endIndex {
                    let second = bytes.index(after: first)
                    if second != bytes.endIndex,
                       let high = HTTPSyntax.hexValue(bytes[first]), let low = HTTPSyntax.hexValue(bytes[second]) {
                        output.append(high << 4 | low)
                        index = bytes.index(after: second)
                        continue
                    }
                }
                output.append(byte)
            } else if plusIsSpace && byte == UInt8(ascii: "+") {
                output.append(HTTPSyntax.sp)
            } else {
                output.append(byte)
            }
            index = bytes.index(after: index)
        }
        return String(decoding: output, as: UTF8.self)
    }
}

extension HTTPRequestTarget {
    /// Parses the request-target bytes of a request line for `method` (RFC 9112 §3.2).
    static func parse(_ bytes: HTTPBytes, method: HTTPMethod) throws(HTTPParserError) -> HTTPRequestTarget {
        guard let first = bytes.first else { throw .invalidRequestLine }
        for byte in bytes where !HTTPSyntax.isTarget(byte) { throw .invalidTarget }
        let raw = String(decoding: bytes, as: UTF8.self)

        // RFC 9112 §3.2.1 origin-form.
        if first == UInt8(ascii: "/") {
            guard let question = bytes.firstIndex(of: UInt8(ascii: "?")) else {
                return HTTPRequestTarget(raw: raw, form: .origin, path: raw, query: nil)
            }
            return HTTPRequestTarget(
                raw: raw, form: .origin, path: String(decoding: bytes[..<question], as: UTF8.self),
                query: String(decoding: bytes[(question + 1)...], as: UTF8.self))
        }
        // RFC 9112 §3.2.4 asterisk-form, OPTIONS only.
        if bytes.count == 1 && first == UInt8(ascii: "*") {
            guard method == .options else { throw .asteriskFormWithoutOptions }
            return HTTPRequestTarget(raw: raw, form: .asterisk, path: "*", query: nil)
        }
        // RFC 9112 §3.2.2 absolute-form: `scheme "://" authority path-abempty [ "?" query ]`.
        if let target = try parseAbsolute(bytes, raw: raw) { return target }
        // RFC 9112 §3.2.3 authority-form: only meaningful with CONNECT (rejected earlier).
        if HTTPHostSyntax.isValidAuthority(bytes, requirePort: true) { throw .authorityFormWithoutConnect }
        throw .invalidTarget
    }

    private static func parseAbsolute(_ bytes: HTTPBytes, raw: String) throws(HTTPParserError) -> HTTPRequestTarget? {
        guard let colon = bytes.firstIndex(of: HTTPSyntax.colon), colon > bytes.startIndex else { return nil }
        let scheme = bytes[bytes.startIndex..<colon]
        let isHTTP = HTTPSyntax.equalsIgnoringCase(scheme, "http")
        let isHTTPS = HTTPSyntax.equalsIgnoringCase(scheme, "https")
        let afterColon = bytes[(colon + 1)...]
        guard afterColon.starts(with: "//".utf8) else { return nil }
        // Only http and https name an origin this server can be (RFC 9110 §4.2).
        guard isHTTP || isHTTPS else { throw .invalidTarget }
        let authorityStart = afterColon.startIndex + 2
        let authorityEnd = bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? bytes.endIndex
        let authority = bytes[authorityStart..<authorityEnd]
        // RFC 9110 §4.2.4: userinfo in an http(s) URI is an error; an empty host is invalid.
        guard !authority.contains(UInt8(ascii: "@")), HTTPHostSyntax.isValidAuthority(authority, requirePort: false),
              authority.first != HTTPSyntax.colon, !authority.isEmpty else { throw .invalidTarget }
        let rest = bytes[authorityEnd...]
        let pathEnd = rest.firstIndex(of: UInt8(ascii: "?")) ?? rest.endIndex
        let path = rest[rest.startIndex..<pathEnd]
        let query = pathEnd == rest.endIndex ? nil : String(decoding: rest[(pathEnd + 1)...], as: UTF8.self)
        return HTTPRequestTarget(
            raw: raw, form: .absolute, scheme: isHTTP ? "http" : "https",
            authority: String(decoding: authority, as: UTF8.self),
            path: path.isEmpty ? "/" : String(decoding: path, as: UTF8.self), query: query)
    }
}

/// `uri-host [ ":" port ]` (RFC 9110 §7.2 Host, RFC 3986 §3.2.2–3.2.3).
enum HTTPHostSyntax {
    /// Whether `bytes` is `host [":" port]`; an empty value is valid (RFC 9110 §7.2 lets a
    /// client send an empty Host). With `requirePort` (authority-form) the port is required.
    static func isValidAuthority(_ bytes: HTTPBytes, requirePort: Bool) -> Bool {
        if bytes.isEmpty { return !requirePort }
        var hostEnd = bytes.endIndex
        if bytes.first == UInt8(ascii: "[") {
            // IP-literal: "[" IPv6address / IPvFuture "]" (checked loosely: hex, ":", ".").
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > bytes.startIndex + 1 else { return false }
            for byte in bytes[(bytes.startIndex + 1)..<close] {
                guard HTTPSyntax.hexValue(byte) != nil || byte == HTTPSyntax.colon || byte == UInt8(ascii: ".")
                        || byte == UInt8(ascii: "v") || byte == UInt8(ascii: "V") else { return false }
            }
            hostEnd = close + 1
            guard hostEnd == bytes.endIndex || bytes[hostEnd] == HTTPSyntax.colon else { return false }
        } else {
            hostEnd = bytes.firstIndex(of: HTTPSyntax.colon) ?? bytes.endIndex
            for byte in bytes[bytes.startIndex..<hostEnd] where !HTTPSyntax.isRegName(byte) { return false }
        }
        guard hostEnd != bytes.endIndex else { return !requirePort }
        let port = bytes[(hostEnd + 1)...]
        if requirePort && port.isEmpty { return false }
        return port.count <= 5 && port.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
