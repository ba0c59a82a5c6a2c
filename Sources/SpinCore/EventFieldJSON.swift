/// A cursor over JSON text that a validator has already accepted (the server's
/// `JSONValidator`): it reads one value of an expected kind and says nil when the value
/// there is of another kind or is one it leaves to a full decoder (a number with a
/// fraction or an exponent read as an `Int`, or one too long to be sure it fits). It never
/// traps on valid JSON, and never reports an error: whoever reads falls back to the
/// Codable path, which says what is wrong in its own words.
package struct EventJSONReader {
    let bytes: [UInt8]
    var offset: Int
    let end: Int

    package init(_ bytes: [UInt8], _ range: Range<Int>) {
        self.bytes = bytes
        self.offset = range.lowerBound
        self.end = range.upperBound
    }

    /// Whether the value is `null` (consumed when it is).
    mutating func null() -> Bool {
        literal("null")
    }

    mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// An integer of at most 18 digits (so it fits an `Int`), without fraction nor exponent.
    mutating func int() -> Int? {
        var position = offset
        let negative = peek(position) == UInt8(ascii: "-")
        if negative { position += 1 }
        let start = position
        var value = 0
        while let byte = peek(position), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            value = value &* 10 &+ Int(byte &- UInt8(ascii: "0"))
            position += 1
        }
        guard position > start, position - start <= 18, !isNumberByte(peek(position)) else { return nil }
        offset = position
        return negative ? -value : value
    }

    /// A finite number, rounded as `Double(String)` rounds it (to nearest).
    mutating func double() -> Double? {
        var position = offset
        while isNumberByte(peek(position)) { position += 1 }
        guard position > offset, let value = Double(String(decoding: bytes[offset..<position], as: UTF8.self)),
              value.isFinite else { return nil }
        offset = position
        return value
    }

    /// A string, unescaped.
    mutating func string() -> String? {
        guard peek(offset) == UInt8(ascii: "\"") else { return nil }
        var position = offset + 1
        var escaped = false
        while let byte = peek(position), byte != UInt8(ascii: "\"") {
            if byte == UInt8(ascii: "\\") {
                escaped = true
                position += 1   // the escaped byte is never the closing quote
            }
            position += 1
        }
        guard position < end else { return nil }
        let text = escaped ? Self.unescape(bytes[(offset + 1)..<position])
                           : String(decoding: bytes[(offset + 1)..<position], as: UTF8.self)
        offset = position + 1
        return text
    }

    /// `[a, b, ...]`, each item read by `item`; nil when one is not what it reads.
    mutating func array<Item>(_ item: (inout EventJSONReader) -> Item?) -> [Item]? {
        guard peek(offset) == UInt8(ascii: "[") else { return nil }
        offset += 1
        skipWhitespace()
        var items: [Item] = []
        if peek(offset) == UInt8(ascii: "]") {
            offset += 1
            return items
        }
        while true {
            skipWhitespace()
            guard let value = item(&self) else { return nil }
            items.append(value)
            skipWhitespace()
            switch peek(offset) {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"):
                offset += 1
                return items
            default: return nil
            }
        }
    }

    /// `read`'s value, when it takes all of the text (what a member's value range holds).
    mutating func whole<Value>(_ read: (inout EventJSONReader) -> Value?) -> Value? {
        skipWhitespace()
        guard let value = read(&self) else { return nil }
        skipWhitespace()
        return offset == end ? value : nil
    }

    private func peek(_ position: Int) -> UInt8? {
        position < end ? bytes[position] : nil
    }

    private func isNumberByte(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"),
             UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return true
        default: return false
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard offset + count <= end else { return false }
        let matches = word.withUTF8Buffer { expected in (0..<count).allSatisfy { bytes[offset + $0] == expected[$0] } }
        if matches { offset += count }
        return matches
    }

    private mutating func skipWhitespace() {
        while let byte = peek(offset), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { offset += 1 }
    }

    /// The text of a valid JSON string's inside (RFC 8259 §7), its escapes undone.
    private static func unescape(_ text: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var position = text.startIndex
        func hex(_ at: Int) -> UInt32 {
            text[at..<(at + 4)].reduce(0) { value, byte in
                let digit: UInt8 = switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
                default: byte &- UInt8(ascii: "0")
                }
                return value << 4 | UInt32(digit)
            }
        }
        while position < text.endIndex {
            let byte = text[position]
            position += 1
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                continue
            }
            let escape = text[position]
            position += 1
            switch escape {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex(position)
                position += 4
                if (0xD800..<0xDC00).contains(scalar) {   // a high surrogate: the validator saw its low one follow
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (hex(position + 2) - 0xDC00)
                    position += 6
                }
                UTF8.encode(Unicode.Scalar(scalar) ?? "\u{FFFD}") { out.append($0) }
            default: out.append(escape)   // `"`, `\` and `/` stand for themselves
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A field value the server reads and writes as JSON without a `Decoder` or `Encoder`:
/// `Int`, `String`, `Bool`, `Double`, and optionals and arrays of them. What it writes
/// is what the server's `OrderedJSONEncoder` writes for the same value, byte for byte
/// (`EventJSONTests` checks it).
protocol EventFieldJSON: SendableMetatype {
    /// The value at the reader, or nil when it is not one (or not one this reads).
    static func read(_ reader: inout EventJSONReader) -> Self?
    /// Appends the value's JSON; false (perhaps after writing part of it) when it has none.
    func write(into json: inout [UInt8]) -> Bool
}

extension Int: EventFieldJSON {
    static func read(_ reader: inout EventJSONReader) -> Int? { reader.int() }
    func write(into json: inout [UInt8]) -> Bool {
        json += String(self).utf8
        return true
    }
}

extension String: EventFieldJSON {
    static func read(_ reader: inout EventJSONReader) -> String? { reader.string() }
    func write(into json: inout [UInt8]) -> Bool {
        EventJSONText.write(string: self, into: &json)
        return true
    }
}

extension Bool: EventFieldJSON {
    static func read(_ reader: inout EventJSONReader) -> Bool? { reader.bool() }
    func write(into json: inout [UInt8]) -> Bool {
        json += (self ? "true" : "false").utf8
        return true
    }
}

extension Double: EventFieldJSON {
    static func read(_ reader: inout EventJSONReader) -> Double? { reader.double() }
    /// Integral values within ±2^53 without a fraction (`1` for `1.0`), others in Swift's
    /// shortest round-trip form; no NaN nor infinity (JSON has none).
    func write(into json: inout [UInt8]) -> Bool {
        guard isFinite else { return false }
        if abs(self) <= 9_007_199_254_740_992, let integral = Int64(exactly: self) {
            json += String(integral).utf8
        } else {
            json += "\(self)".utf8
        }
        return true
    }
}

extension Optional: EventFieldJSON where Wrapped: EventFieldJSON {
    static func read(_ reader: inout EventJSONReader) -> Wrapped?? {
        reader.null() ? .some(nil) : Wrapped.read(&reader).map { .some($0) }
    }
    func write(into json: inout [UInt8]) -> Bool {
        guard let self else {
            json += "null".utf8
            return true
        }
        return self.write(into: &json)
    }
}

extension Array: EventFieldJSON where Element: EventFieldJSON {
    static func read(_ reader: inout EventJSONReader) -> [Element]? { reader.array(Element.read) }
    func write(into json: inout [UInt8]) -> Bool {
        json.append(UInt8(ascii: "["))
        for (index, item) in enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            guard item.write(into: &json) else { return false }
        }
        json.append(UInt8(ascii: "]"))
        return true
    }
}

