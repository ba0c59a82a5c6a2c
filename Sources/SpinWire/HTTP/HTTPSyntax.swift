/// Byte classes of the HTTP grammar (RFC 9110 §5.6, RFC 9112 §2), as 256-entry lookup
/// tables so the parser classifies a byte with one load.
enum HTTPSyntax {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B
    static let comma: UInt8 = 0x2C

    /// RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "."
    /// / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
    static let tokenTable: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = true }
        for scalar in "!#$%&'*+-.^_`|~".utf8 { table[Int(scalar)] = true }
        return table
    }()

    /// RFC 9110 §5.5: field-vchar = VCHAR / obs-text, plus SP and HTAB inside a value.
    /// Everything else (NUL, CR, LF, other controls, DEL) is rejected in a field value.
    static let fieldValueTable: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in 0x21...0x7E { table[byte] = true }
        for byte in 0x80...0xFF { table[byte] = true }
        table[0x20] = true
        table[0x09] = true
        return table
    }()

    /// Bytes allowed in an origin-form or absolute-form target: VCHAR except `#`.
    /// RFC 3986 is stricter, but browsers send `|`, `^`, `{`, `}`, `[`, `]` raw in paths
    /// and queries (the WHATWG URL percent-encode sets), and rejecting them would refuse
    /// real clients for no safety gain. What matters for framing is refused: SP, controls,
    /// DEL and raw non-ASCII bytes; `#` because a fragment is never sent (RFC 9110 §4.2.5).
    static let targetTable: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in 0x21...0x7E { table[byte] = true }
        table[Int(UInt8(ascii: "#"))] = false
        return table
    }()

    /// RFC 3986 §3.2.2 reg-name characters (unreserved / pct-encoded / sub-delims).
    static let regNameTable: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = true }
        for scalar in "-._~%!$&'()*+,;=".utf8 { table[Int(scalar)] = true }
        return table
    }()

    @inline(__always)
    static func isToken(_ byte: UInt8) -> Bool { tokenTable[Int(byte)] }

    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == sp || byte == htab }

    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- 0x41 < 26 ? byte | 0x20 : byte
    }

    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }

    /// ASCII case-insensitive equality of `bytes` with `lowercaseName` (already lowercase).
    @inline(__always)
    static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercaseName: StaticString) -> Bool {
        guard bytes.count == lowercaseName.utf8CodeUnitCount else { return false }
        let name = UnsafeBufferPointer(start: lowercaseName.utf8Start, count: lowercaseName.utf8CodeUnitCount)
        var index = bytes.startIndex
        for expected in name {
            if lowercased(bytes[index]) != expected { return false }
            index += 1
        }
        return true
    }

    /// Splits a comma-separated list value (RFC 9110 §5.6.1) into trimmed, non-empty
    /// members. Empty members (`a, , b`) are ignored as the RFC asks.
    static func listMembers(_ value: String) -> [Substring] {
        value.split(separator: ",", omittingEmptySubsequences: true).compactMap { member in
            let trimmed = member.trimmingHTTPWhitespace()
            return trimmed.isEmpty ? nil : trimmed
        }
    }
}

extension Substring {
    /// The substring without leading and trailing SP/HTAB (RFC 9110 §5.6.3 OWS).
    func trimmingHTTPWhitespace() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }
}

extension StringProtocol {
    /// ASCII case-insensitive comparison, as HTTP field names, tokens and schemes use.
    func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let lhs = self.utf8, rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).allSatisfy { HTTPSyntax.lowercased($0) == HTTPSyntax.lowercased($1) }
    }
}
