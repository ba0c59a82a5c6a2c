/// The server's JSON validator: one pass over a document that checks RFC 8259 syntax
/// (strict: UTF-8 without a byte order mark, number grammar, no trailing comma), a depth
/// limit, and that no object repeats a key. Request bodies and stream messages go through
/// it once; a decoder then reads the document it accepted (no second parser).
///
/// RFC 8259 §4 only says names "SHOULD be unique"; parsers disagree on what a duplicate
/// means (Foundation's `JSONSerialization` keeps one silently, others the other), so a
/// body with one can mean two things to two readers. The server refuses it instead
/// (400 `malformed_json`). Keys compare after unescaping: `"a"` and `"\u0061"` are the
/// same key, and compare as Swift strings do (canonically equivalent keys are equal, as
/// they are to the decoder that reads them).
///
/// An explicit stack (no recursion, so no input can overflow the call stack), at most
/// `maxDepth` containers deep. It never traps on any input: what is not JSON is reported
/// as `.malformed` with the byte offset. That includes a trailing comma (`[1,]`), UTF-16
/// and UTF-32 text and a byte order mark, which Foundation's parser on Linux lets through
/// and RFC 8259 does not (§8.1: UTF-8, no BOM).
///
/// ```swift
/// JSONValidator.firstProblem(in: Array(#"[{"a":1},{"b":2,"b":3}]"#.utf8))
/// // .duplicateKey(key: "b", path: "[1].b")
/// ```
package enum JSONValidator {
    package enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// `key` appears a second time in one object; `path` names that member
        /// (`[1].b`, `event.left`, `a.b[0].c`).
        case duplicateKey(key: String, path: String)
        /// More than `limit` objects and arrays are nested.
        case tooDeep(limit: Int)
        /// Not JSON at byte `offset`, and what is wrong there.
        case malformed(offset: Int, Syntax)

        package var description: String {
            switch self {
            case .duplicateKey(let key, let path):
                "the key \"\(key)\" appears twice in one object (at \(path)); each key may appear once"
            case .tooDeep(let limit): "objects and arrays are nested more than \(limit) deep"
            case .malformed(let offset, let syntax): "not JSON (RFC 8259) at byte \(offset): \(syntax.rawValue)"
            }
        }

        /// The problem as a person editing `bytes` looks for it: a syntax error at its
        /// line and column (`line 12, column 7: expected ',' or '}' after an object
        /// member`), the others as `description`.
        package func located(in bytes: [UInt8]) -> String {
            guard case .malformed(let offset, let syntax) = self else { return description }
            return "\(TextPosition(offset: offset, in: bytes)): \(syntax.rawValue)"
        }
    }

    /// What a malformed document has where it stops being JSON, as a message.
    package enum Syntax: String, Sendable {
        case value = "expected a value"
        case literal = "expected a value (true, false or null?)"
        case digit = "expected a digit"
        case memberName = "expected a member name in double quotes"
        case colon = "expected ':' after a member name"
        case afterMember = "expected ',' or '}' after an object member"
        case afterElement = "expected ',' or ']' after an array element"
        case textAfterValue = "unexpected text after the JSON value"
        case end = "unexpected end of the text"
        case escape = "invalid escape in a string"
        case hexDigits = "expected four hex digits after \\u"
        case loneSurrogate = "a lone UTF-16 surrogate in a \\u escape"
        case controlCharacter = "a control character in a string: escape it"
        case utf8 = "invalid UTF-8"
    }

    /// 512: far beyond any event (a handful of levels), and the depth Foundation's own
    /// parser stops at.
    package static let defaultMaxDepth = 512

    /// What a valid document is, at its top: enough to read an object, or an array of
    /// objects, member by member without parsing it again (what a request's events are).
    package struct Document: Sendable, Equatable {
        package enum Kind: Sendable, Equatable { case object, array, scalar }
        package var kind: Kind
        /// For an object: each member's key and the byte range of its value, in order. For
        /// an array: those of each object in it, one object after the other (`elements`
        /// says whose).
        package var members: [(key: String, value: Range<Int>)]
        /// For an array: each element's kind, its byte range, and (for an object) which of
        /// `members` are its own.
        package var elements: [Element] = []

        package struct Element: Sendable, Equatable {
            package var kind: Kind
            package var value: Range<Int>
            package var members: Range<Int>
        }

        package static func == (lhs: Document, rhs: Document) -> Bool {
            lhs.kind == rhs.kind && lhs.elements == rhs.elements && lhs.members.count == rhs.members.count
                && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        }
    }

    /// The first syntax, depth or duplicate-key problem in `bytes`, nil if none.
    package static func firstProblem(in bytes: [UInt8], maxDepth: Int = defaultMaxDepth) -> Problem? {
        if case .failure(let problem) = validate(bytes, maxDepth: maxDepth) { return problem }
        return nil
    }

    /// The document's top (its kind, and an object's members) if `bytes` is valid JSON
    /// with no repeated key, or its first problem.
    package static func validate(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) -> Result<Document, Problem> {
        var scanner = Scanner(bytes: bytes, maxDepth: maxDepth)
        do {
            try scanner.run()
            return .success(Document(kind: scanner.topKind, members: scanner.topMembers, elements: scanner.elements))
        } catch {
            return .failure(error)
        }
    }

    /// The byte a one-character escape stands for (`n` in `\n`: a line feed); nil for `u`
    /// and for what is no escape.
    static func escapedByte(_ escape: UInt8) -> UInt8? {
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

    private enum Container {
        /// An open object: where its keys start in `Scanner.keys`, a set of them once it
        /// has more than a few (a look-up in it stays cheap however many), and the key
        /// whose value is being read.
        case object(firstKey: Int, index: Set<String>?, current: String)
        case array(index: Int)
    }

    private struct Scanner {
        let bytes: [UInt8]
        let maxDepth: Int
        var offset = 0
        var stack: [Container] = []
        var topKind = Document.Kind.scalar
        var topMembers: [(key: String, value: Range<Int>)] = []
        var elements: [Document.Element] = []
        /// The keys of every open object, the innermost's last: one buffer for all, rather
        /// than a set per object.
        var keys: [String] = []
        /// How many keys of an object are compared one by one before they get a set.
        static let keysScanned = 16
        /// Where the value of the current member of the object being listed starts.
        var memberStart = 0
        /// Where the top-level array's current element starts.
        var elementStart = 0

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        private enum Expect { case value, key, afterValue }

        mutating func run() throws(Problem) {
            var expect = Expect.value
            while true {
                skipWhitespace()
                switch expect {
                case .value:
                    if listsMembers(depth: stack.count) { memberStart = offset }
                    if stack.count == 1, case .array = stack[0] { elementStart = offset }
                    expect = try value()
                    if expect == .afterValue { endValue(depth: stack.count) }
                case .key:
                    try key()
                    expect = .value
                case .afterValue:
                    guard let top = stack.last else {
                        guard offset == bytes.count else { throw .malformed(offset: offset, .textAfterValue) }
                        return
                    }
                    let byte = try next()
                    switch (top, byte) {
                    case (.object, UInt8(ascii: ",")):
                        expect = .key
                    case (.array(let index), UInt8(ascii: ",")):
                        stack[stack.count - 1] = .array(index: index + 1)
                        expect = .value
                    case (.object(let firstKey, _, _), UInt8(ascii: "}")):
                        keys.removeSubrange(firstKey...)
                        stack.removeLast()
                        endValue(depth: stack.count)
                    case (.array, UInt8(ascii: "]")):
                        stack.removeLast()
                        endValue(depth: stack.count)
                    default:
                        if case .object = top { throw .malformed(offset: offset - 1, .afterMember) }
                        throw .malformed(offset: offset - 1, .afterElement)
                    }
                }
            }
        }

        /// Whether the container open at `depth` is an object whose members the document
        /// lists: the top-level one, or one directly in the top-level array.
        private func listsMembers(depth: Int) -> Bool {
            guard depth == 1 || depth == 2, case .object = stack[depth - 1] else { return false }
            if depth == 1 { return true }
            if case .array = stack[0] { return true }
            return false
        }

        /// A value that ended at depth `depth` (now `offset`): a member of a listed object,
        /// or an element of the top-level array.
        private mutating func endValue(depth: Int) {
            if listsMembers(depth: depth), case .object(_, _, let key) = stack[depth - 1] {
                topMembers.append((key, memberStart..<offset))
            } else if depth == 1, case .array = stack[0] {
                let kind: Document.Kind = switch bytes[elementStart] {
                case UInt8(ascii: "{"): .object
                case UInt8(ascii: "["): .array
                default: .scalar
                }
                let first = elements.last?.members.upperBound ?? 0
                elements.append(Document.Element(kind: kind, value: elementStart..<offset,
                                                 members: first..<(kind == .object ? topMembers.count : first)))
            }
        }

        /// One value, or the opening of a container; what to expect next.
        private mutating func value() throws(Problem) -> Expect {
            let start = offset
            switch try next() {
            case let open where open == UInt8(ascii: "{") || open == UInt8(ascii: "["):
                guard stack.count < maxDepth else { throw .tooDeep(limit: maxDepth) }
                let isObject = open == UInt8(ascii: "{")
                if stack.isEmpty { topKind = isObject ? .object : .array }
                skipWhitespace()
                if peek() == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    offset += 1
                    return .afterValue
                }
                stack.append(isObject ? .object(firstKey: keys.count, index: nil, current: "") : .array(index: 0))
                return isObject ? .key : .value
            case UInt8(ascii: "\""):
                _ = try string(decode: false)
                return .afterValue
            case UInt8(ascii: "t"):
                try literal("rue")
                return .afterValue
            case UInt8(ascii: "f"):
                try literal("alse")
                return .afterValue
            case UInt8(ascii: "n"):
                try literal("ull")
                return .afterValue
            default:
                offset = start
                try number()
                return .afterValue
            }
        }

        /// The rest of `true`, `false` or `null`.
        private mutating func literal(_ rest: StaticString) throws(Problem) {
            let count = rest.utf8CodeUnitCount
            let matches = rest.withUTF8Buffer { expected in
                offset + count <= bytes.count && (0..<count).allSatisfy { bytes[offset + $0] == expected[$0] }
            }
            guard matches else { throw .malformed(offset: offset, .literal) }
            offset += count
        }

        /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
        private mutating func number() throws(Problem) {
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
        private mutating func digits() throws(Problem) {
            let start = offset
            while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { offset += 1 }
            guard offset > start else { throw .malformed(offset: offset, .digit) }
        }

        /// A member's key and its colon; a repeated key is the problem.
        private mutating func key() throws(Problem) {
            guard try next() == UInt8(ascii: "\"") else { throw .malformed(offset: offset - 1, .memberName) }
            let key = try string(decode: true)
            // Taken off the stack while it grows, so the set is not copied on insert.
            guard case .object(let firstKey, var index, _) = stack.popLast() else { throw .malformed(offset: offset, .memberName) }
            let repeated: Bool
            if index != nil {
                repeated = !index!.insert(key).inserted
            } else {
                repeated = keys[firstKey...].contains(key)
                if keys.count - firstKey >= Self.keysScanned { index = Set(keys[firstKey...] + [key]) }
            }
            keys.append(key)
            stack.append(.object(firstKey: firstKey, index: index, current: key))
            guard !repeated else { throw .duplicateKey(key: key, path: path(appending: key)) }
            skipWhitespace()
            guard try next() == UInt8(ascii: ":") else { throw .malformed(offset: offset - 1, .colon) }
        }

        /// `a.b[2]` for the containers open now, then `.key`.
        private func path(appending key: String) -> String {
            var path = ""
            for container in stack.dropLast() {
                switch container {
                case .object(_, _, let current): path += path.isEmpty ? current : ".\(current)"
                case .array(let index): path += "[\(index)]"
                }
            }
            return path.isEmpty ? key : "\(path).\(key)"
        }

        /// The rest of a string whose opening quote was read; its text when `decode`.
        private mutating func string(decode: Bool) throws(Problem) -> String {
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
                        guard Self.escapes.contains(escape) else { throw .malformed(offset: offset - 1, .escape) }
                        if escape == UInt8(ascii: "u") { _ = try unicodeEscape() }
                        continue
                    }
                    if !escaped {
                        escaped = true
                        text += bytes[first..<(offset - 2)]
                    }
                    if escape == UInt8(ascii: "u") {
                        text += try unicodeEscape().utf8
                    } else if let byte = JSONValidator.escapedByte(escape) {
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
        private mutating func unicodeEscape() throws(Problem) -> Unicode.Scalar {
            let start = offset - 2   // the backslash
            let unit = UInt32(try hexQuad())
            switch unit {
            case 0xD800..<0xDC00:
                guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
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
        private mutating func utf8Sequence(lead: UInt8) throws(Problem) {
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

        private mutating func hexQuad() throws(Problem) -> UInt16 {
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = try next()
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw .malformed(offset: offset - 1, .hexDigits)
                }
                value = value << 4 | UInt16(digit)
            }
            return value
        }

        private mutating func next() throws(Problem) -> UInt8 {
            guard offset < bytes.count else { throw .malformed(offset: offset, .end) }
            defer { offset += 1 }
            return bytes[offset]
        }

        /// RFC 8259 §7: the bytes that may follow a backslash.
        private static let escapes = Array(#""\/bfnrtu"#.utf8)

        private func peek() -> UInt8? { offset < bytes.count ? bytes[offset] : nil }

        private mutating func skipWhitespace() {
            while let byte = peek(), Self.isWhitespace(byte) { offset += 1 }
        }

        /// RFC 8259 §2: space, tab, line feed, carriage return.
        private static func isWhitespace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }
    }
}
