import Testing
@testable import SpinWire

@Suite struct WebSocketClosePayloadTests {
    @Test func emptyPayload_HasNoCode() throws {
        #expect(try WebSocketClosePayload(parsing: []) == WebSocketClosePayload(code: nil))
    }

    @Test func oneBytePayload_IsProtocolError() {
        #expect(throws: WebSocketError.closePayloadTooShort) { try WebSocketClosePayload(parsing: [0x03]) }
    }

    @Test func codeAndReason_AreParsed() throws {
        let payload = try WebSocketClosePayload(parsing: [0x03, 0xE9] + Array("bye ✓".utf8))
        #expect(payload == WebSocketClosePayload(code: .goingAway, reason: "bye ✓"))
    }

    @Test(arguments: [UInt16(1005), 1006, 1015, 1004, 999, 2000, 5000])
    func codeNotAllowedOnTheWire_IsProtocolError(code: UInt16) {
        #expect(throws: WebSocketError.invalidCloseCode(code)) {
            try WebSocketClosePayload(parsing: [UInt8(code >> 8), UInt8(code & 0xFF)])
        }
    }

    @Test func reasonThatIsNotUTF8_IsInvalidPayload() {
        #expect(throws: WebSocketError.invalidUTF8) { try WebSocketClosePayload(parsing: [0x03, 0xE8, 0xCE, 0xBA, 0xE1, 0xBD]) }
    }

    @Test func encodedReason_IsCutAtACharacterBoundaryToFit125Bytes() throws {
        let payload = WebSocketClosePayload(code: .normalClosure, reason: String(repeating: "é", count: 100))
        let bytes = payload.bytes
        #expect(bytes.count <= 125)
        #expect(bytes.count == 2 + 122)
        #expect(try WebSocketClosePayload(parsing: bytes).reason == String(repeating: "é", count: 61))
    }
}
