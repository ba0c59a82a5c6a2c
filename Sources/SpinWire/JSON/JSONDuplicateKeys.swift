/// Finds the first object member whose key repeats an earlier key of the same object.
///
/// RFC 8259 §4 only says names "SHOULD be unique"; parsers disagree on what a duplicate
/// means (Foundation's `JSONSerialization` keeps one silently, others the other), so a
/// body with one can mean two things to two readers. The server refuses it instead
/// (400 `malformed_json`). Keys compare after unescaping: `"a"` and `"\u0061"` are the
/// same key, and compare as Swift strings do (canonically equivalent keys are equal, as
/// they are to the decoder that reads them).
///
/// A single pass over the bytes with an explicit stack (no recursion, so no input can
/// overflow the call stack), at most `maxDepth` containers deep. It is meant to run on
/// a document a JSON parser has already accepted, but never traps on any input: what
/// is not JSON is reported as `.malformed` with the byte offset. That includes a
/// trailing comma (`[1,]`), UTF-16 and UTF-32 text and a byte order mark, which
/// Foundation's parser on Linux lets through and RFC 8259 does not (§8.1: UTF-8, no
/// BOM): the server takes JSON to mean RFC 8259.
///
/// ```swift
/// JSONDuplicateKeys.firstProblem(in: Array(#"[{"a":1},{"b":2,"b":3}]"#.utf8))
/// // .duplicateKey(key: "b", path: "[1].b")
/// ```
package enum JSONDuplicateKeys {
    package enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// `key` appears a second time in one object; `path` names that member
        /// (`[1].b`, `event.left`, `a.b[0].c`).
        case duplicateKey(key: String, path: String)
        /// More than `limit` objects and arrays are nested.
        case tooDeep(limit: Int)
        /// Not JSON at byte `offset`.
        case malformed(offset: Int)

        package var description: String {
            switch self {
            case .duplicateKey(let key, let path):
                "the key \"\(key)\" appears twice in one object (at \(path)); each key may appear once"
            case .tooDeep(let limit): "objects and arrays are nested more than \(limit) deep"
            case .malformed(let offset): "not JSON (RFC 8259) at byte \(offset)"
            }
        }
    }

    /// 512: far beyond any event (a handful of levels), and the depth Foundation's own
    /// parser stops at.
    package static let defaultMaxDepth = 512

    /// The first duplicate key (or depth or syntax problem) in `bytes`, nil if none.
    package static func firstProblem(in bytes: [UInt8], maxDepth: Int = defaultMaxDepth) -> Problem? {
        var scanner = Scanner(bytes: bytes, maxDepth: maxDepth)
        do {
            try scanner.run()
            return nil
        } catch {
            return error
        }
    }

    private enum Container {
        case object(keys: Set<String>, current: String)
        case array(index: Int)
    }

    private struct Scanner {
        let bytes: [UInt8]
        let maxDepth: Int
        var offset = 0
        var stack: [Container] = []

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
                    expect = try value()
                case .key:
                    try key()
                    expect = .value
                case .afterValue:
                    guard let top = stack.last else {
                        guard offset == bytes.count else { throw .malformed(offset: offset) }
                        return
                    }
                    let byte = try next()
                    switch (top, byte) {
                    case (.object, UInt8(ascii: ",")):
                        expect = .key
                    case (.array(let index), UInt8(ascii: ",")):
                        stack[stack.count - 1] = .array(index: index + 1)
                        expect = .value
                    case (.object, UInt8(ascii: "}")), (.array, UInt8(ascii: "]")):
                        stack.removeLast()
                    default:
                        throw .malformed(offset: offset - 1)
                    }
                }
            }
        }

        /// One value, or the opening of a container; what to expect next.
        private mutating func value() throws(Problem) -> Expect {
            let start = offset
            switch try next() {
            case let open where open == UInt8(ascii: "{") || open == UInt8(ascii: "["):
                guard stack.count < maxDepth else { throw .tooDeep(limit: maxDepth) }
                let isObject = open == UInt8(ascii: "{")
                skipWhitespace()
                if peek() == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    offset += 1
                    return .afterValue
                }
                stack.append(isObject ? .object(keys: [], current: "") : .array(index: 0))
                return isObject ? .key : .value
            case UInt8(ascii: "\""):
                _ = try string(decode: false)
                return .afterValue
            default:
                // A number, true, false or null: its syntax is the parser's business;
                // here it only has to end where a value ends.
                offset = start
                while let byte = peek(), !Self.endsScalar(byte) { offset += 1 }
                guard offset > start else { throw .malformed(offset: start) }
                return .afterValue
            }
        }

        /// A member's key and its colon; a repeated key is the problem.
        private mutating func key() throws(Problem) {
            guard try next() == UInt8(ascii: "\"") else { throw .malformed(offset: offset - 1) }
            let key = try string(decode: true)
            // Taken off the stack while it grows, so the set is not copied on insert.
            guard case .object(var keys, _) = stack.popLast() else { throw .malformed(offset: offset) }
            let inserted = keys.insert(key).inserted
            stack.append(.object(keys: keys, current: key))
            guard inserted else { throw .duplicateKey(key: key, path: path(appending: key)) }
            skipWhitespace()
            guard try next() == UInt8(ascii: ":") else { throw .malformed(offset: offset - 1) }
        }

        /// `a.b[2]` for the containers open now, then `.key`.
        private func path(appending key: String) -> String {
            var path = ""
            for container in stack.dropLast() {
                switch container {
                case .object(_, let current): path += path.isEmpty ? current : ".\(current)"
                case .array(let index): path += "[\(index)]"
                }
            }
            return path.isEmpty ? key : "\(path).\(key)"
        }

        /// The rest of a string whose opening quote was read; its text when `decode`.
        private mutating func string(decode: Bool) throws(Problem) -> String {
            var text: [UInt8] = []
            while true {
                let byte = try next()
                switch byte {
                case UInt8(ascii: "\""):
                    return decode ? String(decoding: text, as: UTF8.self) : ""
                case UInt8(ascii: "\\"):
                    let escape = try next()
                    guard decode else {
                        guard Self.escapes.contains(escape) else { throw .malformed(offset: offset - 1) }
                        if escape == UInt8(ascii: "u") { _ = try hexQuad() }
                        continue
                    }
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escape)
                    case UInt8(ascii: "b"): text.append(0x08)
                    case UInt8(ascii: "f"): text.append(0x0C)
                    case UInt8(ascii: "n"): text.append(0x0A)
                    case UInt8(ascii: "r"): text.append(0x0D)
                    case UInt8(ascii: "t"): text.append(0x09)
                    case UInt8(ascii: "u"): text += try unicodeEscape()
                    default: throw .malformed(offset: offset - 1)
                    }
                case 0x00..<0x20:
                    throw .malformed(offset: offset - 1)  // RFC 8259 §7: control characters are escaped
                default:
                    if decode { text.append(byte) }
                }
            }
        }

        /// `XXXX` after `\u`, with a following `\uXXXX` low surrogate when it is a high
        /// one, as UTF-8 (a lone surrogate becomes U+FFFD, as Foundation reads it).
        private mutating func unicodeEscape() throws(Problem) -> [UInt8] {
            var scalar = UInt32(try hexQuad())
            if (0xD800..<0xDC00).contains(scalar), offset + 1 < bytes.count,
               bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") {
                let saved = offset
                offset += 2
                let low = UInt32(try hexQuad())
                if (0xDC00..<0xE000).contains(low) {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    offset = saved
                }
            }
            return Array(String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8)
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
                default: throw .malformed(offset: offset - 1)
                }
                value = value << 4 | UInt16(digit)
            }
            return value
        }

        private mutating func next() throws(Problem) -> UInt8 {
            guard offset < bytes.count else { throw .malformed(offset: offset) }
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

        private static func endsScalar(_ byte: UInt8) -> Bool {
            isWhitespace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}")
                || byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: ":")
        }
    }
}
