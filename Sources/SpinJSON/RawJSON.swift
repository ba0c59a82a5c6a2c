/// JSON text read one level at a time: where a value ends, an object's members and an
/// array's elements as byte ranges, without building the values. What `JSONPatch.diff`
/// walks, so that equal subtrees cost one byte comparison and are never parsed.
///
/// The text is expected to be JSON (a `.raw` value, whose maker vouches for it); anything
/// it cannot read is `Malformed`, never a trap.
struct RawJSON {
    struct Malformed: Error {}

    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The range of the one value the text holds, without surrounding whitespace.
    var root: Range<Int>? {
        let start = skipWhitespace(from: 0)
        guard let end = try? end(ofValueAt: start), skipWhitespace(from: end) == bytes.count else { return nil }
        return start..<end
    }

    /// Whether the value at `range` is the same text as `other`'s at `otherRange`.
    func same(_ range: Range<Int>, as other: RawJSON, _ otherRange: Range<Int>) -> Bool {
        guard range.count == otherRange.count else { return false }
        return bytes.withUnsafeBufferPointer { mine in
            other.bytes.withUnsafeBufferPointer { theirs in
                UnsafeBufferPointer(rebasing: mine[range]).elementsEqual(UnsafeBufferPointer(rebasing: theirs[otherRange]))
            }
        }
    }

    /// The value at `range`, as its text.
    func value(_ range: Range<Int>) -> JSONValue {
        .raw(Array(bytes[range]))
    }

    /// An object's members: each key (unescaped) and its value's range.
    func members(of object: Range<Int>) throws(Malformed) -> [(key: String, value: Range<Int>)] {
        var members: [(key: String, value: Range<Int>)] = []
        try items(of: object, close: UInt8(ascii: "}")) { (offset: Int) throws(Malformed) -> Int in
            guard bytes[offset] == UInt8(ascii: "\"") else { throw Malformed() }
            let keyEnd = try end(ofValueAt: offset)
            let colon = skipWhitespace(from: keyEnd)
            guard colon < bytes.count, bytes[colon] == UInt8(ascii: ":") else { throw Malformed() }
            let start = skipWhitespace(from: colon + 1)
            let end = try end(ofValueAt: start)
            members.append((try key(offset..<keyEnd), start..<end))
            return end
        }
        return members
    }

    /// An array's elements' ranges.
    func elements(of array: Range<Int>) throws(Malformed) -> [Range<Int>] {
        var elements: [Range<Int>] = []
        try items(of: array, close: UInt8(ascii: "]")) { (offset: Int) throws(Malformed) -> Int in
            let end = try end(ofValueAt: offset)
            elements.append(offset..<end)
            return end
        }
        return elements
    }

    /// Calls `item` at the start of each member or element of the container at `range`;
    /// it returns where that item ends.
    private func items(of range: Range<Int>, close: UInt8,
                       _ item: (Int) throws(Malformed) -> Int) throws(Malformed) {
        var offset = skipWhitespace(from: range.lowerBound + 1)
        guard offset < range.upperBound else { throw Malformed() }
        if bytes[offset] == close { return }
        while true {
            offset = skipWhitespace(from: try item(offset))
            guard offset < range.upperBound else { throw Malformed() }
            if bytes[offset] == close { return }
            guard bytes[offset] == UInt8(ascii: ",") else { throw Malformed() }
            offset = skipWhitespace(from: offset + 1)
            guard offset < range.upperBound else { throw Malformed() }
        }
    }

    /// Where the value starting at `start` ends (one past its last byte).
    func end(ofValueAt start: Int) throws(Malformed) -> Int {
        guard start < bytes.count else { throw Malformed() }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return try endOfString(from: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var offset = start
            while offset < bytes.count {
                switch bytes[offset] {
                case UInt8(ascii: "\""):
                    offset = try endOfString(from: offset)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return offset + 1 }
                default:
                    break
                }
                offset += 1
            }
            throw Malformed()
        default:
            // A number or a literal: up to the next delimiter.
            var offset = start
            while offset < bytes.count {
                switch bytes[offset] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ":"), 0x20, 0x0A, 0x0D, 0x09:
                    guard offset > start else { throw Malformed() }
                    return offset
                default: offset += 1
                }
            }
            return offset
        }
    }

    private func endOfString(from quote: Int) throws(Malformed) -> Int {
        var offset = quote + 1
        while offset < bytes.count {
            switch bytes[offset] {
            case UInt8(ascii: "\""): return offset + 1
            case UInt8(ascii: "\\"): offset += 2
            default: offset += 1
            }
        }
        throw Malformed()
    }

    /// A key's text: as it is when it has no escape, else unescaped.
    private func key(_ range: Range<Int>) throws(Malformed) -> String {
        let inside = bytes[range.lowerBound + 1..<range.upperBound - 1]
        if !inside.contains(UInt8(ascii: "\\")) { return String(decoding: inside, as: UTF8.self) }
        guard case .string(let key)? = try? JSONValue(parsing: Array(bytes[range])) else { throw Malformed() }
        return key
    }

    private func skipWhitespace(from start: Int) -> Int {
        var offset = start
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return offset
            }
        }
        return offset
    }
}
