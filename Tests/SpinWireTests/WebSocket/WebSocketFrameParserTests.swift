import SpinTesting
import Testing
@testable import SpinWire

@Suite struct WebSocketFrameParserTests {
    // MARK: RFC 6455 §5.7 examples

    @Test func rfcUnmaskedHello_ParsesAsTextFrame_ForAClient() {
        let (frames, error) = parseAll(WebSocketFixture.bytes("rfc6455-unmasked-hello"), role: .client)
        #expect(error == nil)
        #expect(frames == [WebSocketFrame(opcode: .text, payload: Array("Hello".utf8))])
    }

    @Test func rfcMaskedHello_IsUnmasked_ForAServer() {
        let (frames, error) = parseAll(WebSocketFixture.bytes("rfc6455-masked-hello"))
        #expect(error == nil)
        #expect(frames == [WebSocketFrame(opcode: .text, maskingKey: 0x37FA_213D, payload: Array("Hello".utf8))])
    }

    @Test func rfcFragmentedHello_GivesTwoFrames_FirstWithoutFin() {
        let (frames, error) = parseAll(WebSocketFixture.bytes("rfc6455-fragmented-hello"), role: .client)
        #expect(error == nil)
        #expect(frames == [
            WebSocketFrame(fin: false, opcode: .text, payload: Array("Hel".utf8)),
            WebSocketFrame(fin: true, opcode: .continuation, payload: Array("lo".utf8)),
        ])
    }

    @Test func rfcPingAndMaskedPong_Parse() {
        let ping = parseAll(WebSocketFixture.bytes("rfc6455-unmasked-ping"), role: .client)
        #expect(ping.frames == [WebSocketFrame(opcode: .ping, payload: Array("Hello".utf8))])
        let pong = parseAll(WebSocketFixture.bytes("rfc6455-masked-pong"), role: .server)
        #expect(pong.frames.map(\.opcode) == [.pong])
        #expect(pong.frames.first?.payload == Array("Hello".utf8))
    }

    @Test func rfc256ByteFrame_Uses16BitLength() {
        let payload = (0..<256).map { UInt8($0 & 0xFF) }
        let bytes = WebSocketFixture.bytes("rfc6455-256-bytes-header") + payload
        let (frames, error) = parseAll(bytes, role: .client)
        #expect(error == nil)
        #expect(frames == [WebSocketFrame(opcode: .binary, payload: payload)])
        #expect(WebSocketFrameEncoder.encode(opcode: .binary, payload: payload) == bytes)
    }

    @Test func rfc64KiBFrame_Uses64BitLength() {
        let payload = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let bytes = WebSocketFixture.bytes("rfc6455-64k-header") + payload
        let (frames, error) = parseAll(bytes, role: .client)
        #expect(error == nil)
        #expect(frames.first?.payload == payload)
        #expect(WebSocketFrameEncoder.encode(opcode: .binary, payload: payload) == bytes)
    }

    // MARK: Masking by role (RFC 6455 §5.1)

    @Test func unmaskedFrame_ToServer_IsProtocolError() {
        let (_, error) = parseAll(WebSocketFixture.bytes("rfc6455-unmasked-hello"), role: .server)
        #expect(error == .unmaskedClientFrame)
        #expect(error?.closeCode == .protocolError)
    }

    @Test func maskedFrame_ToClient_IsProtocolError() {
        let (_, error) = parseAll(WebSocketFixture.bytes("rfc6455-masked-hello"), role: .client)
        #expect(error == .maskedServerFrame)
    }

    // MARK: Lengths (RFC 6455 §5.2)

    @Test func nonMinimalLengthEncoding_IsAccepted() {
        // "Hi" with a 16-bit length and then a 64-bit length.
        let sixteen: [UInt8] = [0x82, 0xFE, 0x00, 0x02, 0, 0, 0, 0, 0x48, 0x69]
        let sixtyFour: [UInt8] = [0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0x48, 0x69]
        #expect(parseAll(sixteen).frames.first?.payload == [0x48, 0x69])
        #expect(parseAll(sixtyFour).frames.first?.payload == [0x48, 0x69])
    }

    @Test func sixtyFourBitLength_WithMostSignificantBitSet_IsProtocolError() {
        let bytes: [UInt8] = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0x02]
        #expect(parseAll(bytes).error == .invalidPayloadLength)
    }

    @Test func frameLargerThanLimit_IsRejectedFromTheHeaderAlone() {
        let limits = WebSocketLimits(maxFrameSize: 1000)
        // Only the header of a 1001-byte frame: rejected before the payload arrives.
        let header: [UInt8] = [0x82, 0xFE, 0x03, 0xE9]
        let (_, error) = parseAll(header, limits: limits)
        #expect(error == .frameTooLarge)
        #expect(error?.closeCode == .messageTooBig)
        let (frames, okError) = parseAll(makeClientFrame(.binary, [UInt8](repeating: 1, count: 1000)), limits: limits)
        #expect(okError == nil && frames.count == 1)
    }

    // MARK: Opcodes and reserved bits

    @Test(arguments: [UInt8(3), 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF])
    func reservedOpcode_IsProtocolError(opcode: UInt8) {
        let (_, error) = parseAll([0x80 | opcode, 0x80, 1, 2, 3, 4])
        #expect(error == .unknownOpcode(opcode))
        #expect(error?.closeCode == .protocolError)
    }

    @Test(arguments: [UInt8(0x20), 0x10, 0x30])
    func rsv2OrRsv3_IsProtocolError_EvenWithDeflate(bits: UInt8) {
        let (_, error) = parseAll([0x81 | bits, 0x80, 1, 2, 3, 4], compressed: true)
        #expect(error == .reservedBitsSet)
    }

    @Test func rsv1_WithoutDeflate_IsProtocolError() {
        #expect(parseAll(makeClientFrame(.text, [0x00], rsv1: true)).error == .reservedBitsSet)
    }

    @Test func rsv1_WithDeflate_IsAcceptedOnFirstDataFrame_NotOnContinuationOrControl() {
        #expect(parseAll(makeClientFrame(.text, [0x00], fin: false, rsv1: true), compressed: true).error == nil)
        #expect(parseAll(makeClientFrame(.continuation, [0x00], rsv1: true), compressed: true).error == .reservedBitsSet)
        #expect(parseAll(makeClientFrame(.ping, [], rsv1: true), compressed: true).error == .reservedBitsSet)
    }

    // MARK: Control frames (RFC 6455 §5.5)

    @Test func controlFrameOf125Bytes_IsAccepted_126IsProtocolError() {
        #expect(parseAll(makeClientFrame(.ping, [UInt8](repeating: 0, count: 125))).error == nil)
        #expect(parseAll(makeClientFrame(.ping, [UInt8](repeating: 0, count: 126))).error == .controlFrameTooLong)
    }

    @Test func fragmentedControlFrame_IsProtocolError() {
        #expect(parseAll(makeClientFrame(.ping, [1], fin: false)).error == .fragmentedControlFrame)
        #expect(parseAll(makeClientFrame(.close, [3, 0xE8], fin: false)).error == .fragmentedControlFrame)
    }

    // MARK: Streaming

    @Test func partialInput_WaitsForMoreData_ThenYieldsTheFrame() throws {
        let bytes = WebSocketFixture.bytes("rfc6455-masked-hello")
        var parser = WebSocketFrameParser(role: .server)
        for byte in bytes.dropLast() {
            parser.append([byte])
            #expect(try parser.parseStep() == .insufficientData)
        }
        parser.append([bytes.last!])
        #expect(try parser.nextFrame()?.payload == Array("Hello".utf8))
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func afterAnError_TheParserKeepsFailing() {
        var parser = WebSocketFrameParser(role: .server)
        parser.append([0x83, 0x80, 0, 0, 0, 0])
        #expect(throws: WebSocketError.unknownOpcode(3)) { try parser.nextFrame() }
        parser.append(makeClientFrame(.text, "ok"))
        #expect(throws: WebSocketError.unknownOpcode(3)) { try parser.nextFrame() }
    }

    @Test func everyByteSplitAndRandomSplits_GiveTheSameFramesAsOneBuffer() throws {
        var stream: [UInt8] = []
        stream += makeClientFrame(.text, "Hel", fin: false)
        stream += makeClientFrame(.ping, "p")
        stream += makeClientFrame(.continuation, "lo")
        stream += makeClientFrame(.binary, (0..<300).map { UInt8($0 & 0xFF) })
        stream += makeClientFrame(.binary, [UInt8](repeating: 9, count: 70_000))
        stream += makeClientFrame(.close, [0x03, 0xE8])
        let whole = parseAll(stream)
        #expect(whole.error == nil && whole.frames.count == 6)

        func parse(chunks: [ArraySlice<UInt8>]) throws -> [WebSocketFrame] {
            var parser = WebSocketFrameParser(role: .server)
            var frames: [WebSocketFrame] = []
            for chunk in chunks {
                parser.append(Array(chunk))
                while let frame = try parser.nextFrame() { frames.append(frame) }
            }
            return frames
        }
        #expect(try parse(chunks: stream.indices.map { stream[$0...$0] }) == whole.frames)
        var rng = SeededGenerator(seed: 42)
        for _ in 0..<50 {
            var chunks: [ArraySlice<UInt8>] = []
            var start = 0
            while start < stream.count {
                let end = min(stream.count, start + Int.random(in: 1...9000, using: &rng))
                chunks.append(stream[start..<end])
                start = end
            }
            #expect(try parse(chunks: chunks) == whole.frames)
        }
    }

    @Test func pendingFrame_ExposesTheHeaderAndTheUnmaskedBytesSoFar() throws {
        let payload = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        let bytes = makeClientFrame(.binary, payload, key: 0x0102_0304)
        var parser = WebSocketFrameParser(role: .server)
        parser.append(Array(bytes.prefix(3)))
        #expect(parser.pendingFrame() == nil)  // header incomplete
        parser.append(Array(bytes[3..<(8 + 101)]))
        #expect(try parser.nextFrame() == nil)
        let pending = try #require(parser.pendingFrame())
        #expect(pending.header.opcode == .binary && pending.header.payloadLength == 300)
        #expect(pending.receivedPayloadLength == 101)
        // Every starting offset unmasks with the right key phase.
        for offset in [0, 1, 2, 3, 5, 100] {
            #expect(parser.pendingPayload(from: offset) == Array(payload[offset..<101]))
        }
        parser.append(Array(bytes.dropFirst(8 + 101)))
        #expect(parser.pendingFrame() == nil)
        #expect(try parser.nextFrame()?.payload == payload)
    }
}
