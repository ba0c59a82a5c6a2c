import Testing
@testable import SpinWire

@Suite struct WebSocketMaskingTests {
    @Test func rfcMaskingKey_MasksHelloToTheRFCBytes() {
        var bytes = Array("Hello".utf8)
        WebSocketMasking.apply(key: 0x37FA_213D, to: &bytes)
        #expect(bytes == [0x7f, 0x9f, 0x4d, 0x51, 0x58])
        WebSocketMasking.apply(key: 0x37FA_213D, to: &bytes)
        #expect(bytes == Array("Hello".utf8))
    }

    @Test func wordAtATimeMasking_AgreesWithTheBytewiseDefinition_AtEveryLength() {
        let key: UInt32 = 0xDEAD_BEEF
        let keyBytes: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF]
        for length in 0..<40 {
            let plain = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            var masked = plain
            WebSocketMasking.apply(key: key, to: &masked)
            // RFC 6455 §5.3: j = i MOD 4; transformed-octet-i = original-octet-i XOR masking-key-octet-j
            #expect(masked == plain.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] })
        }
    }
}
