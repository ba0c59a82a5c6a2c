/// The media types the API reads: what a request's `Content-Type` says of its body.
enum MediaType {
    /// `application/json`, with or without parameters (`; charset=utf-8`).
    /// Read as bytes: every POST asks, and no string is made for it.
    static func isJSON(_ contentType: String?) -> Bool {
        guard var contentType else { return false }
        return contentType.withUTF8(isJSON)
    }

    /// `isJSON` over the header value's bytes (a header's string is native UTF-8, so
    /// `withUTF8` copies nothing; a generic walk of two UTF-8 views cost more than the rest).
    static func isJSON(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        func isWhitespace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        // The media type is what precedes any `;`, without the spaces or tabs around it.
        var start = 0
        var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
        while start < end, isWhitespace(bytes[start]) { start += 1 }
        while end > start, isWhitespace(bytes[end - 1]) { end -= 1 }
        let json: StaticString = "application/json"
        guard end - start == json.utf8CodeUnitCount else { return false }
        return json.withUTF8Buffer { lowercase in
            // ASCII letters in any case; every other byte as it is.
            for offset in 0..<lowercase.count {
                let byte = bytes[start + offset], lower = lowercase[offset]
                guard byte == lower || (byte | 0x20 == lower && lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z"))
                else { return false }
            }
            return true
        }
    }
}
