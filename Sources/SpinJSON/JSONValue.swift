/// A JSON document with object members in order, as `OrderedJSONEncoder` builds it.
///
/// Foundation's `JSONEncoder` on Linux writes object members in hash order, which
/// changes from one process to the next; the server's answers and stream messages are
/// byte-for-byte reproducible instead, with members in the order the type encodes them
/// (docs/PROTOCOL.md shows `{"status":s,"items":n}`, not `{"items":n,"status":s}`).
///
/// Not `indirect`: arrays and objects keep their values in arrays, already on the heap,
/// so no case needs a box of its own, and a string, number or raw text is stored in place
/// (an indirect enum allocates a box for every value, each leaf of a tree included).
package enum JSONValue: Sendable, Equatable {
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

    /// Appends the compact JSON text, its strings escaped as `escaping` says.
    package func write(into out: inout [UInt8], escaping: StringEscaping = .htmlSafe) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let string): JSONValue.writeString(string, into: &out, escaping: escaping)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out, escaping: escaping)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, into: &out, escaping: escaping)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out, escaping: escaping)
            }
            out.append(UInt8(ascii: "}"))
        case .raw(let bytes): out.append(contentsOf: bytes)
        }
    }

    /// Which characters of a string are escaped besides those RFC 8259 §7 requires
    /// (quote, backslash, control characters).
    package enum StringEscaping: Sendable {
        /// What the server writes everywhere (answers, events, the journal): `<`, `>` and
        /// `&` too, as `\u003c` and so on, so that a value can be put inside an HTML page
        /// as it is; backspace and form feed as `\b` and `\f`.
        case htmlSafe
        /// Only what RFC 8259 requires, backspace and form feed as `\u0008` and `\u000c`:
        /// the text `JSONSchema` has always shown as its `description`.
        case minimal
    }

    /// One string as JSON text (RFC 8259 §7), quotes included: the one escaper of the
    /// server. Quote, backslash and control characters are escaped (`\n`, `\r`, `\t`, the
    /// rest as `\u00XX`); everything else is written as UTF-8, but for what `escaping`
    /// adds. `OrderedJSONEncoder` and the event writer both write strings here.
    @inlinable
    package static func writeString(_ string: String, into out: inout [UInt8], escaping: StringEscaping = .htmlSafe) {
        let htmlSafe = escaping == .htmlSafe
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            if byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"),
               !htmlSafe || (byte != UInt8(ascii: "<") && byte != UInt8(ascii: ">") && byte != UInt8(ascii: "&")) {
                out.append(byte)
                continue
            }
            out.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            case 0x08 where htmlSafe: out.append(UInt8(ascii: "b"))
            case 0x0C where htmlSafe: out.append(UInt8(ascii: "f"))
            default:
                out.append(contentsOf: "u00".utf8)
                out.append(hexCharacter(byte >> 4))
                out.append(hexCharacter(byte & 0x0F))
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// A finite `value` as the server writes numbers: integral values within ±2^53
    /// without a fraction (`1` for `1.0`), others in Swift's shortest round-trip form; nil
    /// for NaN and the infinities (JSON has none).
    @inlinable
    package static func numberText(_ value: Double) -> String? {
        guard value.isFinite else { return nil }
        if abs(value) <= 9_007_199_254_740_992, let integral = Int64(exactly: value) { return String(integral) }
        return "\(value)"
    }

    /// The lowercase hex digit of `nibble` (0 to 15).
    @inlinable
    static func hexCharacter(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
