@testable import SpinServer
import SpinWire
import Testing

private typealias Action = StreamMachine.Action

private func makeMachine(_ kind: StreamMachine.Kind = .state(clientMayWrite: true), limit: Int = 4) -> StreamMachine {
    StreamMachine(kind: kind, transport: .webSocket(WebSocketSession(role: .server)), outboxLimit: limit)
}

private func makeSSEMachine(_ mode: HTTPBodyEncoder.Mode = .closeDelimited) -> StreamMachine {
    StreamMachine(kind: .state(clientMayWrite: false), transport: .sse(HTTPBodyEncoder(mode: mode)), outboxLimit: 4)
}

/// A server's (unmasked) text frame.
private func frame(_ text: [UInt8]) -> [UInt8] { WebSocketFrameEncoder.encode(opcode: .text, payload: text) }
private func frame(_ text: String) -> [UInt8] { frame(Array(text.utf8)) }
/// A client's (masked) text frame.
private func clientFrame(_ text: String) -> [UInt8] {
    WebSocketFrameEncoder.encode(opcode: .text, payload: Array(text.utf8), maskingKey: 0x0102_0304)
}
private func closeFrame(_ code: WebSocketCloseCode, _ reason: String) -> [UInt8] {
    WebSocketFrameEncoder.encode(opcode: .close, payload: WebSocketClosePayload(code: code, reason: reason).bytes)
}

private func transition(_ sequence: UInt64) -> HostedTransition {
    HostedTransition(sequence: sequence, event: .object([("type", .string("increase"))]), state: .number(String(sequence)))
}
private func live(_ sequence: UInt64) -> StreamMachine.Message {
    .state(transition(sequence), message: StreamMessage.state(transition(sequence), epoch: "e"))
}
private func snapshot(_ sequence: UInt64) -> [UInt8] {
    StreamMessage.snapshot(sequence: sequence, epoch: "e", state: .number(String(sequence)))
}
private func started(at sequence: UInt64) -> StreamMachine.Message {
    .started(.snapshot(sequence: sequence, state: .number(String(sequence))), epoch: "e")
}
private func ack(_ id: String, _ sequence: UInt64) -> [UInt8] { StreamMessage.ack(id: .string(id), sequence: sequence).bytes }

@Suite struct StreamMachineTests {
    // MARK: State streams

    @Test func snapshot_GoesFirst_AndAnErrorForAnEarlyMessageWaitsBehindIt_InOneWrite() {
        var machine = makeMachine()
        #expect(machine.received(clientFrame("[]"), room: .max) == [])
        let error = StreamMessage.error(id: .null, .malformedJSON("a stream message must be a JSON object")).bytes
        #expect(machine.deliver([started(at: 3)], room: .max) == [.write(frame(snapshot(3)) + frame(error))])
    }

    @Test func liveStatesAndAcks_OfOneDrain_LeaveInOrder_InOneWrite() {
        var machine = makeMachine()
        _ = machine.deliver([started(at: 3)], room: .max)
        let expected = frame(StreamMessage.state(transition(4), epoch: "e")) + frame(StreamMessage.state(transition(5), epoch: "e"))
            + frame(ack("c1", 5))
        #expect(machine.deliver([live(4), live(5), .control(ack("c1", 5))], room: .max) == [.write(expected)])
    }

    @Test func resumingStream_GetsItsHistoryFirst_ThenWhatArrivedMeanwhile() {
        var machine = makeMachine()
        let actions = machine.deliver([.started(.replay([transition(1), transition(2)]), epoch: "e"), live(3)], room: .max)
        #expect(actions == [.write([1, 2, 3].flatMap { frame(StreamMessage.state(transition($0), epoch: "e")) })])
    }

    @Test func slowConsumer_WaitsAboveTheHighWatermark_AndIsConflatedIntoOneSnapshot() {
        var machine = makeMachine(limit: 2)
        // The snapshot fills the connection: what follows waits.
        #expect(machine.deliver([started(at: 0)], room: 1) == [.write(frame(snapshot(0)))])
        #expect(machine.blocked)
        #expect(machine.deliver([live(1), live(2)], room: 0) == [])
        #expect(machine.deliver([live(3)], room: 0) == [.log(.conflated(dropped: 2))])
        // Readable again: the newest state, as a snapshot.
        #expect(machine.writable(room: .max) == [.write(frame(snapshot(3)))])
        #expect(!machine.blocked)
        #expect(machine.deliver([live(4)], room: .max) == [.write(frame(StreamMessage.state(transition(4), epoch: "e")))])
    }

