import Testing
@testable import SpinWire

@Suite struct WebSocketCloseCodeTests {
    @Test(arguments: [UInt16(1000), 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999])
    func codesAllowedOnTheWire_AreValid(code: UInt16) {
        #expect(WebSocketCloseCode(code).isValidOnWire)
    }

    @Test(arguments: [UInt16(0), 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535])
    func reservedOrUndefinedCodes_AreInvalid(code: UInt16) {
        #expect(!WebSocketCloseCode(code).isValidOnWire)
    }
}

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

@Suite struct WebSocketCloseStateMachineTests {
    @Test func peerInitiatedClose_Server_RepliesEchoingCode_AndClosesTCP() {
        var machine = WebSocketCloseStateMachine(role: .server)
        let actions = machine.closeReceived(WebSocketClosePayload(code: .goingAway, reason: "tab closed"))
        #expect(actions == [.sendClose(WebSocketClosePayload(code: .goingAway)), .closeConnection])
        #expect(machine.state == .closed)
        #expect(machine.closeReceived(WebSocketClosePayload(code: .normalClosure)) == [])
    }

    @Test func peerCloseWithoutCode_IsAnsweredWithoutCode() {
        var machine = WebSocketCloseStateMachine(role: .server)
        #expect(machine.closeReceived(WebSocketClosePayload(code: nil)) == [.sendClose(WebSocketClosePayload(code: nil)), .closeConnection])
    }

    @Test func serverInitiatedClose_WaitsForReply_ThenClosesTCP() {
        var machine = WebSocketCloseStateMachine(role: .server)
        #expect(machine.close(WebSocketClosePayload(code: .normalClosure)) == [.sendClose(WebSocketClosePayload(code: .normalClosure))])
        #expect(machine.state == .closeSent)
        #expect(!machine.canSend)
        #expect(machine.close(WebSocketClosePayload(code: .goingAway)) == [])
        #expect(machine.closeReceived(WebSocketClosePayload(code: .normalClosure)) == [.closeConnection])
        #expect(machine.state == .closed)
    }

    @Test func client_LeavesClosingTCPToTheServer() {
        var machine = WebSocketCloseStateMachine(role: .client)
        #expect(machine.closeReceived(WebSocketClosePayload(code: .normalClosure)) == [.sendClose(WebSocketClosePayload(code: .normalClosure))])
    }

    @Test func failure_SendsTheErrorsCloseCode_ThenClosesTCP() {
        var machine = WebSocketCloseStateMachine(role: .server)
        #expect(machine.fail(.invalidUTF8) == [.sendClose(WebSocketClosePayload(code: .invalidFramePayloadData)), .closeConnection])
        #expect(machine.fail(.invalidUTF8) == [])
    }

    @Test func failureAfterOurClose_OnlyClosesTCP() {
        var machine = WebSocketCloseStateMachine(role: .server)
        _ = machine.close(WebSocketClosePayload(code: .normalClosure))
        #expect(machine.fail(.frameTooLarge) == [.closeConnection])
    }
}
