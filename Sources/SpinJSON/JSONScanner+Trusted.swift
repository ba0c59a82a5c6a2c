extension JSONScanner {
    /// Reads past a string at the opening quote, up to and past its closing one, without
    /// checking what is inside; whether it has an escape. Nil (and not moved) when there
    /// is no string here or it does not end.
    @inlinable
    package mutating func skipTrustedString() -> Bool? {
        guard peek() == UInt8(ascii: "\"") else { return nil }
        var position = offset + 1
        var escaped = false
        while let byte = peek(at: position), byte != UInt8(ascii: "\"") {
            if byte == UInt8(ascii: "\\") {
                escaped = true
                position += 1   // the escaped byte is never the closing quote
            }
            position += 1
        }
        guard position < end else { return nil }
        offset = position + 1
        return escaped
    }

    /// The text of the string at the opening quote, unescaped, read past; nil when there
    /// is none.
    @inlinable
    package mutating func trustedString() -> String? {
        let start = offset
        guard let escaped = skipTrustedString() else { return nil }
        let inside = bytes[(start + 1)..<(offset - 1)]
        return escaped ? Self.unescape(inside) : String(decoding: inside, as: UTF8.self)
    }

    /// Reads past the value here (a string, an object or array with all it holds, a
    /// number or a literal up to the next delimiter) without checking it; false (and
    /// not moved) when there is none or it does not end.
    package mutating func skipTrustedValue() -> Bool {
        let start = offset
        switch peek() {
        case nil:
            return false
        case UInt8(ascii: "\"")?:
            return skipTrustedString() != nil
        case UInt8(ascii: "{")?, UInt8(ascii: "[")?:
            var depth = 0
            while let byte = peek() {
                switch byte {
                case UInt8(ascii: "\""):
                    guard skipTrustedString() != nil else {
                        offset = start
                        return false
                    }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 {
                        offset += 1
                        return true
                    }
                default:
                    break
                }
                offset += 1
            }
            offset = start
            return false
        default:
            // A number or a literal: up to the next delimiter.
            while let byte = peek() {
                switch byte {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ":"):
                    return offset > start
                default:
                    if Self.isWhitespace(byte) { return offset > start }
                    offset += 1
                }
            }
            return true
        }
    }

    /// The text of a valid JSON string's inside (RFC 8259 §7), its escapes undone. A
    /// broken escape (which a strict pass refuses) gives U+FFFD or its bytes, not a trap.
    @usableFromInline
    package static func unescape(_ text: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var position = text.startIndex
        func hex(_ at: Int) -> UInt32? {
            guard at + 4 <= text.endIndex else { return nil }
            var value: UInt32 = 0
            for byte in text[at..<(at + 4)] {
                guard let digit = hexDigit(byte) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        while position < text.endIndex {
            let byte = text[position]
            position += 1
            guard byte == UInt8(ascii: "\\"), position < text.endIndex else {
                out.append(byte)
                continue
            }
            let escape = text[position]
            position += 1
            guard escape == UInt8(ascii: "u") else {
                out.append(escapedByte(escape) ?? escape)
                continue
            }
            var scalar = hex(position) ?? 0xFFFD
            position = min(position + 4, text.endIndex)
            if (0xD800..<0xDC00).contains(scalar), let low = hex(position + 2) {   // a strict pass saw its low one follow
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low &- 0xDC00)
                position += 6
            }
            UTF8.encode(Unicode.Scalar(scalar) ?? "\u{FFFD}") { out.append($0) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension JSONValue {
    /// Valid JSON text without the whitespace between its tokens (strings kept as
    /// written, escapes and all).
    package static func compacted(_ json: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count)
        var scanner = JSONScanner(json)
        while let byte = scanner.peek() {
            if byte == UInt8(ascii: "\"") {
                let start = scanner.offset
                guard scanner.skipTrustedString() != nil else {
                    out += json[start...]   // a string that does not end: as it is
                    break
                }
                out += json[start..<scanner.offset]
            } else {
                if !JSONScanner.isWhitespace(byte) { out.append(byte) }
                scanner.offset += 1
            }
        }
        return out
    }
}