    @Test func controlMessages_AreNeverDropped_TooManyUnreadCloseWith1008() {
        var machine = makeMachine(limit: 2)
        _ = machine.deliver([started(at: 0)], room: 0)
        #expect(machine.deliver([.control(ack("a", 1)), .control(ack("b", 2))], room: 0) == [])
        #expect(machine.deliver([.control(ack("c", 3))], room: 0)
            == [.stop, .write(closeFrame(.policyViolation, "too many unread messages")), .closeAfterFlush])
        #expect(machine.finished)
        #expect(machine.writable(room: .max) == [])
    }

    @Test func clientEvent_IsSubmitted_AndTheFramesAfterItWaitForReceiveMore() {
        var machine = makeMachine()
        _ = machine.deliver([started(at: 0)], room: .max)
        let frames = clientFrame(#"{"type":"event","id":"c1","event":{"type":"reset"}}"#)
            + clientFrame(#"{"type":"event","id":2,"event":[]}"#)
        #expect(machine.received(frames, room: .max) == [.submit(id: .string("c1"), event: Array(#"{"type":"reset"}"#.utf8))])
        #expect(machine.receiveMore(room: .max) == [.submit(id: .number("2"), event: Array("[]".utf8))])
        #expect(machine.receiveMore(room: .max) == [])
    }

    @Test func clientEvent_WithoutTheWritePermission_IsForbidden_UntilARefreshPermitsIt() {
        var machine = makeMachine(.state(clientMayWrite: false))
        _ = machine.deliver([started(at: 0)], room: .max)
        let event = clientFrame(#"{"type":"event","id":"c1","event":{}}"#)
        let error = StreamMessage.error(id: .string("c1"), .forbidden("sending events needs the write permission on this Spin")).bytes
        #expect(machine.received(event, room: .max) == [.write(frame(error))])
        // A refresh is handed to the driver, which checks the token, then permits.
        #expect(machine.received(clientFrame(#"{"type":"refresh","id":"r","token":"new"}"#), room: .max)
            == [.refresh(id: .string("r"), token: "new")])
        machine.permit(clientMayWrite: true)
        #expect(machine.received(event, room: .max) == [.submit(id: .string("c1"), event: Array("{}".utf8))])
    }

    @Test func gearStream_RefusesEvents_TakesRefreshes_AndPassesGearTrafficOn() {
        var machine = makeMachine(.gear)
        let noEvents = StreamMessage.error(id: .string("e"), .badRequest("the Gear stream takes no events (only \"refresh\")")).bytes
        #expect(machine.received(clientFrame(#"{"type":"event","id":"e","event":{}}"#), room: .max) == [.write(frame(noEvents))])
        let noType = StreamMessage.error(id: .null, .badRequest("the message has no \"type\"")).bytes
        #expect(machine.received(clientFrame("{}"), room: .max) == [.write(frame(noType))])
        #expect(machine.received(clientFrame(#"{"type":"refresh","token":"t"}"#), room: .max) == [.refresh(id: .null, token: "t")])
        #expect(machine.deliver([.control(Array("{}".utf8))], room: .max) == [.write(frame("{}"))])
    }

    @Test func binaryMessage_OnAJSONStream_Closes1003() {
        var machine = makeMachine()
        let binary = WebSocketFrameEncoder.encode(opcode: .binary, payload: [1], maskingKey: 9)
        #expect(machine.received(binary, room: .max)
            == [.stop, .write(closeFrame(.unsupportedData, "this stream takes JSON text messages")), .closeAfterFlush])
    }

    // MARK: Echo

    @Test func echo_PausesReadingAboveTheHighWatermark_AndResumesWhenWritable() {
        var machine = makeMachine(.echo)
        // "a" (3 bytes) fits, "b" goes above: both echoed, then reading pauses.
        #expect(machine.received(clientFrame("a") + clientFrame("b"), room: 4)
            == [.write(frame("a") + frame("b")), .pauseReading])
        #expect(machine.writable(room: .max) == [.resumeReading])
        #expect(machine.received(clientFrame("c"), room: .max) == [.write(frame("c"))])
    }

    // MARK: Ending

    @Test func shutdown_Closes1001_ThenNothingMoreLeaves_AndStopHappensOnce() {
        var machine = makeMachine()
        _ = machine.deliver([started(at: 0)], room: .max)
        #expect(machine.shutdown() == [.stop, .write(closeFrame(.goingAway, "server shutting down")), .closeAfterFlush])
        #expect(machine.deliver([live(1)], room: .max) == [])
        #expect(machine.pingTick(room: .max) == [])
        #expect(machine.connectionClosed() == [])
    }

    @Test func peerClose_IsAnsweredAndLogged_ThenTheConnectionCloses() {
        var machine = makeMachine(.echo)
        let close = WebSocketFrameEncoder.encode(opcode: .close, payload: WebSocketClosePayload(code: .normalClosure).bytes,
                                                 maskingKey: 5)
        #expect(machine.received(close, room: .max)
            == [.log(.peerClosed(code: .normalClosure)), .write(closeFrame(.normalClosure, "")), .stop, .closeAfterFlush])
    }

    @Test func connectionClosed_StopsTheStream() {
        var machine = makeMachine()
        #expect(machine.connectionClosed() == [.stop])
        #expect(machine.finish() == [])
    }

    @Test func ping_IsAWebSocketPing() {
        var machine = makeMachine(.echo)
        #expect(machine.pingTick(room: .max) == [.write(WebSocketFrameEncoder.encode(opcode: .ping, payload: []))])
    }

    // MARK: Server-sent events

    @Test func sse_SnapshotsAndStatesCarryTheirSequenceAsID_AcksDoNot_PingsAreComments() {
        var machine = makeSSEMachine()
        let expected = "id: 2\ndata: \(String(decoding: snapshot(2), as: UTF8.self))\n\n"
            + "id: 3\ndata: \(String(decoding: StreamMessage.state(transition(3), epoch: "e"), as: UTF8.self))\n\n"
            + "data: {}\n\n"
        #expect(machine.deliver([started(at: 2), live(3), .control(Array("{}".utf8))], room: .max)
            == [.write(Array(expected.utf8))])
        #expect(machine.pingTick(room: .max) == [.write(Array(": ping\n\n".utf8))])
    }

    @Test func sse_Shutdown_EndsTheBody() {
        var machine = makeSSEMachine(.chunked)
        #expect(machine.shutdown() == [.stop, .write(Array("0\r\n\r\n".utf8)), .closeAfterFlush])
    }
}
