import Testing
@testable import SpinWire

@Suite struct WebSocketErrorTests {
    @Test(arguments: [
        (WebSocketError.unmaskedClientFrame, UInt16(1002)), (.maskedServerFrame, 1002), (.reservedBitsSet, 1002),
        (.unknownOpcode(3), 1002), (.invalidPayloadLength, 1002), (.controlFrameTooLong, 1002),
        (.fragmentedControlFrame, 1002), (.continuationWithoutStart, 1002), (.dataFrameDuringFragmentedMessage, 1002),
        (.closePayloadTooShort, 1002), (.invalidCloseCode(1005), 1002),
        (.invalidUTF8, 1007), (.invalidCompressedData, 1007),
        (.frameTooLarge, 1009), (.messageTooLarge, 1009), (.tooManyFragments, 1009), (.decompressedMessageTooLarge, 1009),
        (.compressionFailed, 1011),
    ])
    func everyError_MapsToItsCloseCode(error: WebSocketError, code: UInt16) {
        #expect(error.closeCode.rawValue == code)
        #expect(error.closeCode.isValidOnWire)
    }

    @Test func handshakeErrors_MapToHTTPStatuses() {
        let all: [WebSocketHandshakeError] = [.methodNotGet, .httpVersionTooLow, .missingUpgradeWebSocket,
                                              .missingConnectionUpgrade, .invalidKey, .unsupportedVersion]
        #expect(all.map(\.httpStatus) == [400, 400, 400, 400, 400, 426])
        #expect(all.filter { !$0.responseHeaders.isEmpty } == [.unsupportedVersion])
    }

    @Test func limitsDefaults_AreTheDocumentedValues() {
        let limits = WebSocketLimits()
        #expect(limits.maxFrameSize == 1 << 20)
        #expect(limits.maxMessageSize == 4 << 20)
        #expect(limits.maxFragmentCount == 4096)
        #expect(limits.maxDecompressedMessageSize == 4 << 20)
    }
}
