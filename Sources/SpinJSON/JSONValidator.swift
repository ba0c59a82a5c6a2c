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
/// The tokens are `JSONScanner`'s (strings, numbers, literals); this keeps the structure
/// over them, in an explicit stack (no recursion, so no input can overflow the call stack), at most
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

        /// `.comment` when what stopped the text being JSON is a comment (`//` or `/*`,
        /// which a JSON-with-comments file has): said as such, not as the token expected.
        package func namingComments(in bytes: [UInt8]) -> Problem {
            guard case .malformed(let offset, _) = self, offset >= 0, offset + 1 < bytes.count,
                  bytes[offset] == UInt8(ascii: "/"),
                  bytes[offset + 1] == UInt8(ascii: "/") || bytes[offset + 1] == UInt8(ascii: "*") else { return self }
            return .malformed(offset: offset, .comment)
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
        /// `//` or `/*` where JSON was expected: a comment, which JSON does not have.
        case comment = "JSON has no comments (// or /* */): remove the comment"
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
        var pass = Pass(bytes: bytes, maxDepth: maxDepth)
        do {
            try pass.run()
            return .success(Document(kind: pass.topKind, members: pass.topMembers, elements: pass.elements))
        } catch {
            return .failure(error.namingComments(in: bytes))
        }
    }

    private enum Container {
        /// An open object: where its keys start in `Pass.keys`, a set of them once it
        /// has more than a few (a look-up in it stays cheap however many), and the key
        /// whose value is being read.
        case object(firstKey: Int, index: Set<String>?, current: String)
        case array(index: Int)
    }

    /// One pass over a document: the structure (open containers, their keys, what the
    /// top holds) over the tokens `text` reads.
    private struct Pass {
        var text: JSONScanner
        var bytes: [UInt8] { text.bytes }
        var offset: Int {
            get { text.offset }
            set { text.offset = newValue }
        }
        let maxDepth: Int
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
            self.text = JSONScanner(bytes)
            self.maxDepth = maxDepth
        }

        private enum Expect { case value, key, afterValue }

        mutating func run() throws(Problem) {
            var expect = Expect.value
            while true {
                text.skipWhitespace()
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
                    let byte = try text.next()
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
            switch try text.next() {
            case let open where open == UInt8(ascii: "{") || open == UInt8(ascii: "["):
                guard stack.count < maxDepth else { throw .tooDeep(limit: maxDepth) }
                let isObject = open == UInt8(ascii: "{")
                if stack.isEmpty { topKind = isObject ? .object : .array }
                text.skipWhitespace()
                if text.peek() == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    offset += 1
                    return .afterValue
                }
                stack.append(isObject ? .object(firstKey: keys.count, index: nil, current: "") : .array(index: 0))
                return isObject ? .key : .value
            case UInt8(ascii: "\""):
                _ = try text.string(decode: false)
                return .afterValue
            case UInt8(ascii: "t"):
                try text.literal(rest: "rue")
                return .afterValue
            case UInt8(ascii: "f"):
                try text.literal(rest: "alse")
                return .afterValue
            case UInt8(ascii: "n"):
                try text.literal(rest: "ull")
                return .afterValue
            default:
                offset = start
                try text.number()
                return .afterValue
            }
        }

        /// A member's key and its colon; a repeated key is the problem.
        private mutating func key() throws(Problem) {
            guard try text.next() == UInt8(ascii: "\"") else { throw .malformed(offset: offset - 1, .memberName) }
            let key = try text.string(decode: true)
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
            text.skipWhitespace()
            guard try text.next() == UInt8(ascii: ":") else { throw .malformed(offset: offset - 1, .colon) }
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
    }
}
