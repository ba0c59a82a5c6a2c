extension HTTPRequestParser {
    /// Every size the parser accepts, in one value. A request over a limit is refused with
    /// a specific `HTTPParserError` (414, 431 or 413) as soon as the excess is seen, so no
    /// peer can make the parser buffer more than these bounds (plus one socket read).
    package struct Limits: Sendable, Equatable {
        /// Bytes of the request line, CRLF not counted (leading empty lines count).
        /// Default 8192: RFC 9112 §3 recommends supporting at least 8000 octets, and no
        /// API path of this server comes near it. Exceeding it answers 414.
        package var maxRequestLineLength: Int
        /// Header field lines. Default 100, as Apache's `LimitRequestFields`: browsers send
        /// about 15, curl 3. Exceeding it answers 431.
        package var maxHeaderCount: Int
        /// Bytes of all header field lines with their CRLFs (request line and final empty
        /// line not counted). Default 16 KiB, Node.js's default: room for large cookies and
        /// bearer tokens; nginx allows 8 KiB per line. Exceeding it answers 431.
        package var maxHeaderBytes: Int
        /// Bytes of the (de-chunked) body. Default 1 MiB, nginx's `client_max_body_size`:
        /// events are small JSON objects, so even an array of thousands fits. Exceeding it
        /// (by `Content-Length` up front, or by the running sum of chunk sizes) answers 413.
        package var maxBodySize: Int
        /// Bytes of chunk extensions (from the BWS before `;` to the CR) summed over one
        /// body. Default 4096: no client of this server sends extensions, and a bound on
        /// the sum (not per chunk) stops the "many tiny chunks with extensions" exhaustion
        /// of Node.js CVE-2024-22019. Exceeding it answers 413.
        package var maxChunkExtensionBytes: Int
        /// Bytes of the chunked trailer section's field lines with their CRLFs.
        /// Default 4096: trailers are rare (a checksum, a status); the trailer count is
        /// bounded by `maxHeaderCount`. Exceeding either answers 431.
        package var maxTrailerBytes: Int

        package init(
            maxRequestLineLength: Int = 8192,
            maxHeaderCount: Int = 100,
            maxHeaderBytes: Int = 16 * 1024,
            maxBodySize: Int = 1024 * 1024,
            maxChunkExtensionBytes: Int = 4096,
            maxTrailerBytes: Int = 4096
        ) {
            self.maxRequestLineLength = maxRequestLineLength
            self.maxHeaderCount = maxHeaderCount
            self.maxHeaderBytes = maxHeaderBytes
            self.maxBodySize = maxBodySize
            self.maxChunkExtensionBytes = maxChunkExtensionBytes
            self.maxTrailerBytes = maxTrailerBytes
        }

        /// The defaults documented on each property.
        package static let `default` = Limits()
    }
}