/// JSON strings as the server writes them (RFC 8259 §7): quote, backslash and control
/// characters escaped, and `<`, `>` and `&` too (a value may go inside an HTML page).
enum EventJSONText {
    static func write(string: String, into json: inout [UInt8]) {
        json.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            if byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte != UInt8(ascii: "<"),
               byte != UInt8(ascii: ">"), byte != UInt8(ascii: "&") {
                json.append(byte)
                continue
            }
            json.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): json.append(byte)
            case 0x0A: json.append(UInt8(ascii: "n"))
            case 0x0D: json.append(UInt8(ascii: "r"))
            case 0x09: json.append(UInt8(ascii: "t"))
            case 0x08: json.append(UInt8(ascii: "b"))
            case 0x0C: json.append(UInt8(ascii: "f"))
            default:
                json += "u00".utf8
                json.append(hexDigits[Int(byte >> 4)])
                json.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        json.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

/// How one field's value is read and written as JSON: made once, for a field of an
/// `EventFieldJSON` type (the one dynamic check is when the table is built).
struct EventFieldCoding<Value>: Sendable {
    let read: @Sendable (inout EventJSONReader) -> Value?
    let write: @Sendable (Value, inout [UInt8]) -> Bool

    /// The coding of `Value`, when it is an `EventFieldJSON` type.
    static func of(_: Value.Type) -> EventFieldCoding? {
        guard let coded = Value.self as? any EventFieldJSON.Type else { return nil }
        func coding<Coded: EventFieldJSON>(_: Coded.Type) -> Any {
            EventFieldCoding<Coded>(read: { Coded.read(&$0) }, write: { $0.write(into: &$1) })
        }
        return coding(coded) as? EventFieldCoding
    }
}
