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
    /// As strict as `JSONValidator` (any input either parses or throws, never traps; a
    /// syntax error is reported at the same byte in the same words): at most `maxDepth`
    /// containers deep, so that no input can exhaust the stack of the recursion.
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

/// A recursive-descent parser into `JSONValue`, depth-bounded, over the tokens a
/// `JSONScanner` reads: it refuses what `JSONValidator` refuses, at the same byte and in
/// the same words.
private struct JSONParser {
    var text: JSONScanner
    let maxDepth: Int

    init(bytes: [UInt8], maxDepth: Int) {
        self.text = JSONScanner(bytes)
        self.maxDepth = maxDepth
    }

    mutating func document() throws(JSONValue.ParseError) -> JSONValue {
        do throws(JSONValidator.Problem) {
            let value = try value(depth: 0)
            text.skipWhitespace()
            guard text.offset == text.end else { throw JSONValidator.Problem.malformed(offset: text.offset, .textAfterValue) }
            return value
        } catch {
            throw JSONValue.ParseError(error.namingComments(in: text.bytes), at: text.offset)
        }
    }

    /// The value next, in `depth` open containers.
    private mutating func value(depth: Int) throws(JSONValidator.Problem) -> JSONValue {
        text.skipWhitespace()
        let start = text.offset
        if let open = text.peek(), open == UInt8(ascii: "{") || open == UInt8(ascii: "[") {
            guard depth < maxDepth else { throw .tooDeep(limit: maxDepth) }
        }
        switch try text.next() {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try text.string(decode: true))
        case UInt8(ascii: "t"): try text.literal(rest: "rue"); return .bool(true)
        case UInt8(ascii: "f"): try text.literal(rest: "alse"); return .bool(false)
        case UInt8(ascii: "n"): try text.literal(rest: "ull"); return .null
        default:
            text.offset = start
            try text.number()
            return .number(String(decoding: text.bytes[start..<text.offset], as: UTF8.self))
        }
    }

    /// The rest of an object whose `{` was read.
    private mutating func object(depth: Int) throws(JSONValidator.Problem) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        var keys: Set<String>?
        text.skipWhitespace()
        if text.take(UInt8(ascii: "}")) { return .object(members) }
        while true {
            text.skipWhitespace()
            guard try text.next() == UInt8(ascii: "\"") else { throw .malformed(offset: text.offset - 1, .memberName) }
            let key = try text.string(decode: true)
            // A set only once an object is large enough for it to pay.
            if members.count >= 16 {
                if keys == nil { keys = Set(members.map(\.key)) }
                guard keys!.insert(key).inserted else { throw .duplicateKey(key: key, path: key) }
            } else if members.contains(where: { $0.key == key }) {
                throw .duplicateKey(key: key, path: key)
            }
            text.skipWhitespace()
            guard try text.next() == UInt8(ascii: ":") else { throw .malformed(offset: text.offset - 1, .colon) }
            members.append((key, try value(depth: depth)))
            text.skipWhitespace()
            switch try text.next() {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "}"): return .object(members)
            default: throw .malformed(offset: text.offset - 1, .afterMember)
            }
        }
    }

    /// The rest of an array whose `[` was read.
    private mutating func array(depth: Int) throws(JSONValidator.Problem) -> JSONValue {
        var items: [JSONValue] = []
        text.skipWhitespace()
        if text.take(UInt8(ascii: "]")) { return .array(items) }
        while true {
            items.append(try value(depth: depth))
            text.skipWhitespace()
            switch try text.next() {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "]"): return .array(items)
            default: throw .malformed(offset: text.offset - 1, .afterElement)
            }
        }
    }
}

extension JSONValue.ParseError {
    /// `problem` as `JSONValue(parsing:)` reports it: a syntax error at its own byte, a
    /// repeated key or too deep a nesting where reading stopped (after the key, at the
    /// bracket).
    init(_ problem: JSONValidator.Problem, at offset: Int) {
        switch problem {
        case .malformed(let offset, let syntax): self.init(offset: offset, reason: syntax.rawValue)
        case .duplicateKey(let key, _): self.init(offset: offset, reason: "the key \"\(key)\" appears twice in one object")
        case .tooDeep: self.init(offset: offset, reason: problem.description)
        }
    }
}
