import Testing
@testable import SpinWire

@Suite struct WebSocketHandshakeTests {
    /// The RFC 6455 §1.3 request from the fixture, as (method, version, headers).
    static func rfcRequest() -> (method: String, headers: [(name: String, value: String)]) {
        let lines = WebSocketFixture.text("rfc6455-handshake-request.txt").split(separator: "\n").filter { !$0.hasPrefix("#") }
        let method = String(lines[0].split(separator: " ")[0])
        let headers = lines.dropFirst().map { line -> (name: String, value: String) in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), String(line[line.index(after: colon)...].drop(while: { $0 == " " })))
        }
        return (method, headers)
    }

    func makeHeaders(key: String = "dGhlIHNhbXBsZSBub25jZQ==", version: String = "13",
                     extra: [(name: String, value: String)] = []) -> [(name: String, value: String)] {
        [("Host", "localhost"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
         ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", version)] + extra
    }

    func accept(method: String = "GET", version: (Int, Int) = (1, 1), headers: [(name: String, value: String)],
                subprotocols: [String] = [], deflate: PerMessageDeflateConfiguration? = PerMessageDeflateConfiguration())
        throws(WebSocketHandshakeError) -> WebSocketHandshake.Accepted {
        try WebSocketHandshake.accept(method: method, httpVersion: (major: version.0, minor: version.1),
                                      headers: HTTPHeaders(headers.map { ($0.name, $0.value) }), supportedSubprotocols: subprotocols, deflate: deflate)
    }

    @Test func rfcExampleKey_GivesTheRFCAcceptValue() {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func rfcExampleRequest_IsAccepted_With101Headers_AndFirstSupportedSubprotocol() throws {
        let request = Self.rfcRequest()
        let accepted = try WebSocketHandshake.accept(method: request.method, httpVersion: (major: 1, minor: 1),
                                                     headers: HTTPHeaders(request.headers.map { ($0.name, $0.value) }),
                                                     supportedSubprotocols: ["superchat", "chat"])
        #expect(accepted.acceptValue == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        // The client's order decides: "chat" comes first in the request.
        #expect(accepted.subprotocol == "chat")
        #expect(accepted.headers.map { "\($0.name): \($0.value)" } == [
            "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "Sec-WebSocket-Protocol: chat",
        ])
        #expect(accepted.deflate == nil)
    }

    @Test func noSupportedSubprotocol_OmitsTheHeader() throws {
        let accepted = try accept(headers: makeHeaders(extra: [("Sec-WebSocket-Protocol", "a, b")]), subprotocols: ["c"])
        #expect(accepted.subprotocol == nil)
        #expect(!accepted.headers.contains { $0.name == "Sec-WebSocket-Protocol" })
    }

    @Test func headerNamesAndTokens_AreCaseInsensitive_AndListsAreSplit() throws {
        let headers: [(name: String, value: String)] = [
            ("upgrade", "WebSocket"), ("CONNECTION", "keep-alive, UPGRADE"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="), ("sec-websocket-version", "13"),
        ]
        #expect(try accept(headers: headers).acceptValue == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func connectionHeaderSplitOverTwoLines_IsCombined() throws {
        var headers = makeHeaders().filter { $0.name != "Connection" }
        headers += [("Connection", "keep-alive"), ("Connection", "Upgrade")]
        #expect(throws: Never.self) { try accept(headers: headers) }
    }

    @Test func postRequest_Is400() {
        #expect(throws: WebSocketHandshakeError.methodNotGet) { try accept(method: "POST", headers: makeHeaders()) }
        #expect(WebSocketHandshakeError.methodNotGet.httpStatus == 400)
    }

    @Test func http10_Is400() {
        #expect(throws: WebSocketHandshakeError.httpVersionTooLow) { try accept(version: (1, 0), headers: makeHeaders()) }
    }

    @Test func missingOrWrongUpgrade_Is400() {
        #expect(throws: WebSocketHandshakeError.missingUpgradeWebSocket) {
            try accept(headers: makeHeaders().filter { $0.name != "Upgrade" })
        }
        #expect(throws: WebSocketHandshakeError.missingUpgradeWebSocket) {
            try accept(headers: makeHeaders().filter { $0.name != "Upgrade" } + [("Upgrade", "h2c")])
        }
    }

    @Test func connectionWithoutUpgradeToken_Is400() {
        #expect(throws: WebSocketHandshakeError.missingConnectionUpgrade) {
            try accept(headers: makeHeaders().filter { $0.name != "Connection" } + [("Connection", "keep-alive, upgraded")])
        }
    }

    @Test(arguments: ["", "abc", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=", "AAAAAAAAAAAAAAAAAAAAAAAA",
                      "dGhlIHNhbXBsZSBub25jZR==", "dGhlIHNhbXBsZSBub25j ZQ=="])
    func keyThatIsNotBase64Of16Bytes_Is400(key: String) {
        #expect(throws: WebSocketHandshakeError.invalidKey) { try accept(headers: makeHeaders(key: key)) }
    }

    @Test func repeatedKeyHeader_Is400() {
        #expect(throws: WebSocketHandshakeError.invalidKey) {
            try accept(headers: makeHeaders(extra: [("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]))
        }
    }

    @Test(arguments: ["8", "12", "14", "", "13, 8"])
    func versionOtherThan13_Is426_NamingVersion13(version: String) {
        #expect(throws: WebSocketHandshakeError.unsupportedVersion) { try accept(headers: makeHeaders(version: version)) }
        #expect(WebSocketHandshakeError.unsupportedVersion.httpStatus == 426)
        #expect(WebSocketHandshakeError.unsupportedVersion.responseHeaders.map(\.value) == ["13"])
        #expect(WebSocketHandshakeError.unsupportedVersion.responseHeaders.map(\.name) == ["Sec-WebSocket-Version"])
    }

    @Test func missingVersion_Is426() {
        #expect(throws: WebSocketHandshakeError.unsupportedVersion) {
            try accept(headers: makeHeaders().filter { $0.name != "Sec-WebSocket-Version" })
        }
    }

    @Test func deflateOffer_IsAccepted_WithExtensionsResponseHeader() throws {
        let accepted = try accept(headers: makeHeaders(extra: [("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits=10")]))
        #expect(accepted.deflate != nil)
        #expect(accepted.headers.last?.name == "Sec-WebSocket-Extensions")
        #expect(accepted.headers.last?.value == "permessage-deflate; client_max_window_bits=10")
    }

    @Test func deflateOffer_WithCompressionDisabled_IsDeclined() throws {
        let accepted = try accept(headers: makeHeaders(extra: [("Sec-WebSocket-Extensions", "permessage-deflate")]), deflate: nil)
        #expect(accepted.deflate == nil)
        #expect(!accepted.headers.contains { $0.name == "Sec-WebSocket-Extensions" })
    }
}
