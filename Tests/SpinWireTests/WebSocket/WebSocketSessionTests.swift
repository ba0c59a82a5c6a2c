import SpinTesting
import Testing
@testable import SpinWire

@Suite struct WebSocketSessionTests {
    func makeSession(limits: WebSocketLimits = WebSocketLimits(),
                     deflate: PerMessageDeflateParameters? = nil) -> WebSocketSession {
        WebSocketSession(role: .server, limits: limits, deflate: deflate)
    }

    func closeFrame(_ code: WebSocketCloseCode?) -> [UInt8] {
        WebSocketFrameEncoder.encode(opcode: .close, payload: WebSocketClosePayload(code: code).bytes)
    }

    @Test func maskedHello_IsDeliveredAsText() {
        var session = makeSession()
        #expect(session.receive(WebSocketFixture.bytes("rfc6455-masked-hello")) == [.message(.text("Hello"))])
    }

    @Test func ping_IsAnsweredWithPongCarryingTheSameData() {
        var session = makeSession()
        let actions = session.receive(makeClientFrame(.ping, "Hello"))
        #expect(actions == [.send(WebSocketFrameEncoder.encode(opcode: .pong, payload: Array("Hello".utf8)))])
    }

    @Test func pong_IsReported() {
        var session = makeSession()
        #expect(session.receive(WebSocketFixture.bytes("rfc6455-masked-pong")) == [.pongReceived(Array("Hello".utf8))])
    }

