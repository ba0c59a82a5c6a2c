import SpinJSON

/// A cursor over JSON text that a validator has already accepted (the server's
/// `JSONValidator`): it reads one value of an expected kind and says nil when the value
/// there is of another kind or is one it leaves to a full decoder (a number with a
/// fraction or an exponent read as an `Int`, or one too long to be sure it fits). It never
/// traps on valid JSON, and never reports an error: whoever reads falls back to the
/// Codable path, which says what is wrong in its own words.
///
/// The tokens are `JSONScanner`'s trusted reading; this adds what an event field wants of
/// them (an `Int` that surely fits, a `Double`, an array of one kind).
package struct EventJSONReader {
    @usableFromInline var text: JSONScanner

    package init(_ bytes: [UInt8], _ range: Range<Int>) {
        self.text = JSONScanner(bytes, range)
    }

    /// Whether the value is `null` (consumed when it is).
    mutating func null() -> Bool {
        text.take(word: "null")
    }

    mutating func bool() -> Bool? {
        if text.take(word: "true") { return true }
        if text.take(word: "false") { return false }
        return nil
    }

    /// An integer of at most 18 digits (so it fits an `Int`), without fraction nor exponent.
    mutating func int() -> Int? {
        var position = text.offset
        let negative = text.peek(at: position) == UInt8(ascii: "-")
        if negative { position += 1 }
        let start = position
        var value = 0
        while let byte = text.peek(at: position), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            value = value &* 10 &+ Int(byte &- UInt8(ascii: "0"))
            position += 1
        }
        guard position > start, position - start <= 18, !JSONScanner.isNumberByte(text.peek(at: position)) else { return nil }
        text.offset = position
        return negative ? -value : value
    }

    /// A finite number, rounded as `Double(String)` rounds it (to nearest).
    mutating func double() -> Double? {
        var position = text.offset
        while JSONScanner.isNumberByte(text.peek(at: position)) { position += 1 }
        guard position > text.offset, let value = Double(String(decoding: text.bytes[text.offset..<position], as: UTF8.self)),
              value.isFinite else { return nil }
        text.offset = position
        return value
    }

    /// A string, unescaped.
    mutating func string() -> String? {
        text.trustedString()
    }

    /// `[a, b, ...]`, each item read by `item`; nil when one is not what it reads.
    mutating func array<Item>(_ item: (inout EventJSONReader) -> Item?) -> [Item]? {
        guard text.take(UInt8(ascii: "[")) else { return nil }
        text.skipWhitespace()
        var items: [Item] = []
        if text.take(UInt8(ascii: "]")) { return items }
        while true {
            text.skipWhitespace()
            guard let value = item(&self) else { return nil }
            items.append(value)
            text.skipWhitespace()
            if text.take(UInt8(ascii: ",")) { continue }
            return text.take(UInt8(ascii: "]")) ? items : nil
        }
    }

    /// `read`'s value, when it takes all of the text (what a member's value range holds).
    mutating func whole<Value>(_ read: (inout EventJSONReader) -> Value?) -> Value? {
        text.skipWhitespace()
        guard let value = read(&self) else { return nil }
        text.skipWhitespace()
        return text.offset == text.end ? value : nil
    }
}

/// A field value the server reads and writes as JSON without a `Decoder` or `Encoder`:
/// `Int`, `String`, `Bool`, `Double`, and optionals and arrays of them. What it writes
/// is what the server's `OrderedJSONEncoder` writes for the same value, byte for byte:
/// strings go through the one escaper both use (`JSONValue.writeString`), and numbers
/// are formatted as the encoder formats them (`HostedEventCodingTests` checks it).
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
        JSONValue.writeString(self, into: &json)
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
    /// As `JSONValue.numberText` writes it; no NaN nor infinity (JSON has none).
    func write(into json: inout [UInt8]) -> Bool {
        guard let text = JSONValue.numberText(self) else { return false }
        json += text.utf8
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
