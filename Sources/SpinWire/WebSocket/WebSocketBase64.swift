/// Standard base64 (RFC 4648 §4, with padding), just what the handshake needs.
enum WebSocketBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)],
                    alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let n = UInt32(bytes[i]) << 16
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
        case 2:
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], UInt8(ascii: "=")]
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Strict decoding: length a multiple of 4, padding only at the end, no whitespace,
    /// and unused bits of the last symbol zero (so one byte string has one encoding).
    static func decode(_ string: String) -> [UInt8]? {
        let symbols = Array(string.utf8)
        guard symbols.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < symbols.count {
            let isLast = index + 4 == symbols.count
            var values: [UInt32] = []
            var padding = 0
            for offset in 0..<4 {
                let symbol = symbols[index + offset]
                if symbol == UInt8(ascii: "=") {
                    guard isLast, offset >= 2 else { return nil }
                    padding += 1
                    values.append(0)
                    continue
                }
                guard padding == 0, let value = value(of: symbol) else { return nil }
                values.append(value)
            }
            let n = values[0] << 18 | values[1] << 12 | values[2] << 6 | values[3]
            switch padding {
            case 0: out += [UInt8(n >> 16), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
            case 1:
                guard n & 0xFF == 0 else { return nil }
                out += [UInt8(n >> 16), UInt8(n >> 8 & 0xFF)]
            default:
                guard n & 0xFFFF == 0 else { return nil }
                out.append(UInt8(n >> 16))
            }
            index += 4
        }
        return out
    }

    private static func value(of symbol: UInt8) -> UInt32? {
        switch symbol {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(symbol - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(symbol - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(symbol - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