    @Test func controlFramesInterleavedWithFragments_AreHandledInOrder() {
        var session = makeSession()
        let bytes = makeClientFrame(.text, "Hel", fin: false) + makeClientFrame(.ping, "p")
            + makeClientFrame(.continuation, "lo")
        #expect(session.receive(bytes) == [
            .send(WebSocketFrameEncoder.encode(opcode: .pong, payload: [0x70])),
            .message(.text("Hello")),
        ])
    }

    @Test func peerClose_IsEchoed_ThenTCPClosed_AndLaterInputIgnored() {
        var session = makeSession()
        let actions = session.receive(makeClientFrame(.close, [0x03, 0xE8] + Array("done".utf8)))
        #expect(actions == [
            .peerClosed(code: .normalClosure, reason: "done"),
            .send(closeFrame(.normalClosure)),
            .closeConnection,
        ])
        #expect(session.state == .closed)
        #expect(session.receive(makeClientFrame(.text, "late")) == [])
        #expect(session.sendText("late") == [])
    }

    @Test func serverClose_ThenPeerReply_ClosesTCP() {
        var session = makeSession()
        #expect(session.close(code: .goingAway, reason: "restart") == [
            .send(WebSocketFrameEncoder.encode(opcode: .close, payload: WebSocketClosePayload(code: .goingAway, reason: "restart").bytes)),
        ])
        #expect(session.sendText("after close") == [])
        #expect(session.ping() == [])
        // Data the peer sent before it saw our Close is still delivered; no pong after our Close.
        #expect(session.receive(makeClientFrame(.text, "in flight") + makeClientFrame(.ping, [])) == [.message(.text("in flight"))])
        #expect(session.receive(makeClientFrame(.close, [0x03, 0xE9])) == [.peerClosed(code: .goingAway, reason: ""), .closeConnection])
    }

    @Test func protocolError_FailsWith1002_ThenClosesTCP() {
        var session = makeSession()
        let actions = session.receive(WebSocketFixture.bytes("rfc6455-unmasked-hello"))
        #expect(actions == [.failed(.unmaskedClientFrame), .send(closeFrame(.protocolError)), .closeConnection])
        #expect(session.receive(makeClientFrame(.text, "x")) == [])
    }

    @Test func invalidUTF8Text_FailsWith1007() {
        var session = makeSession()
        #expect(session.receive(makeClientFrame(.text, [0xC0, 0xAF])) == [
            .failed(.invalidUTF8), .send(closeFrame(.invalidFramePayloadData)), .closeConnection,
        ])
    }

    @Test func invalidCloseCode_FailsWith1002() {
        var session = makeSession()
        #expect(session.receive(makeClientFrame(.close, [0x03, 0xED])) == [
            .failed(.invalidCloseCode(1005)), .send(closeFrame(.protocolError)), .closeConnection,
        ])
    }

    @Test func oversizedMessage_FailsWith1009() {
        var session = makeSession(limits: WebSocketLimits(maxMessageSize: 4))
        #expect(session.receive(makeClientFrame(.binary, [1, 2, 3, 4, 5])) == [
            .failed(.messageTooLarge), .send(closeFrame(.messageTooBig)), .closeConnection,
        ])
    }

    @Test func messagesBeforeAnError_AreStillDelivered() {
        var session = makeSession()
        let actions = session.receive(makeClientFrame(.text, "ok") + [0x83, 0x80, 0, 0, 0, 0])
        #expect(actions.first == .message(.text("ok")))
        #expect(actions.dropFirst().first == .failed(.unknownOpcode(3)))
    }

    /// Autobahn 3.2 (and 4.1.3, 5.15): a text message, then a frame that fails the
    /// connection, in one read. Frame by frame, the echo of the first goes out before
    /// the Close; with `receive` the Close was already sent and the echo dropped.
    @Test func oneFrameAtATime_AnAnswerGoesOutBeforeALaterFrameFailsTheConnection() {
        var session = makeSession()
        let rsv2Text: [UInt8] = [0xA1, 0x80, 0, 0, 0, 0]
        session.append(makeClientFrame(.text, "Hello") + rsv2Text + makeClientFrame(.ping))
        #expect(session.nextActions() == [.message(.text("Hello"))])
        #expect(session.sendText("Hello") == [.send(WebSocketFrameEncoder.encode(opcode: .text, payload: Array("Hello".utf8)))])
        #expect(session.nextActions() == [.failed(.reservedBitsSet), .send(closeFrame(.protocolError)), .closeConnection])
        #expect(session.nextActions() == nil)   // the Ping after the failure gets no Pong
    }

    @Test func nextActions_IsNilUntilAFrameIsComplete_AndFailsFastOnAPartialFrame() {
        var session = makeSession()
        let frame = makeClientFrame(.text, "Hello")
        session.append(Array(frame.prefix(4)))
        #expect(session.nextActions() == nil)
        session.append(Array(frame.dropFirst(4)))
        #expect(session.nextActions() == [.message(.text("Hello"))])
        #expect(session.nextActions() == nil)
        // Invalid UTF-8 in a frame still arriving fails without waiting for its end.
        session.append(Array(makeClientFrame(.text, [0x61, 0xFF, 0x62, 0x63]).prefix(8)))
        #expect(session.nextActions() == [.failed(.invalidUTF8), .send(closeFrame(.invalidFramePayloadData)), .closeConnection])
    }

    @Test func outgoingMessages_AreUnmaskedFrames() {
        var session = makeSession()
        #expect(session.sendText("Hello") == [.send(WebSocketFixture.bytes("rfc6455-unmasked-hello"))])
        #expect(session.sendBinary([1, 2]) == [.send([0x82, 0x02, 1, 2])])
        #expect(session.ping(Array("Hello".utf8)) == [.send(WebSocketFixture.bytes("rfc6455-unmasked-ping"))])
    }

    @Test func withDeflate_CompressedMessagesAreInflated_AndLargeOutgoingOnesCompressed() throws {
        var session = makeSession(deflate: PerMessageDeflateParameters(minimumCompressedSize: 5))
        // RFC 7692 §7.2.3.2 messages, masked as a client would send them.
        let frames = WebSocketFixture.lines("rfc7692-shared-window").map { line -> [UInt8] in
            makeClientFrame(.text, Array(line.dropFirst(2)), rsv1: true)
        }
        #expect(session.receive(frames[0] + frames[1]) == [.message(.text("Hello")), .message(.text("Hello"))])
        #expect(session.sendText("Hello") == [.send(WebSocketFixture.bytes("rfc7692-compressed-hello"))])
        #expect(session.sendText("Hi") == [.send(WebSocketFrameEncoder.encode(opcode: .text, payload: Array("Hi".utf8)))])
    }

    @Test func clientAndServerSessions_Interoperate_WithAndWithoutDeflate() throws {
        for deflate in [nil, PerMessageDeflateParameters(serverNoContextTakeover: true, clientMaxWindowBits: 9)] {
            var client = WebSocketSession(role: .client, deflate: deflate)
            var server = WebSocketSession(role: .server, deflate: deflate)
            let message = String(repeating: "{\"type\":\"state\",\"sequence\":1} ", count: 50)
            var wire: [UInt8] = []
            for case .send(let bytes) in client.sendText(message) + client.sendBinary([0, 1, 2]) { wire += bytes }
            #expect(server.receive(wire) == [.message(.text(message)), .message(.binary([0, 1, 2]))])
            var back: [UInt8] = []
            for case .send(let bytes) in server.sendText(message) { back += bytes }
            #expect(client.receive(back) == [.message(.text(message))])
        }
    }

    @Test func everyByteSplitAndRandomSplits_GiveTheSameActionsAsOneBuffer() {
        let deflate = PerMessageDeflateParameters()
        var client = WebSocketSession(role: .client, deflate: deflate)
        var wire: [UInt8] = []
        func add(_ actions: [WebSocketSession.Action]) { for case .send(let bytes) in actions { wire += bytes } }
        add(client.sendText(String(repeating: "compressible text ", count: 40)))
        wire += makeClientFrame(.text, "Hé", fin: false) + makeClientFrame(.ping, "p") + makeClientFrame(.continuation, "llo")
        add(client.sendBinary((0..<70_000).map { UInt8(truncatingIfNeeded: $0) }))
        wire += makeClientFrame(.close, [0x03, 0xE8])
        wire += makeClientFrame(.text, "ignored after close")

        func run(_ chunks: [ArraySlice<UInt8>]) -> [WebSocketSession.Action] {
            var server = WebSocketSession(role: .server, deflate: deflate)
            return chunks.flatMap { server.receive(Array($0)) }
        }
        let whole = run([wire[...]])
        #expect(whole.count == 7)
        #expect(whole.last == .closeConnection)
        #expect(run(wire.indices.map { wire[$0...$0] }) == whole)
        var rng = SeededGenerator(seed: 99)
        for _ in 0..<30 {
            var chunks: [ArraySlice<UInt8>] = []
            var start = 0
            while start < wire.count {
                let end = min(wire.count, start + Int.random(in: 1...5000, using: &rng))
                chunks.append(wire[start..<end])
                start = end
            }
            #expect(run(chunks) == whole)
        }
    }

    @Test func invalidUTF8_SplitAcrossFragments_FailsBeforeTheFinalFrame() {
        var session = makeSession()
        #expect(session.receive(makeClientFrame(.text, [0x41, 0xF4], fin: false)) == [])
        // 0x90 after F4 would be above U+10FFFF: fail now, although FIN is still clear.
        #expect(session.receive(makeClientFrame(.continuation, [0x90], fin: false)).first == .failed(.invalidUTF8))
    }

    @Test func compressionBomb_ThroughTheSession_FailsWith1009() throws {
        let compressor = try #require(PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: false))
        let bomb = try compressor.compress([UInt8](repeating: 0, count: 10_000_000))
        var session = makeSession(limits: WebSocketLimits(maxDecompressedMessageSize: 1 << 20),
                                  deflate: PerMessageDeflateParameters())
        #expect(session.receive(makeClientFrame(.binary, bomb, rsv1: true)) == [
            .failed(.decompressedMessageTooLarge), .send(closeFrame(.messageTooBig)), .closeConnection,
        ])
    }

    @Test func invalidUTF8_InsideALongTextFrame_FailsBeforeTheFrameEnds() {
        var session = makeSession()
        let payload = Array("valid prefix ".utf8) + [0xED, 0xA0, 0x80] + [UInt8](repeating: 0x61, count: 10_000)
        let frame = makeClientFrame(.text, payload)
        // Header plus the first 20 payload bytes: the surrogate is already there.
        let actions = session.receive(Array(frame.prefix(8 + 20)))
        #expect(actions == [.failed(.invalidUTF8), .send(closeFrame(.invalidFramePayloadData)), .closeConnection])
    }

    @Test func validTextTrickledByteByByte_IsDeliveredOnce() {
        var session = makeSession()
        let text = String(repeating: "h\u{e9}llo \u{1F600} ", count: 40)
        let frames = makeClientFrame(.text, Array(text.utf8.prefix(101)), fin: false)
            + makeClientFrame(.continuation, Array(text.utf8.dropFirst(101)))
        var actions: [WebSocketSession.Action] = []
        for byte in frames { actions += session.receive([byte]) }
        #expect(actions == [.message(.text(text))])
    }

    @Test func invalidUTF8_InAContinuationStillArriving_FailsEarly() {
        var session = makeSession()
        #expect(session.receive(makeClientFrame(.text, [0x41, 0xE2], fin: false)) == [])
        let continuation = makeClientFrame(.continuation, [0x82, 0x41] + [UInt8](repeating: 0x41, count: 500))
        #expect(session.receive(Array(continuation.prefix(12))).first == .failed(.invalidUTF8))
    }

    @Test func oversizedContinuation_FailsFromItsHeader_BeforeThePayload() {
        var session = makeSession(limits: WebSocketLimits(maxMessageSize: 1000))
        #expect(session.receive(makeClientFrame(.binary, [UInt8](repeating: 0, count: 600), fin: false)) == [])
        let continuation = makeClientFrame(.continuation, [UInt8](repeating: 0, count: 600))
        #expect(session.receive(Array(continuation.prefix(8))).first == .failed(.messageTooLarge))
    }

    @Test func binaryFrameStillArriving_IsNotUTF8Checked() {
        var session = makeSession()
        let frame = makeClientFrame(.binary, [0xFF, 0xFE, 0xC0] + [UInt8](repeating: 0, count: 200))
        #expect(session.receive(Array(frame.prefix(20))) == [])
        #expect(session.receive(Array(frame.dropFirst(20))) == [.message(.binary([0xFF, 0xFE, 0xC0] + [UInt8](repeating: 0, count: 200)))])
    }
}
