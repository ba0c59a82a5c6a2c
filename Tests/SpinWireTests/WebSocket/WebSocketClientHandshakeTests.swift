import Testing
@testable import SpinWire

@Suite struct WebSocketClientHandshakeTests {
    @Test func clientRequest_IsAcceptedByTheServer_AndTheResponseValidates() throws {
        let client = WebSocketClientHandshake(subprotocols: ["spin.v1"], offersDeflate: true)
        #expect(WebSocketBase64.decode(client.key)?.count == 16)
        let accepted = try WebSocketHandshake.accept(method: "GET", httpVersion: (major: 1, minor: 1),
                                                     headers: client.requestHeaders(host: "localhost"),
                                                     supportedSubprotocols: ["spin.v1"])
        let agreement = try client.validate(status: 101, headers: accepted.headers)
        #expect(agreement.subprotocol == "spin.v1")
        #expect(agreement.deflate?.serverNoContextTakeover == accepted.deflate?.serverNoContextTakeover)
        #expect(agreement.deflate != nil)
    }

    @Test func rfcKey_ValidatesTheRFCAccept() throws {
        let client = WebSocketClientHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==")
        let headers: HTTPHeaders = ["Upgrade": "websocket", "Connection": "Upgrade",
                                    "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]
        #expect(try client.validate(status: 101, headers: headers) == WebSocketClientHandshake.Agreement())
    }

    @Test func wrongAccept_OrStatus_OrUnofferedExtension_FailsTheConnection() {
        let client = WebSocketClientHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==")
        let base: [(String, String)] = [("Upgrade", "websocket"), ("Connection", "Upgrade")]
        #expect(throws: WebSocketClientHandshake.Failure.acceptMismatch) {
            try client.validate(status: 101, headers: HTTPHeaders(base + [("Sec-WebSocket-Accept", "AAAA")]))
        }
        #expect(throws: WebSocketClientHandshake.Failure.unexpectedStatus(426)) { try client.validate(status: 426, headers: HTTPHeaders(base)) }
        #expect(throws: WebSocketClientHandshake.Failure.unexpectedExtension("permessage-deflate")) {
            try client.validate(status: 101, headers: HTTPHeaders(base + [("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
                                                                          ("Sec-WebSocket-Extensions", "permessage-deflate")]))
        }
    }
}
