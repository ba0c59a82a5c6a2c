extension JSONValue {
    /// What `JSONValue(parsing:)` refused: not JSON (RFC 8259) at byte `offset`.
    package struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        package var offset: Int
        package var reason: String

        package var description: String { "not JSON at byte \(offset): \(reason)" }
    }

    /// The value `bytes` hold, parsed into its tree: a `.raw` value taken apart so that it
    /// can be compared member by member (a JSON Patch is computed between two such trees).
    /// Numbers keep their text (`.number("1.50")`), which is what a client reads; object
    /// members keep their order, and a repeated key is refused.
    ///
    /// Strict about structure (any input either parses or throws, never traps): at most
    /// `maxDepth` containers deep, so that no input can exhaust the stack of the recursion.
    package init(parsing bytes: [UInt8], maxDepth: Int = JSONValidator.defaultMaxDepth) throws(ParseError) {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        self = try parser.document()
    }

    /// The tree of a `.raw` value (parsed), the value itself otherwise.
    package func parsed() throws(ParseError) -> JSONValue {
        guard case .raw(let bytes) = self else { return self }
        return try JSONValue(parsing: bytes)
    }
}

/// A recursive-descent parser into `JSONValue`, depth-bounded.
private struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    var offset = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func document() throws(JSONValue.ParseError) -> JSONValue {
        let value = try value(depth: 0)
        skipWhitespace()
        guard offset == bytes.count else { throw fail("unexpected text after the JSON value") }
        return value
    }

    private func fail(_ reason: String) -> JSONValue.ParseError {
        JSONValue.ParseError(offset: offset, reason: reason)
    }

    private mutating func value(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
        skipWhitespace()
        guard offset < bytes.count else { throw fail("unexpected end of the text") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail("expected a value")
        }
    }

    private mutating func object(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail("objects and arrays are nested more than \(maxDepth) deep") }
        offset += 1
        var members: [(key: String, value: JSONValue)] = []
        var keys: Set<String>?
        skipWhitespace()
        if take(UInt8(ascii: "}")) { return .object(members) }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                throw fail("expected a member name in double quotes")
            }
            let key = try string()
            // A set only once an object is large enough for it to pay.
            if members.count >= 16 {
                if keys == nil { keys = Set(members.map(\.key)) }
                guard keys!.insert(key).inserted else { throw fail("the key \"\(key)\" appears twice in one object") }
            } else if members.contains(where: { $0.key == key }) {
                throw fail("the key \"\(key)\" appears twice in one object")
            }
            skipWhitespace()
            guard take(UInt8(ascii: ":")) else { throw fail("expected ':' after a member name") }
            members.append((key, try value(depth: depth)))
            skipWhitespace()
            if take(UInt8(ascii: ",")) { continue }
            guard take(UInt8(ascii: "}")) else { throw fail("expected ',' or '}' after an object member") }
            return .object(members)
        }
    }

    private mutating func array(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail("objects and arrays are nested more than \(maxDepth) deep") }
        offset += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if take(UInt8(ascii: "]")) { return .array(items) }
        while true {
            items.append(try value(depth: depth))
            skipWhitespace()
            if take(UInt8(ascii: ",")) { continue }
            guard take(UInt8(ascii: "]")) else { throw fail("expected ',' or ']' after an array element") }
            return .array(items)
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONValue.ParseError) {
        let text = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count - offset >= text.count, bytes[offset..<offset + text.count].elementsEqual(text) else {
            throw fail("expected a value (true, false or null?)")
        }
        offset += text.count
    }

    /// RFC 8259 §6's grammar; the text is kept as it is.
    private mutating func number() throws(JSONValue.ParseError) -> String {
        let start = offset
        _ = take(UInt8(ascii: "-"))
        if take(UInt8(ascii: "0")) {
            // No leading zeros.
        } else {
            guard try digits() else { throw fail("expected a digit") }
        }
        if take(UInt8(ascii: ".")) {
            guard try digits() else { throw fail("expected a digit") }
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard try digits() else { throw fail("expected a digit") }
        }
        return String(decoding: bytes[start..<offset], as: UTF8.self)
    }

    /// Skips a run of digits; whether there was one.
    private mutating func digits() throws(JSONValue.ParseError) -> Bool {
        let start = offset
        while offset < bytes.count, bytes[offset] >= UInt8(ascii: "0"), bytes[offset] <= UInt8(ascii: "9") { offset += 1 }
        return offset > start
    }

    /// A string's text, unescaped. Invalid UTF-8 is refused.
    private mutating func string() throws(JSONValue.ParseError) -> String {
        offset += 1
        let start = offset
        // The common case: no escape, one copy.
        while offset < bytes.count, bytes[offset] != UInt8(ascii: "\""), bytes[offset] != UInt8(ascii: "\\") {
            guard bytes[offset] >= 0x20 else { throw fail("a control character in a string: escape it") }
            offset += 1
        }
        guard offset < bytes.count else { throw fail("unexpected end of the text") }
        var text = Array(bytes[start..<offset])
        while bytes[offset] != UInt8(ascii: "\"") {
            // A backslash.
            offset += 1
            guard offset < bytes.count else { throw fail("unexpected end of the text") }
            let escape = bytes[offset]
            offset += 1
            if escape == UInt8(ascii: "u") {
                text += String(Character(try unicodeEscape())).utf8
            } else if let byte = JSONValidator.escapedByte(escape) {
                text.append(byte)
            } else {
                throw fail("invalid escape in a string")
            }
            while offset < bytes.count, bytes[offset] != UInt8(ascii: "\""), bytes[offset] != UInt8(ascii: "\\") {
                guard bytes[offset] >= 0x20 else { throw fail("a control character in a string: escape it") }
                text.append(bytes[offset])
                offset += 1
            }
            guard offset < bytes.count else { throw fail("unexpected end of the text") }
        }
        offset += 1
        guard let string = String(validating: text, as: UTF8.self) else { throw fail("invalid UTF-8 in a string") }
        return string
    }

    /// After `\u`: four hex digits, and a low surrogate's escape after a high one.
    private mutating func unicodeEscape() throws(JSONValue.ParseError) -> Unicode.Scalar {
        let unit = try hexQuad()
        if (0xD800..<0xDC00).contains(unit) {
            guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")) else { throw fail("a lone UTF-16 surrogate in a \\u escape") }
            let low = try hexQuad()
            guard (0xDC00..<0xE000).contains(low) else { throw fail("a lone UTF-16 surrogate in a \\u escape") }
            let scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            guard let value = Unicode.Scalar(scalar) else { throw fail("a lone UTF-16 surrogate in a \\u escape") }
            return value
        }
        guard let value = Unicode.Scalar(UInt32(unit)) else { throw fail("a lone UTF-16 surrogate in a \\u escape") }
        return value
    }

    private mutating func hexQuad() throws(JSONValue.ParseError) -> UInt16 {
        guard bytes.count - offset >= 4 else { throw fail("expected four hex digits after \\u") }
        var unit: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("expected four hex digits after \\u")
            }
            unit = unit << 4 | UInt16(digit)
            offset += 1
        }
        return unit
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard offset < bytes.count, bytes[offset] == byte else { return false }
        offset += 1
        return true
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }
}
