/// A JSON Pointer (RFC 6901): the path of a value inside a document, `""` for the whole
/// document, `/items/3/name` for a member of an element; in a token `~` is written `~0`
/// and `/` is written `~1`.
package struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    /// The reference tokens, unescaped.
    package var tokens: [String]

    /// The whole document.
    package static let root = JSONPointer(tokens: [])

    package init(tokens: [String]) {
        self.tokens = tokens
    }

    /// The pointer `text` spells; nil when it is not one (it must be empty or start with
    /// `/`, and `~` must be followed by `0` or `1`).
    package init?(_ text: String) {
        guard !text.isEmpty else {
            tokens = []
            return
        }
        guard text.utf8.first == UInt8(ascii: "/") else { return nil }
        var tokens: [String] = []
        for raw in text.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard let token = Self.unescape(raw) else { return nil }
            tokens.append(token)
        }
        self.tokens = tokens
    }

    /// This pointer with one more token.
    package func appending(_ token: String) -> JSONPointer {
        JSONPointer(tokens: tokens + [token])
    }

    /// The pointer's text, escaped.
    package var description: String {
        var out: [UInt8] = []
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Writes the pointer's text, escaped, into `out`.
    package func write(into out: inout [UInt8]) {
        for token in tokens {
            out.append(UInt8(ascii: "/"))
            for byte in token.utf8 {
                switch byte {
                case UInt8(ascii: "~"): out += "~0".utf8
                case UInt8(ascii: "/"): out += "~1".utf8
                default: out.append(byte)
                }
            }
        }
    }

    /// An array index token (RFC 6901 §4: digits, no leading zero); nil otherwise.
    package static func index(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              first != UInt8(ascii: "0") || utf8.count == 1 else { return nil }
        return Int(token)
    }

    /// `~1` is `/` and `~0` is `~` (in that order: `~01` is `~1`, RFC 6901 §4).
    private static func unescape(_ raw: Substring.UTF8View.SubSequence) -> String? {
        guard raw.contains(UInt8(ascii: "~")) else { return String(decoding: raw, as: UTF8.self) }
        var out: [UInt8] = []
        var iterator = raw.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "~") else {
                out.append(byte)
                continue
            }
            switch iterator.next() {
            case UInt8(ascii: "0"): out.append(UInt8(ascii: "~"))
            case UInt8(ascii: "1"): out.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
