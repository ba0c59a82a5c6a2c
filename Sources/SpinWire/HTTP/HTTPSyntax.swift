/// A view of bytes inside the parser's buffer: no reference counting while a line is
/// taken apart (an `ArraySlice` retains the buffer at every step).
typealias HTTPBytes = Slice<UnsafeBufferPointer<UInt8>>

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

    // Byte classes as 128-bit masks (two UInt64 literals, so no lazy global, no array
    // retain in hot loops). Bytes >= 0x80 are in neither class.

    /// RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "."
    /// / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
    @inline(__always)
    static func isToken(_ byte: UInt8) -> Bool {
        inMask(byte, low: 0x03FF_6CFA_0000_0000, high: 0x57FF_FFFF_C7FF_FFFE)
    }

    /// RFC 3986 §3.2.2 reg-name characters (unreserved / pct-encoded / sub-delims).
    @inline(__always)
    static func isRegName(_ byte: UInt8) -> Bool {
        inMask(byte, low: 0x2BFF_7FF2_0000_0000, high: 0x47FF_FFFE_87FF_FFFE)
    }

    @inline(__always)
    private static func inMask(_ byte: UInt8, low: UInt64, high: UInt64) -> Bool {
        if byte < 64 { return low >> UInt64(byte) & 1 == 1 }
        if byte < 128 { return high >> UInt64(byte &- 64) & 1 == 1 }
        return false
    }

    /// RFC 9110 §5.5: field-vchar = VCHAR / obs-text, plus SP and HTAB inside a value.
    /// Everything else (NUL, CR, LF, other controls, DEL) is rejected in a field value.
    @inline(__always)
    static func isFieldValue(_ byte: UInt8) -> Bool {
        (byte >= 0x20 && byte != 0x7F) || byte == htab
    }

    /// Bytes allowed in an origin-form or absolute-form target: VCHAR except `#`.
    /// RFC 3986 is stricter, but browsers send `|`, `^`, `{`, `}`, `[`, `]` raw in paths
    /// and queries (the WHATWG URL percent-encode sets), and rejecting them would refuse
    /// real clients for no safety gain. What matters for framing is refused: SP, controls,
    /// DEL and raw non-ASCII bytes; `#` because a fragment is never sent (RFC 9110 §4.2.5).
    @inline(__always)
    static func isTarget(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "#")
    }

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
    static func equalsIgnoringCase(_ bytes: HTTPBytes, _ lowercaseName: StaticString) -> Bool {
        guard bytes.count == lowercaseName.utf8CodeUnitCount else { return false }
        let name = UnsafeBufferPointer(start: lowercaseName.utf8Start, count: lowercaseName.utf8CodeUnitCount)
        var index = bytes.startIndex
        for expected in name {
            if lowercased(bytes[index]) != expected { return false }
            index += 1
        }
        return true
    }

    /// ASCII case-insensitive equality of two byte strings.
    @inline(__always)
    static func equalsIgnoringCase(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in 0..<lhs.count where lhs[index] != rhs[index] {
            if lowercased(lhs[index]) != lowercased(rhs[index]) { return false }
        }
        return true
    }

    /// Whether one of the comma-separated list `values` (RFC 9110 §5.6.1) has the member
    /// `lowercaseToken`, compared case-insensitively, without allocating.
    static func listContains(_ values: [String], _ lowercaseToken: StaticString) -> Bool {
        let token = UnsafeBufferPointer(start: lowercaseToken.utf8Start, count: lowercaseToken.utf8CodeUnitCount)
        for var value in values {
            value.makeContiguousUTF8()  // a no-op for the native strings the parser makes
            let found = value.utf8.withContiguousStorageIfAvailable { bytes in
                var start = 0
                while start <= bytes.count {
                    var end = start
                    while end < bytes.count && bytes[end] != comma { end += 1 }
                    var low = start, high = end
                    while low < high && isWhitespace(bytes[low]) { low += 1 }
                    while high > low && isWhitespace(bytes[high - 1]) { high -= 1 }
                    if high - low == token.count {
                        var equal = true
                        for offset in 0..<token.count where lowercased(bytes[low + offset]) != token[offset] {
                            equal = false
                            break
                        }
                        if equal { return true }
                    }
                    start = end + 1
                }
                return false
            }
            if found == true { return true }
        }
        return false
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
        HTTPSyntax.textEqualsIgnoringCase(self, other)
    }
}

extension String {
    /// `equalsIgnoringASCIICase` for two strings, not generic, so that other modules call
    /// the specialised comparison rather than the generic one.
    package func equalsIgnoringASCIICase(_ other: String) -> Bool {
        HTTPSyntax.textEqualsIgnoringCase(self, other)
    }
}

extension HTTPSyntax {
    /// ASCII case-insensitive equality of two strings: lengths first, then the bytes in
    /// place (every string this server makes is contiguous UTF-8: nothing is copied).
    @inline(__always)
    static func textEqualsIgnoringCase(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        let lhs = lhs.utf8, rhs = rhs.utf8
        guard lhs.count == rhs.count else { return false }
        let equal = lhs.withContiguousStorageIfAvailable { lhs in
            rhs.withContiguousStorageIfAvailable { rhs in equalsIgnoringCase(lhs, rhs) }
        }
        if let equal, let equal { return equal }
        return zip(lhs, rhs).allSatisfy { lowercased($0) == lowercased($1) }
    }
}
