/// Serialises WebSocket frames (RFC 6455 §5.2) using the minimal length encoding.
/// A server sends unmasked frames; a client passes a fresh random `maskingKey` per frame
/// (RFC 6455 §5.3).
package enum WebSocketFrameEncoder {
    /// The bytes of one frame carrying `payload`.
    package static func encode(opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer,
                               fin: Bool = true, rsv1: Bool = false,
                               maskingKey: UInt32? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 14)
        appendHeader(opcode: opcode, payloadLength: payload.count, fin: fin, rsv1: rsv1,
                     maskingKey: maskingKey, to: &out)
        let payloadStart = out.count
        out.append(contentsOf: payload)
        if let maskingKey, !payload.isEmpty {
            out.withUnsafeMutableBytes { buffer in
                let base = buffer.baseAddress! + payloadStart
                WebSocketMasking.apply(key: maskingKey, from: base, to: base, count: payload.count)
            }
        }
        return out
    }

    /// The bytes of one frame carrying `payload`.
    package static func encode(opcode: WebSocketOpcode, payload: [UInt8], fin: Bool = true,
                               rsv1: Bool = false, maskingKey: UInt32? = nil) -> [UInt8] {
        payload.withUnsafeBytes {
            encode(opcode: opcode, payload: $0, fin: fin, rsv1: rsv1, maskingKey: maskingKey)
        }
    }

    /// The bytes of `frame` (masked with its `maskingKey`, if any).
    package static func encode(_ frame: WebSocketFrame) -> [UInt8] {
        encode(opcode: frame.opcode, payload: frame.payload, fin: frame.fin, rsv1: frame.rsv1,
               maskingKey: frame.maskingKey)
    }

    /// Appends a frame header: 7-bit length up to 125, 16-bit up to 65535, else 64-bit.
    package static func appendHeader(opcode: WebSocketOpcode, payloadLength: Int, fin: Bool,
                                     rsv1: Bool, maskingKey: UInt32?, to out: inout [UInt8]) {
        precondition(payloadLength >= 0)
        out.append((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        switch payloadLength {
        case 0...125:
            out.append(maskBit | UInt8(payloadLength))
        case 126...0xFFFF:
            out.append(maskBit | 126)
            out.append(UInt8(payloadLength >> 8))
            out.append(UInt8(payloadLength & 0xFF))
        default:
            out.append(maskBit | 127)
            let length = UInt64(payloadLength)
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8((length >> UInt64(shift)) & 0xFF))
            }
        }
        if let maskingKey {
            out.append(UInt8(maskingKey >> 24))
            out.append(UInt8((maskingKey >> 16) & 0xFF))
            out.append(UInt8((maskingKey >> 8) & 0xFF))
            out.append(UInt8(maskingKey & 0xFF))
        }
    }
}
