/// The body of a Close frame (RFC 6455 §5.5.1): an optional status code and a UTF-8 reason.
package struct WebSocketClosePayload: Hashable, Sendable {
    /// nil for an empty Close payload (reported locally as 1005, RFC 6455 §7.1.5).
    package var code: WebSocketCloseCode?
    package var reason: String

    package init(code: WebSocketCloseCode?, reason: String = "") {
        self.code = code
        self.reason = code == nil ? "" : reason
    }

    /// Parses and validates a received Close payload.
    ///
    /// - Throws: `.closePayloadTooShort` (1 byte, RFC 6455 §5.5.1), `.invalidCloseCode`
    ///   (RFC 6455 §7.4), `.invalidUTF8` (the reason, RFC 6455 §5.5.1 / §8.1).
    package init(parsing payload: [UInt8]) throws(WebSocketError) {
        switch payload.count {
        case 0:
            self.init(code: nil)
        case 1:
            throw .closePayloadTooShort
        default:
            let code = WebSocketCloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
            guard code.isValidOnWire else { throw .invalidCloseCode(code.rawValue) }
            let reason = Array(payload[2...])
            guard UTF8StreamValidator.isValid(reason) else { throw .invalidUTF8 }
            self.init(code: code, reason: String(decoding: reason, as: UTF8.self))
        }
    }

    /// The payload bytes: the code in network order then the reason, cut (at a character
    /// boundary) to fit the 125-byte control-frame limit (RFC 6455 §5.5).
    package var bytes: [UInt8] {
        guard let code else { return [] }
        var out: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var reasonBytes = 0
        for scalar in reason.unicodeScalars {
            let width = UTF8.width(scalar)
            if reasonBytes + width > 123 { break }
            reasonBytes += width
        }
        out.append(contentsOf: reason.utf8.prefix(reasonBytes))
        return out
    }
}
