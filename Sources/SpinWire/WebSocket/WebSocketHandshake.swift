import COpenSSL

/// The server side of the opening handshake (RFC 6455 §4.2), from plain values: the
/// request's method, HTTP version and header fields (`HTTPHeaders`, as the HTTP layer
/// parsed them).
package enum WebSocketHandshake {
    /// RFC 6455 §1.3: the GUID appended to the key before hashing.
    package static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// What the server agreed to: the 101 response headers plus the values the session needs.
    package struct Accepted: Sendable {
        /// Headers of the `101 Switching Protocols` response, in order.
        package var headers: HTTPHeaders
        /// The `Sec-WebSocket-Accept` value.
        package var acceptValue: String
        /// The chosen subprotocol, if any.
        package var subprotocol: String?
        /// The agreed permessage-deflate parameters, or nil if not in use: pass this to
        /// `WebSocketSession(deflate:)`.
        package var deflate: PerMessageDeflateParameters?
    }

    /// Validates an upgrade request and computes the response.
    ///
    /// - Parameters:
    ///   - headers: every header field in request order; names are case-insensitive and
    ///     repeated list headers are combined (RFC 9110 §5.3).
    ///   - supportedSubprotocols: the server's subprotocols; the first of the *client's*
    ///     list that is supported is chosen (RFC 6455 §4.2.2 /subprotocol/). None offered or
    ///     none supported: no `Sec-WebSocket-Protocol` in the response.
    ///   - deflate: the server's permessage-deflate policy, nil to never compress.
    package static func accept(
        method: String,
        httpVersion: (major: Int, minor: Int),
        headers: HTTPHeaders,
        supportedSubprotocols: [String] = [],
        deflate: PerMessageDeflateConfiguration? = PerMessageDeflateConfiguration()
    ) throws(WebSocketHandshakeError) -> Accepted {
        // RFC 6455 §4.2.1 (1): "An HTTP/1.1 or higher GET request".
        guard method == "GET" else { throw .methodNotGet }
        guard httpVersion.major > 1 || (httpVersion.major == 1 && httpVersion.minor >= 1) else {
            throw .httpVersionTooLow
        }
        func values(_ name: String) -> [String] { headers.values(for: name) }
        func tokens(_ name: String) -> [String] {
            values(name).flatMap { $0.split(separator: ",") }
                .map { $0.trimmingWhitespace() }
                .filter { !$0.isEmpty }
        }
        // RFC 6455 §4.2.1 (3): Upgrade contains "websocket", case-insensitively.
        guard tokens("upgrade").contains(where: { $0.equalsIgnoringASCIICase("websocket") }) else {
            throw .missingUpgradeWebSocket
        }
        // RFC 6455 §4.2.1 (4): Connection contains the token "Upgrade", case-insensitively.
        guard tokens("connection").contains(where: { $0.equalsIgnoringASCIICase("upgrade") }) else {
            throw .missingConnectionUpgrade
        }
        // RFC 6455 §4.2.1 (5): the key is base64 of a 16-byte nonce; a repeated header is
        // as bad as a malformed one.
        let keys = values("sec-websocket-key")
        guard keys.count == 1 else { throw .invalidKey }
        let key = keys[0].trimmingWhitespace()
        guard let nonce = WebSocketBase64.decode(key), nonce.count == 16 else { throw .invalidKey }
        // RFC 6455 §4.2.1 (6), §4.4: only version 13; otherwise 426 naming 13.
        let versions = tokens("sec-websocket-version")
        guard versions == ["13"] else { throw .unsupportedVersion }

        let acceptValue = Self.acceptValue(forKey: key)
        var response: HTTPHeaders = [
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Accept": acceptValue,
        ]
        // RFC 6455 §4.2.2 (5.4): at most one subprotocol, one the client asked for.
        let offered = tokens("sec-websocket-protocol")
        let subprotocol = offered.first { supportedSubprotocols.contains($0) }
        if let subprotocol {
            response.append(name: "Sec-WebSocket-Protocol", value: subprotocol)
        }
        // RFC 7692 §5: accept the first acceptable permessage-deflate offer, if any.
        var parameters: PerMessageDeflateParameters?
        if let deflate {
            parameters = PerMessageDeflateNegotiation.negotiate(
                offers: values("sec-websocket-extensions"), configuration: deflate)
            if let parameters {
                response.append(name: "Sec-WebSocket-Extensions", value: parameters.responseHeaderValue)
            }
        }
        return Accepted(headers: response, acceptValue: acceptValue, subprotocol: subprotocol,
                        deflate: parameters)
    }

    /// RFC 6455 §4.2.2 (5.4): base64(SHA-1(key + GUID)), with the key as sent (trimmed).
    package static func acceptValue(forKey key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        input.withUnsafeBufferPointer { inputBuffer in
            digest.withUnsafeMutableBufferPointer { digestBuffer in
                _ = SHA1(inputBuffer.baseAddress, inputBuffer.count, digestBuffer.baseAddress)
            }
        }
        return WebSocketBase64.encode(digest)
    }
}

extension Substring {
    /// Without leading and trailing SP/HTAB (RFC 9110 §5.6.3 OWS).
    package func trimmingWhitespace() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}

extension String {
    /// Without leading and trailing SP/HTAB (RFC 9110 §5.6.3 OWS).
    package func trimmingWhitespace() -> String {
        self[...].trimmingWhitespace()
    }
}
