/// A request method: a token, case-sensitive (RFC 9110 §9.1).
package struct HTTPMethod: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    package var rawValue: String
    package init(rawValue: String) { self.rawValue = rawValue }
    package var description: String { rawValue }

    package static let get = HTTPMethod(rawValue: "GET")
    package static let head = HTTPMethod(rawValue: "HEAD")
    package static let post = HTTPMethod(rawValue: "POST")
    package static let put = HTTPMethod(rawValue: "PUT")
    package static let patch = HTTPMethod(rawValue: "PATCH")
    package static let delete = HTTPMethod(rawValue: "DELETE")
    package static let options = HTTPMethod(rawValue: "OPTIONS")
    package static let connect = HTTPMethod(rawValue: "CONNECT")
    package static let trace = HTTPMethod(rawValue: "TRACE")
}

/// `HTTP/major.minor` (RFC 9112 §2.3). The parser only returns 1.0 and 1.1.
package struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    package var major: Int
    package var minor: Int
    package init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    package static let http1_0 = HTTPVersion(major: 1, minor: 0)
    package static let http1_1 = HTTPVersion(major: 1, minor: 1)
    package var description: String { "HTTP/\(major).\(minor)" }
}

/// A complete request as the parser returns it: head, aggregated body (at most
/// `Limits.maxBodySize` bytes) and trailers.
package struct HTTPRequest: Sendable, Equatable {
    package var method: HTTPMethod
    package var target: HTTPRequestTarget
    package var version: HTTPVersion
    package var headers: HTTPHeaders
    /// The content, de-chunked when it came chunked.
    package var body: [UInt8]
    /// Fields of the chunked trailer section (RFC 9112 §7.1.2); empty otherwise. Kept apart
    /// from `headers`: RFC 9110 §6.5.1 forbids merging them blindly.
    package var trailers: HTTPHeaders
    /// The host the request is for: the authority of an absolute-form target
    /// (RFC 9112 §3.2.2: the Host header is then ignored), else the `Host` header, else "".
    package var host: String
    /// Whether the connection stays open after the response (RFC 9112 §9.3): HTTP/1.1
    /// unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    package var keepAlive: Bool
    /// `Expect: 100-continue` on an HTTP/1.1 request (RFC 9110 §10.1.1; ignored in 1.0).
    package var expectsContinue: Bool
    /// HTTP/1.1 with an `Upgrade` field and `upgrade` in `Connection` (RFC 9110 §7.8).
    /// The WebSocket handshake validates the rest; see `HTTPRequestParser.acceptUpgrade()`.
    package var isUpgradeCandidate: Bool

    package init(
        method: HTTPMethod, target: HTTPRequestTarget, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = [:], body: [UInt8] = [], trailers: HTTPHeaders = [:],
        host: String = "", keepAlive: Bool = true, expectsContinue: Bool = false,
        isUpgradeCandidate: Bool = false
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.trailers = trailers
        self.host = host
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
        self.isUpgradeCandidate = isUpgradeCandidate
    }
}
