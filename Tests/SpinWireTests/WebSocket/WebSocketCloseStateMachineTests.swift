import Testing
@testable import SpinWire

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
