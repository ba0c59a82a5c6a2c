/// The media types the API reads: what a request's `Content-Type` says of its body.
enum MediaType {
    /// `application/json`, with or without parameters (`; charset=utf-8`).
    /// Read as bytes: every POST asks, and no string is made for it.
    static func isJSON(_ contentType: String?) -> Bool {
        guard var mediaType = contentType?.utf8[...] else { return false }
        // The media type is what precedes any `;`, without the spaces or tabs around it.
        if let end = mediaType.firstIndex(of: UInt8(ascii: ";")) { mediaType = mediaType[..<end] }
        func isWhitespace(_ byte: UInt8?) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while isWhitespace(mediaType.first) { mediaType.removeFirst() }
        while isWhitespace(mediaType.last) { mediaType.removeLast() }
        let json = "application/json".utf8
        guard mediaType.count == json.count else { return false }
        // ASCII letters in any case; every other byte as it is.
        return zip(mediaType, json).allSatisfy { byte, lower in
            byte == lower || (byte | 0x20 == lower && lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z"))
        }
    }
}
