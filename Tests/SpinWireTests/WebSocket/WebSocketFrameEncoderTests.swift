import Testing
@testable import SpinWire

@Suite struct WebSocketFrameEncoderTests {
    @Test func serverFrames_AreUnmasked_AndMatchRFCBytes() {
        #expect(WebSocketFrameEncoder.encode(opcode: .text, payload: Array("Hello".utf8))
                == WebSocketFixture.bytes("rfc6455-unmasked-hello"))
        #expect(WebSocketFrameEncoder.encode(opcode: .ping, payload: Array("Hello".utf8))
                == WebSocketFixture.bytes("rfc6455-unmasked-ping"))
    }

    @Test func maskedFrames_MatchRFCBytes() {
        #expect(WebSocketFrameEncoder.encode(opcode: .text, payload: Array("Hello".utf8), maskingKey: 0x37FA_213D)
                == WebSocketFixture.bytes("rfc6455-masked-hello"))
        #expect(WebSocketFrameEncoder.encode(opcode: .pong, payload: Array("Hello".utf8), maskingKey: 0x37FA_213D)
                == WebSocketFixture.bytes("rfc6455-masked-pong"))
    }

    @Test func fragmentAndRsv1Bits_AreWritten() {
        #expect(WebSocketFrameEncoder.encode(opcode: .text, payload: Array("Hel".utf8), fin: false)
                == WebSocketFixture.lines("rfc6455-fragmented-hello")[0])
        #expect(WebSocketFrameEncoder.encode(opcode: .text, payload: [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], rsv1: true)
                == WebSocketFixture.bytes("rfc7692-compressed-hello"))
    }

    @Test(arguments: [0, 1, 7, 8, 125, 126, 127, 65535, 65536, 100_003])
    func encodeThenParse_RoundTrips_AtEveryLengthBoundary(length: Int) throws {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let masked = WebSocketFrameEncoder.encode(opcode: .binary, payload: payload, maskingKey: 0xA1B2_C3D4)
        #expect(parseAll(masked, role: .server).frames.first?.payload == payload)
        let unmasked = WebSocketFrameEncoder.encode(opcode: .binary, payload: payload)
        #expect(parseAll(unmasked, role: .client).frames.first?.payload == payload)
        let expectedHeader = length <= 125 ? 2 : length <= 65535 ? 4 : 10
        #expect(unmasked.count == expectedHeader + length)
    }
}
