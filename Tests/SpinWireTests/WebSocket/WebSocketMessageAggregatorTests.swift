import Testing
@testable import SpinWire

@Suite struct WebSocketMessageAggregatorTests {
    func frame(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, rsv1: Bool = false) -> WebSocketFrame {
        WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, payload: payload)
    }

    func frame(_ opcode: WebSocketOpcode, _ text: String, fin: Bool = true) -> WebSocketFrame {
        frame(opcode, Array(text.utf8), fin: fin)
    }

    func makeAggregator(limits: WebSocketLimits = WebSocketLimits(), deflate: Bool = false,
                        noContextTakeover: Bool = false) -> WebSocketMessageAggregator {
        WebSocketMessageAggregator(
            limits: limits,
            decompressor: deflate ? PerMessageDeflateDecompressor(windowBits: 15, noContextTakeover: noContextTakeover) : nil)
    }

    @Test func singleTextFrame_IsOneMessage() throws {
        var aggregator = makeAggregator()
        #expect(try aggregator.receive(frame(.text, "Hello")) == .text("Hello"))
        #expect(try aggregator.receive(frame(.binary, [1, 2])) == .binary([1, 2]))
    }

    @Test func fragmentedMessage_IsJoined() throws {
        var aggregator = makeAggregator()
        #expect(try aggregator.receive(frame(.text, "Hel", fin: false)) == nil)
        #expect(aggregator.isAssembling)
        #expect(try aggregator.receive(frame(.continuation, "", fin: false)) == nil)
        #expect(try aggregator.receive(frame(.continuation, "lo")) == .text("Hello"))
        #expect(!aggregator.isAssembling)
    }

    @Test func continuationWithoutStart_IsProtocolError() {
        var aggregator = makeAggregator()
        #expect(throws: WebSocketError.continuationWithoutStart) { try aggregator.receive(frame(.continuation, "x")) }
    }

    @Test func newDataFrameDuringFragmentedMessage_IsProtocolError() throws {
        var aggregator = makeAggregator()
        _ = try aggregator.receive(frame(.binary, [1], fin: false))
        #expect(throws: WebSocketError.dataFrameDuringFragmentedMessage) { try aggregator.receive(frame(.text, "x")) }
    }

    @Test func invalidUTF8_FailsOnTheFragmentThatProvesIt_NotAtTheEnd() throws {
        var aggregator = makeAggregator()
        _ = try aggregator.receive(frame(.text, [0x48, 0xF0, 0x9F], fin: false))  // valid so far
        // The continuation's first byte 0x41 cannot continue F0 9F: fail now, FIN not set.
        #expect(throws: WebSocketError.invalidUTF8) { try aggregator.receive(frame(.continuation, [0x41], fin: false)) }
    }

    @Test func codePointSplitAcrossFragments_IsAccepted() throws {
        var aggregator = makeAggregator()
        let smile = Array("😀".utf8)
        _ = try aggregator.receive(frame(.text, Array(smile[0..<1]), fin: false))
        _ = try aggregator.receive(frame(.continuation, Array(smile[1..<3]), fin: false))
        #expect(try aggregator.receive(frame(.continuation, Array(smile[3...]))) == .text("😀"))
    }

    @Test func textEndingInsideACodePoint_IsInvalidUTF8() {
        var aggregator = makeAggregator()
        #expect(throws: WebSocketError.invalidUTF8) { try aggregator.receive(frame(.text, [0x41, 0xE2, 0x82])) }
    }

    @Test func binaryMessages_AreNotUTF8Checked() throws {
        var aggregator = makeAggregator()
        #expect(try aggregator.receive(frame(.binary, [0xFF, 0xC0])) == .binary([0xFF, 0xC0]))
    }

    @Test func messageOverMaxMessageSize_IsTooBig() throws {
        var aggregator = makeAggregator(limits: WebSocketLimits(maxMessageSize: 10))
        _ = try aggregator.receive(frame(.binary, [UInt8](repeating: 0, count: 6), fin: false))
        #expect(throws: WebSocketError.messageTooLarge) {
            try aggregator.receive(frame(.continuation, [UInt8](repeating: 0, count: 5)))
        }
        #expect(WebSocketError.messageTooLarge.closeCode == .messageTooBig)
    }

    @Test func messageAtExactlyMaxMessageSize_IsAccepted() throws {
        var aggregator = makeAggregator(limits: WebSocketLimits(maxMessageSize: 10))
        _ = try aggregator.receive(frame(.binary, [UInt8](repeating: 0, count: 5), fin: false))
        #expect(try aggregator.receive(frame(.continuation, [UInt8](repeating: 0, count: 5))) != nil)
    }

    @Test func tooManyFragments_IsTooBig() throws {
        var aggregator = makeAggregator(limits: WebSocketLimits(maxFragmentCount: 3))
        _ = try aggregator.receive(frame(.binary, [1], fin: false))
        _ = try aggregator.receive(frame(.continuation, [2], fin: false))
        _ = try aggregator.receive(frame(.continuation, [3], fin: false))
        #expect(throws: WebSocketError.tooManyFragments) { try aggregator.receive(frame(.continuation, [4])) }
    }

    @Test func compressedFrame_WithoutDeflate_IsProtocolError() {
        var aggregator = makeAggregator()
        #expect(throws: WebSocketError.reservedBitsSet) { try aggregator.receive(frame(.text, [0x00], rsv1: true)) }
    }

    @Test func rfc7692CompressedHello_FragmentedAcrossFrames_IsInflated() throws {
        var aggregator = makeAggregator(deflate: true)
        #expect(try aggregator.receive(frame(.text, [0xf2, 0x48, 0xcd], fin: false, rsv1: true)) == nil)
        #expect(try aggregator.receive(frame(.continuation, [0xc9, 0xc9, 0x07, 0x00])) == .text("Hello"))
    }

    @Test func compressedInvalidUTF8_IsRejected() throws {
        let compressor = try #require(PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: false))
        let payload = try compressor.compress([0x41, 0xED, 0xA0, 0x80])
        var aggregator = makeAggregator(deflate: true)
        #expect(throws: WebSocketError.invalidUTF8) { try aggregator.receive(frame(.text, payload, rsv1: true)) }
    }

    @Test func decompressedSizeOverLimit_IsTooBig() throws {
        let compressor = try #require(PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: false))
        let payload = try compressor.compress([UInt8](repeating: 0x61, count: 2000))
        var aggregator = makeAggregator(limits: WebSocketLimits(maxDecompressedMessageSize: 1000), deflate: true)
        #expect(payload.count < 100)
        #expect(throws: WebSocketError.decompressedMessageTooLarge) { try aggregator.receive(frame(.text, payload, rsv1: true)) }
    }

    @Test func garbageCompressedData_IsInvalidPayload() {
        var aggregator = makeAggregator(deflate: true)
        #expect(throws: WebSocketError.invalidCompressedData) {
            try aggregator.receive(frame(.binary, [0xFF, 0xFF, 0xFF, 0xFF], rsv1: true))
        }
        #expect(WebSocketError.invalidCompressedData.closeCode == .invalidFramePayloadData)
    }

    @Test func uncompressedMessage_AfterNegotiation_PassesThrough() throws {
        var aggregator = makeAggregator(deflate: true)
        #expect(try aggregator.receive(frame(.text, "plain")) == .text("plain"))
    }
}
