import SpinWire

/// The request a node that does not own a Spin sends on to the owner's advertised URL
/// (`ClusterRouting.proxy`): the client's method, target, end-to-end headers and body,
/// on a connection to the owner (`OwnerRelay`: kept alive between requests). Pure: it
/// makes the bytes; a socket sends them.
///
/// - Hop-by-hop fields (RFC 9110 §7.6.1: `Connection` and the fields it names,
///   `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`)
///   are not forwarded; the body goes with a `Content-Length` (the parser already read
///   it whole); `Host` stays the client's (the owner makes the same `Host` and
///   `Origin` checks as the node the client reached, whose configuration it shares;
///   a request without one names the owner).
/// - A WebSocket request keeps `Upgrade: websocket` with `Connection: Upgrade`, so the
///   owner's 101 and the frames after it can be relayed byte for byte both ways.
///   Other requests carry no `Connection` field: HTTP/1.1's default, a connection the
///   owner keeps alive for the next proxied request (RFC 9112 §9.3).
/// - `Via: 1.1 <node>` (RFC 9110 §7.6.3) and `X-Spin-Forwarded-By: <node>` say which
///   node forwarded it. A node that gets a forwarded request for a Spin it does not
///   serve answers 503 instead of forwarding again (`ClusterRouting.decide`'s
///   `forwarded`), so two nodes with different views never bounce a request between them.
package struct ProxiedRequest: Sendable, Equatable {
    /// The header that marks a request one node forwarded to another.
    package static let forwardedByHeader = "X-Spin-Forwarded-By"

    /// Where to connect.
    package var owner: AdvertiseURL
    /// The request head and body, as sent.
    package var bytes: [UInt8]

    /// The forwarded form of `request`, sent by `node` to `owner`.
    package init(_ request: HTTPRequest, to owner: AdvertiseURL, from node: String) {
        let webSocket = request.isUpgradeCandidate && request.headers.containsToken("websocket", in: "Upgrade")
        let named = Self.namedInConnection(request.headers.values(for: "Connection"))
        let dropped = Self.hopByHop.union(["host", "content-length", "via", Self.forwardedByHeader.lowercased()])
        var head = "\(request.method.rawValue) \(Self.originForm(request.target)) HTTP/1.1\r\n"
        head += "Host: \(request.headers["Host"] ?? owner.hostHeader)\r\n"
        for field in request.headers {
            let name = field.name.lowercased()
            guard !dropped.contains(name), !named.contains(name) else { continue }
            head += "\(field.name): \(field.value)\r\n"
        }
        let via = request.headers["Via"].map { "\($0), " } ?? ""
        head += "Via: \(via)1.1 \(node)\r\n"
        head += "\(Self.forwardedByHeader): \(node)\r\n"
        if webSocket {
            head += "Connection: Upgrade\r\nUpgrade: websocket\r\n"
        }
        if !request.body.isEmpty || request.method.rawValue == "POST" {
            head += "Content-Length: \(request.body.count)\r\n"
        }
        head += "\r\n"
        self.owner = owner
        bytes = Array(head.utf8) + request.body
    }

    /// The hop-by-hop fields of RFC 9110 §7.6.1 (lower case), which a relay never passes
    /// on, in either direction; with those `Connection` names (`namedInConnection`).
    static let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "te", "trailer",
                                        "transfer-encoding", "upgrade"]

    /// The field names the `Connection` values list (lower case): hop-by-hop too.
    static func namedInConnection<Values: Sequence<String>>(_ values: Values) -> Set<String> {
        Set(values.flatMap { $0.split(separator: ",") }.map { $0.trimmingWhitespace().lowercased() })
    }

    /// `/path?query` as received, also when the client sent the absolute form.
    private static func originForm(_ target: HTTPRequestTarget) -> String {
        target.query.map { "\(target.path)?\($0)" } ?? target.path
    }
}
