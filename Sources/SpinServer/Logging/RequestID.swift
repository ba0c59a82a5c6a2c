/// Request IDs: what ties a request's log lines, its error body and its trace together.
/// A client's `X-Request-Id` is kept when it is 1 to 128 visible ASCII characters;
/// otherwise the server makes one. Every response carries it back in `X-Request-Id`.
enum RequestID {
    /// The header a request ID arrives and leaves in.
    static let header = "X-Request-Id"
    /// The longest client ID kept.
    static let maxLength = 128

    /// `value` when it can serve as a request ID (1 to 128 characters, each visible
    /// ASCII: `!` to `~`), else nil.
    static func accepted(_ value: String?) -> String? {
        guard let value else { return nil }
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength, utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { return nil }
        return value
    }

    /// 16 lowercase hexadecimal digits of `value`.
    static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 {
                let nibble = UInt8(truncatingIfNeeded: value >> (60 - 4 * UInt64(index))) & 0xF
                buffer[index] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble   // 0-9, a-f
            }
            return 16
        }
    }

    /// Makes the IDs of one connection's requests: a random 64-bit start, then one more
    /// per request, so IDs are unique across connections (as random ones are) and a
    /// connection's requests read in order. Confined to the connection's event loop.
    struct Generator {
        private var next = UInt64.random(in: .min ... .max)

        /// A new ID: 16 hex digits.
        mutating func make() -> String {
            defer { next &+= 1 }
            return RequestID.hex(next)
        }

        /// The request's own ID when it sent a valid one, else a new one.
        mutating func id(for clientValue: String?) -> String {
            RequestID.accepted(clientValue) ?? make()
        }
    }
}
