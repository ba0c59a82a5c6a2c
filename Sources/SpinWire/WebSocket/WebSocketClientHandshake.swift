/// The client side of the opening handshake (RFC 6455 §4.1), for tests and tools that
/// talk to the server through a `WebSocketSession(role: .client)`.
package struct WebSocketClientHandshake: Sendable {
    /// Why the server's response does not complete the handshake (RFC 6455 §4.1: the client
    /// MUST _Fail the WebSocket Connection_).
    package enum Failure: Error, Hashable, Sendable {
        /// The status was not 101 (the server refused, e.g. 400, 426).
        case unexpectedStatus(Int)
        /// RFC 6455 §4.1 (2)/(3): `Upgrade: websocket` and `Connection: Upgrade` are required.
        case missingUpgradeHeaders
        /// RFC 6455 §4.1 (4): `Sec-WebSocket-Accept` does not match the key.
        case acceptMismatch
        /// RFC 6455 §4.1 (6): a subprotocol the client did not ask for.
        case unexpectedSubprotocol(String)
        /// RFC 6455 §4.1 (5), RFC 7692 §5: an extension or parameter not offered or invalid.
        case unexpectedExtension(String)
    }

    /// The `Sec-WebSocket-Key`: base64 of 16 random bytes (RFC 6455 §4.1).
    package let key: String
    package let subprotocols: [String]
    package let offersDeflate: Bool

    package init(key: String? = nil, subprotocols: [String] = [], offersDeflate: Bool = false) {
        self.key = key ?? WebSocketBase64.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        self.subprotocols = subprotocols
        self.offersDeflate = offersDeflate
    }

    /// The header fields of the upgrade request (after `GET <path> HTTP/1.1`).
    package func requestHeaders(host: String) -> HTTPHeaders {
        var headers: HTTPHeaders = [
            "Host": host, "Upgrade": "websocket",
            "Connection": "Upgrade", "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13",
        ]
        if !subprotocols.isEmpty {
            headers.append(name: "Sec-WebSocket-Protocol", value: subprotocols.joined(separator: ", "))
        }
        if offersDeflate {
            headers.append(name: "Sec-WebSocket-Extensions", value: "permessage-deflate; client_max_window_bits")
        }
        return headers
    }

    /// What the server's 101 response agreed to.
    package struct Agreement: Hashable, Sendable {
        package var subprotocol: String?
        /// Pass to `WebSocketSession(role: .client, deflate:)`.
        package var deflate: PerMessageDeflateParameters?
    }

    /// Validates the server's response.
    package func validate(status: Int, headers: HTTPHeaders) throws(Failure) -> Agreement {
        guard status == 101 else { throw .unexpectedStatus(status) }
        func values(_ name: String) -> [String] { headers.values(for: name) }
        func hasToken(_ name: String, _ token: String) -> Bool {
            values(name).flatMap { $0.split(separator: ",") }
                .contains { $0.trimmingCharacters(in: " \t").equalsIgnoringASCIICase(token) }
        }
        guard hasToken("upgrade", "websocket"), hasToken("connection", "upgrade") else {
            throw .missingUpgradeHeaders
        }
        guard values("sec-websocket-accept").map({ $0.trimmingCharacters(in: " \t") })
                == [WebSocketHandshake.acceptValue(forKey: key)] else {
            throw .acceptMismatch
        }
        var agreement = Agreement()
        if let chosen = values("sec-websocket-protocol").first?.trimmingCharacters(in: " \t") {
            guard subprotocols.contains(chosen) else { throw .unexpectedSubprotocol(chosen) }
            agreement.subprotocol = chosen
        }
        for element in WebSocketExtensionHeader.parse(values("sec-websocket-extensions")) {
            guard offersDeflate, element.name.equalsIgnoringASCIICase(PerMessageDeflateNegotiation.extensionName),
                  agreement.deflate == nil else {
                throw .unexpectedExtension(element.name)
            }
            var parameters = PerMessageDeflateParameters()
            for (name, value) in element.parameters {
                switch (name.lowercased(), value) {
                case ("server_no_context_takeover", nil): parameters.serverNoContextTakeover = true
                case ("client_no_context_takeover", nil): parameters.clientNoContextTakeover = true
                case ("server_max_window_bits", let value?):
                    guard let bits = PerMessageDeflateNegotiation.windowBits(value) else { throw .unexpectedExtension(name) }
                    parameters.serverMaxWindowBits = bits
                case ("client_max_window_bits", let value?):
                    guard let bits = PerMessageDeflateNegotiation.windowBits(value) else { throw .unexpectedExtension(name) }
                    parameters.clientMaxWindowBits = bits
                default:
                    throw .unexpectedExtension(name)
                }
            }
            agreement.deflate = parameters
        }
        return agreement
    }
}

extension StringProtocol {
    /// Without leading and trailing characters from `set`.
    fileprivate func trimmingCharacters(in set: String) -> String {
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
