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
///   nodes forwarded it, in order (`X-Spin-Forwarded-By: a, b` after two hops). A node
///   sends a request on at most `ClusterRouting.maxHops` times in all (`hops`): past
///   that it serves it or waits until it can, so that nodes whose views differ for a
///   moment never pass a request around.
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
        var head: [UInt8] = []
        head.reserveCapacity(256 + request.body.count)
        head.appendHeadLine("\(request.method.rawValue) \(Self.originForm(request.target)) HTTP/1.1")
        head.appendHeadField("Host", request.headers["Host"] ?? owner.hostHeader)
        for field in request.headers {
            let name = field.name.lowercased()
            guard !Self.notForwarded.contains(name), !named.contains(name) else { continue }
            head.appendHeadField(field.name, field.value)
        }
        head.appendHeadField("Via", request.headers["Via"].map { "\($0), 1.1 \(node)" } ?? "1.1 \(node)")
        head.appendHeadField(Self.forwardedByHeader, (Self.forwarders(of: request) + [node]).joined(separator: ", "))
        if webSocket {
            head.appendHeadField("Connection", "Upgrade")
            head.appendHeadField("Upgrade", "websocket")
        }
        if !request.body.isEmpty || request.method.rawValue == "POST" {
            head.appendHeadField("Content-Length", String(request.body.count))
        }
        head.appendHeadLine("")
        head.append(contentsOf: request.body)
        self.owner = owner
        bytes = head
    }

    /// The nodes that sent `request` on so far, first to last (`X-Spin-Forwarded-By`).
    package static func forwarders(of request: HTTPRequest) -> [String] {
        request.headers.values(for: forwardedByHeader).flatMap { $0.split(separator: ",") }
            .map { String($0.trimmingWhitespace()) }.filter { !$0.isEmpty }
    }

    /// How many times `request` was sent on from node to node already.
    package static func hops(of request: HTTPRequest) -> Int {
        request.headers[forwardedByHeader] == nil ? 0 : max(1, forwarders(of: request).count)
    }

    /// The client's fields a proxied request never carries: the hop-by-hop ones, and
    /// those it sets itself.
    private static let notForwarded = hopByHop.union(["host", "content-length", "via", forwardedByHeader.lowercased()])

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
