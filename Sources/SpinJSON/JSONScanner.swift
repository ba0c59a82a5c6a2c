/// JSON text (RFC 8259) read token by token over its UTF-8 bytes: the one lexical layer
/// under every JSON reader the package writes itself (the validator, `JSONValue(parsing:)`
/// and so the config file and machine files, the raw text walk of `JSONPatch.diff`, the
/// event field reader). Values of a Swift type (`Codable` states and events) are
/// decoded by Foundation's `JSONDecoder`.
///
/// It reads in two ways:
/// - **strictly** (the methods that throw): every byte checked as RFC 8259 and RFC 3629
///   say (escapes, surrogate pairs, UTF-8 without overlong forms, the number grammar); a
///   problem is `.malformed` with the byte offset where the text stops being JSON, never a
///   trap. What comes from outside goes through these once.
/// - **trusted** (`trusted…`, `take(word:)`): for text a strict pass accepted already, or
///   a `.raw` value whose maker vouches for it. A plain byte loop, as fast as the hot path
///   needs; it never traps on any input, and says nil or false where it cannot read.
///
/// It holds no structure: the readers keep their own (a stack, a recursion, a range).
/// `end` bounds the reading, so that a reader can be given one value of a larger text.
///
/// ```swift
/// var scanner = JSONScanner(Array(#" "a\n" "#.utf8))
/// scanner.skipWhitespace()
/// _ = try scanner.next()                       // the opening quote
/// try scanner.string(decode: true)             // "a\n"
/// ```
package struct JSONScanner {
    /// The whole text.
    @usableFromInline package let bytes: [UInt8]
    /// Where reading is: the next byte to read.
    @usableFromInline package var offset: Int
    /// One past the last byte this scanner reads.
    @usableFromInline package let end: Int

    /// A scanner of `range` of `bytes` (clamped to them), at its start.
    @inlinable
    package init(_ bytes: [UInt8], _ range: Range<Int>) {
        self.bytes = bytes
        self.end = min(max(range.upperBound, 0), bytes.count)
        self.offset = min(max(range.lowerBound, 0), end)
    }

    /// A scanner of all of `bytes`, at the first.
    @inlinable
    package init(_ bytes: [UInt8]) {
        self.init(bytes, 0..<bytes.count)
    }

    // MARK: - Bytes and whitespace

    /// The byte at `position`; nil at or past the end.
    @inlinable @inline(__always)
    package func peek(at position: Int) -> UInt8? {
        // `end` is within `bytes` and readers only move forward from within them, so
        // the one comparison is the bounds check.
        guard position < end, position >= 0 else { return nil }
        return bytes.withUnsafeBufferPointer { $0[position] }
    }

    /// The next byte, not read; nil at the end.
    @inlinable @inline(__always)
    package func peek() -> UInt8? {
        peek(at: offset)
    }

    /// Reads `byte` when it is next; whether it was.
    @inlinable @inline(__always)
    package mutating func take(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        offset += 1
        return true
    }

    /// The next byte, read; at the end, `.end` is the problem.
    @inlinable @inline(__always)
    package mutating func next() throws(JSONValidator.Problem) -> UInt8 {
        guard let byte = peek() else { throw .malformed(offset: offset, .end) }
        offset += 1
        return byte
    }

    /// Reads past space, tab, line feed and carriage return (RFC 8259 §2).
    @inlinable @inline(__always)
    package mutating func skipWhitespace() {
        while let byte = peek(), Self.isWhitespace(byte) { offset += 1 }
    }

    /// RFC 8259 §2: space, tab, line feed, carriage return.
    @inlinable @inline(__always)
    package static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    // MARK: - Literals

    /// Reads `word` (`null`, `true`, `false`, or any) when it is next; whether it was.
    @inlinable
    package mutating func take(word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard offset + count <= end else { return false }
        let matches = word.withUTF8Buffer { expected in (0..<count).allSatisfy { bytes[offset + $0] == expected[$0] } }
        if matches { offset += count }
        return matches
    }

    /// The rest of `true`, `false` or `null` after its first letter: `.literal` where it
    /// is not.
    package mutating func literal(rest: StaticString) throws(JSONValidator.Problem) {
        let start = offset
        guard take(word: rest) else { throw .malformed(offset: start, .literal) }
    }

    // MARK: - Numbers

    /// One number, RFC 8259 §6: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`; its
    /// text is `bytes[start..<offset]` after.
    package mutating func number() throws(JSONValidator.Problem) {
        if peek() == UInt8(ascii: "-") { offset += 1 }
        switch peek() ?? 0 {
        case UInt8(ascii: "0"): offset += 1
        case UInt8(ascii: "1")...UInt8(ascii: "9"): try digits()
        default: throw .malformed(offset: offset, .value)
        }
        if peek() == UInt8(ascii: ".") {
            offset += 1
            try digits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            offset += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { offset += 1 }
            try digits()
        }
    }

    /// One or more decimal digits.
    private mutating func digits() throws(JSONValidator.Problem) {
        let start = offset
        while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { offset += 1 }
        guard offset > start else { throw .malformed(offset: offset, .digit) }
    }

    /// Whether `byte` may be part of a number's text (a digit, a sign, a point, an
    /// exponent): how far a trusted reader takes a number.
    @inlinable
    package static func isNumberByte(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"),
             UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return true
        default: return false
        }
    }

    // MARK: - Strings, strictly

    /// The rest of a string whose opening quote was read, up to and past its closing
    /// one; its text, unescaped, when `decode` (else "").
    package mutating func string(decode: Bool) throws(JSONValidator.Problem) -> String {
        // The text is made from the bytes as they are, unless there is an escape: then
        // it is built up from the first one on (a key rarely has one).
        let first = offset
        var text: [UInt8] = []
        var escaped = false
        while true {
            let byte = try next()
            switch byte {
            case UInt8(ascii: "\""):
                guard decode else { return "" }
                return escaped ? String(decoding: text, as: UTF8.self)
                               : String(decoding: bytes[first..<(offset - 1)], as: UTF8.self)
            case UInt8(ascii: "\\"):
                let escape = try next()
                guard decode else {
                    guard escape == UInt8(ascii: "u") || Self.escapedByte(escape) != nil else {
                        throw .malformed(offset: offset - 1, .escape)
                    }
                    if escape == UInt8(ascii: "u") { _ = try unicodeEscape() }
                    continue
                }
                if !escaped {
                    escaped = true
                    text += bytes[first..<(offset - 2)]
                }
                if escape == UInt8(ascii: "u") {
                    text += try unicodeEscape().utf8
                } else if let byte = Self.escapedByte(escape) {
                    text.append(byte)
                } else {
                    throw .malformed(offset: offset - 1, .escape)
                }
            case 0x00..<0x20:
                throw .malformed(offset: offset - 1, .controlCharacter)  // RFC 8259 §7: control characters are escaped
            case 0x80...:
                let start = offset - 1
                try utf8Sequence(lead: byte)
                if escaped { text += bytes[start..<offset] }
            default:
                if escaped { text.append(byte) }
            }
        }
    }

    /// `XXXX` after `\u`, and the `\uXXXX` low surrogate that must follow a high one:
    /// the scalar they escape. A lone surrogate (a high one not followed by a low one,
    /// or a low one first) is malformed: RFC 8259 §8.2 leaves such strings
    /// unpredictable and I-JSON (RFC 7493 §2.1) forbids them, and Foundation's parser,
    /// which decodes what the validator accepts, refuses them.
    private mutating func unicodeEscape() throws(JSONValidator.Problem) -> Unicode.Scalar {
        let start = offset - 2   // the backslash
        let unit = UInt32(try hexQuad())
        switch unit {
        case 0xD800..<0xDC00:
            guard offset + 1 < end, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                throw .malformed(offset: start, .loneSurrogate)
            }
            offset += 2
            let low = UInt32(try hexQuad())
            guard (0xDC00..<0xE000).contains(low) else { throw .malformed(offset: start, .loneSurrogate) }
            return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
        case 0xDC00..<0xE000:
            throw .malformed(offset: start, .loneSurrogate)
        default:
            return Unicode.Scalar(unit)!
        }
    }

    /// The continuation bytes of one UTF-8 scalar whose `lead` byte was read: no
    /// overlong form, no surrogate, nothing above U+10FFFF (RFC 3629 §4).
    private mutating func utf8Sequence(lead: UInt8) throws(JSONValidator.Problem) {
        let start = offset - 1
        let count: Int
        var range: ClosedRange<UInt8> = 0x80...0xBF   // what the second byte may be
        switch lead {
        case 0xC2...0xDF: count = 1
        case 0xE0: (count, range) = (2, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: count = 2
        case 0xED: (count, range) = (2, 0x80...0x9F)
        case 0xF0: (count, range) = (3, 0x90...0xBF)
        case 0xF1...0xF3: count = 3
        case 0xF4: (count, range) = (3, 0x80...0x8F)
        default: throw .malformed(offset: start, .utf8)
        }
        for index in 0..<count {
            guard let byte = peek(), index == 0 ? range.contains(byte) : (0x80...0xBF).contains(byte) else {
                throw .malformed(offset: start, .utf8)
            }
            offset += 1
        }
    }

    private mutating func hexQuad() throws(JSONValidator.Problem) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = try next()
            guard let digit = Self.hexDigit(byte) else { throw .malformed(offset: offset - 1, .hexDigits) }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    /// The byte a one-character escape stands for (`n` in `\n`: a line feed); nil for `u`
    /// and for what is no escape. With `u`, these are the bytes that may follow a
    /// backslash (RFC 8259 §7).
    package static func escapedByte(_ escape: UInt8) -> UInt8? {
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escape
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }

    /// The value of a hex digit (either case); nil for what is none.
    @inlinable
    package static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
