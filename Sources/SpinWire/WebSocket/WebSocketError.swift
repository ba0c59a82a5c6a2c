/// Why a WebSocket connection is failed once it is open (RFC 6455 §7.1.7 "Fail the
/// WebSocket Connection"). Each case maps to exactly one close code, `closeCode`, which is
/// the code the session sends in its Close frame before closing the TCP connection.
package enum WebSocketError: Error, Hashable, Sendable {
    // MARK: 1002 protocol error
    /// RFC 6455 §5.1: a server MUST close the connection on an unmasked client frame.
    case unmaskedClientFrame
    /// RFC 6455 §5.1: a client MUST close the connection on a masked server frame.
    case maskedServerFrame
    /// RFC 6455 §5.2: a reserved bit is set that no negotiated extension defines (RSV2/RSV3
    /// always; RSV1 without permessage-deflate or on a control or continuation frame, RFC 7692 §6).
    case reservedBitsSet
    /// RFC 6455 §5.2: opcodes 3-7 and 0xB-0xF are reserved.
    case unknownOpcode(UInt8)
    /// RFC 6455 §5.2: the most significant bit of a 64-bit payload length MUST be 0.
    case invalidPayloadLength
    /// RFC 6455 §5.5: control frames carry at most 125 bytes of payload.
    case controlFrameTooLong
    /// RFC 6455 §5.5: control frames MUST NOT be fragmented.
    case fragmentedControlFrame
    /// RFC 6455 §5.4: a continuation frame arrived with no fragmented message in progress.
    case continuationWithoutStart
    /// RFC 6455 §5.4: a new text/binary frame arrived while a fragmented message was in progress.
    case dataFrameDuringFragmentedMessage
    /// RFC 6455 §5.5.1: a Close payload of exactly one byte.
    case closePayloadTooShort
    /// RFC 6455 §7.4: a close code that must not appear on the wire (1004-1006, 1015, <1000, ...).
    case invalidCloseCode(UInt16)

    // MARK: 1007 invalid frame payload data
    /// RFC 6455 §8.1: a text message (or a close reason) that is not valid UTF-8.
    case invalidUTF8
    /// RFC 7692 §6.2: the compressed payload of a message is not valid DEFLATE data.
    case invalidCompressedData

    // MARK: 1009 message too big
    /// A single frame's payload exceeds `WebSocketLimits.maxFrameSize`.
    case frameTooLarge
    /// The sum of a message's frame payloads exceeds `WebSocketLimits.maxMessageSize`.
    case messageTooLarge
    /// A message has more frames than `WebSocketLimits.maxFragmentCount`.
    case tooManyFragments
    /// Inflating a compressed message passed `WebSocketLimits.maxDecompressedMessageSize`.
    case decompressedMessageTooLarge

    // MARK: 1011 internal error
    /// zlib failed to compress an outgoing message (out of memory, corrupted stream state).
    case compressionFailed

    /// The close code sent to the peer when the connection fails with this error.
    package var closeCode: WebSocketCloseCode {
        switch self {
        case .unmaskedClientFrame, .maskedServerFrame, .reservedBitsSet, .unknownOpcode,
             .invalidPayloadLength, .controlFrameTooLong, .fragmentedControlFrame,
             .continuationWithoutStart, .dataFrameDuringFragmentedMessage,
             .closePayloadTooShort, .invalidCloseCode:
            .protocolError
        case .invalidUTF8, .invalidCompressedData:
            .invalidFramePayloadData
        case .frameTooLarge, .messageTooLarge, .tooManyFragments, .decompressedMessageTooLarge:
            .messageTooBig
        case .compressionFailed:
            .internalServerError
        }
    }
}
