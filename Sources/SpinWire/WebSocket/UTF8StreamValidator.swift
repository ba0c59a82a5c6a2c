/// An incremental UTF-8 validator: a deterministic finite automaton over the well-formed
/// byte sequences of Unicode 15 Table 3-7, fed chunk by chunk (fragment by fragment).
///
/// It fails on the first byte that proves the input invalid, not at the end: an overlong
/// lead (`C0`, `C1`, `E0 80..9F`, `F0 80..8F`), a surrogate (`ED A0..BF`), a code point
/// above U+10FFFF (`F4 90..`, `F5..FF`), a stray continuation byte or a lead byte where a
/// continuation byte was due. RFC 6455 §8.1: an endpoint that receives invalid UTF-8 in a
/// text message fails the connection (1007), and §5.6 allows failing as soon as possible.
package struct UTF8StreamValidator: Hashable, Sendable {
    /// DFA state. `accept` between code points; the others say what the next byte must be.
    private var state: State = .accept

    private enum State: UInt8, Hashable, Sendable {
        case accept      // between code points
        case tail1       // one 80..BF byte left
        case tail2       // two 80..BF bytes left
        case tail3       // three 80..BF bytes left
        case afterE0     // A0..BF, then one tail (no overlong 3-byte forms)
        case afterED     // 80..9F, then one tail (no surrogates D800..DFFF)
        case afterF0     // 90..BF, then two tails (no overlong 4-byte forms)
        case afterF4     // 80..8F, then two tails (nothing above U+10FFFF)
        case reject
    }

    package init() {}

    /// True when the bytes seen so far end on a code point boundary (a complete message).
    package var isAtBoundary: Bool { state == .accept }

    /// True once an invalid sequence has been seen; stays true until `reset()`.
    package var hasFailed: Bool { state == .reject }

    package mutating func reset() { state = .accept }

    /// Feeds `bytes`; returns false as soon as the input so far is proven invalid.
    @discardableResult
    package mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard state != .reject else { return false }
        var index = 0
        let count = bytes.count
        var current = state
        while index < count {
            if current == .accept {
                // ASCII fast path: skip eight plain ASCII bytes at a time.
                while index + 8 <= count,
                      bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                }
                if index == count { break }
            }
            current = Self.step(current, bytes[index])
            if current == .reject {
                state = .reject
                return false
            }
            index += 1
        }
        state = current
        return true
    }

    /// Feeds `bytes`; returns false as soon as the input so far is proven invalid.
    @discardableResult
    package mutating func feed(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// Whether `bytes` is complete, valid UTF-8.
    package static func isValid(_ bytes: [UInt8]) -> Bool {
        var validator = UTF8StreamValidator()
        return validator.feed(bytes) && validator.isAtBoundary
    }

    @inline(__always)
    private static func step(_ state: State, _ byte: UInt8) -> State {
        switch state {
        case .accept:
            switch byte {
            case 0x00...0x7F: return .accept
            case 0xC2...0xDF: return .tail1
            case 0xE0: return .afterE0
            case 0xE1...0xEC, 0xEE...0xEF: return .tail2
            case 0xED: return .afterED
            case 0xF0: return .afterF0
            case 0xF1...0xF3: return .tail3
            case 0xF4: return .afterF4
            default: return .reject  // 80..BF stray tail, C0/C1 overlong, F5..FF out of range
            }
        case .tail1: return (0x80...0xBF).contains(byte) ? .accept : .reject
        case .tail2: return (0x80...0xBF).contains(byte) ? .tail1 : .reject
        case .tail3: return (0x80...0xBF).contains(byte) ? .tail2 : .reject
        case .afterE0: return (0xA0...0xBF).contains(byte) ? .tail1 : .reject
        case .afterED: return (0x80...0x9F).contains(byte) ? .tail1 : .reject
        case .afterF0: return (0x90...0xBF).contains(byte) ? .tail2 : .reject
        case .afterF4: return (0x80...0x8F).contains(byte) ? .tail2 : .reject
        case .reject: return .reject
        }
    }
}
