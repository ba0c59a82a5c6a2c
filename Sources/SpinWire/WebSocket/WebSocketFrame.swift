/// A frame opcode (RFC 6455 §5.2). Reserved opcodes are not representable: the parser
/// rejects them with `WebSocketError.unknownOpcode`.
package enum WebSocketOpcode: UInt8, Hashable, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Control frames have the high bit of the opcode set (RFC 6455 §5.5).
    package var isControl: Bool { rawValue & 0x8 != 0 }
}

/// One parsed WebSocket frame. `payload` is already unmasked.
package struct WebSocketFrame: Hashable, Sendable {
    package var fin: Bool
    /// RSV1: "per-message compressed" when permessage-deflate is negotiated (RFC 7692 §6).
    package var rsv1: Bool
    package var opcode: WebSocketOpcode
    /// The masking key the frame carried, if it was masked.
    package var maskingKey: UInt32?
    package var payload: [UInt8]

    package init(fin: Bool = true, rsv1: Bool = false, opcode: WebSocketOpcode,
                 maskingKey: UInt32? = nil, payload: [UInt8]) {
        self.fin = fin
        self.rsv1 = rsv1
        self.opcode = opcode
        self.maskingKey = maskingKey
        self.payload = payload
    }
}

/// Which end of the connection this endpoint is. Servers receive masked frames and send
/// unmasked ones; clients the reverse (RFC 6455 §5.1).
package enum WebSocketRole: Hashable, Sendable {
    case server
    case client
}
