/// JSON text read one level at a time: where a value ends, an object's members and an
/// array's elements as byte ranges, without building the values. What `JSONPatch.diff`
/// walks, so that equal subtrees cost one byte comparison and are never parsed.
///
/// The text is expected to be JSON (a `.raw` value, whose maker vouches for it), read with
/// `JSONScanner`'s trusted reading; anything it cannot read is `Malformed`, never a trap.
struct RawJSON {
    struct Malformed: Error {}

    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The range of the one value the text holds, without surrounding whitespace.
    var root: Range<Int>? {
        var scanner = JSONScanner(bytes)
        scanner.skipWhitespace()
        let start = scanner.offset
        guard scanner.skipTrustedValue() else { return nil }
        let end = scanner.offset
        scanner.skipWhitespace()
        return scanner.offset == bytes.count ? start..<end : nil
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
        try items(of: object, close: UInt8(ascii: "}")) { (scanner: inout JSONScanner) throws(Malformed) in
            guard let key = scanner.trustedString() else { throw Malformed() }
            scanner.skipWhitespace()
            guard scanner.take(UInt8(ascii: ":")) else { throw Malformed() }
            scanner.skipWhitespace()
            let start = scanner.offset
            guard scanner.skipTrustedValue() else { throw Malformed() }
            members.append((key, start..<scanner.offset))
        }
        return members
    }

    /// An array's elements' ranges.
    func elements(of array: Range<Int>) throws(Malformed) -> [Range<Int>] {
        var elements: [Range<Int>] = []
        try items(of: array, close: UInt8(ascii: "]")) { (scanner: inout JSONScanner) throws(Malformed) in
            let start = scanner.offset
            guard scanner.skipTrustedValue() else { throw Malformed() }
            elements.append(start..<scanner.offset)
        }
        return elements
    }

    /// Calls `item` with the scanner at the start of each member or element of the
    /// container at `range`; it reads past that item.
    private func items(of range: Range<Int>, close: UInt8,
                       _ item: (inout JSONScanner) throws(Malformed) -> Void) throws(Malformed) {
        var scanner = JSONScanner(bytes, range.lowerBound + 1..<range.upperBound)
        scanner.skipWhitespace()
        guard let first = scanner.peek() else { throw Malformed() }
        if first == close { return }
        while true {
            try item(&scanner)
            scanner.skipWhitespace()
            guard let byte = scanner.peek() else { throw Malformed() }
            if byte == close { return }
            guard byte == UInt8(ascii: ",") else { throw Malformed() }
            scanner.offset += 1
            scanner.skipWhitespace()
            guard scanner.peek() != nil else { throw Malformed() }
        }
    }
}
