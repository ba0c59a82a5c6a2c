/// A JSON document with object members in order, as `OrderedJSONEncoder` builds it.
///
/// Foundation's `JSONEncoder` on Linux writes object members in hash order, which
/// changes from one process to the next; the server's answers and stream messages are
/// byte-for-byte reproducible instead, with members in the order the type encodes them
/// (docs/PROTOCOL.md shows `{"status":s,"items":n}`, not `{"items":n,"status":s}`).
package indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number as its JSON text (already validated and formatted).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])
    /// A value already encoded as compact JSON text (UTF-8), written verbatim: what a
    /// hosted Spin makes of each state and event once, so that the journal and every
    /// stream share the same bytes instead of serialising the value again. Whoever
    /// makes one vouches that the bytes are one valid JSON value.
    case raw([UInt8])

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.number(a), .number(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        // Encoded text equals a value that writes the same text.
        case let (.raw(a), .raw(b)): a == b
        case let (.raw(a), other), let (other, .raw(a)): a == other.bytes
        default: false
        }
    }

    /// The compact JSON text (RFC 8259), UTF-8.
    package var bytes: [UInt8] {
        if case .raw(let bytes) = self { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(into: &out)
        return out
    }

    package var text: String { String(decoding: bytes, as: UTF8.self) }

    package func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let string): JSONValue.writeString(string, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .raw(let bytes): out.append(contentsOf: bytes)
        }
    }

    /// RFC 8259 §7: quote, backslash and control characters are escaped; everything else
    /// is written as UTF-8. `<`, `>` and `&` are escaped too, so that a value can be put
    /// inside an HTML page as it is.
    package static func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0x08: out.append(contentsOf: #"\b"#.utf8)
            case 0x0C: out.append(contentsOf: #"\f"#.utf8)
            case 0x00..<0x20, UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "&"):
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
