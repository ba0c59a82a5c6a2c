/// Why the request parser refused a request. Each case maps to exactly one HTTP status
/// (`status`), a short machine code (`code`) and a human message (`message`), so the
/// server answers `{"error":{"code":..,"message":..}}` with that status and then closes the
/// connection: after any of these the parser stays failed, because the framing of
/// whatever follows on the connection can no longer be trusted (RFC 9112 §11.2).
package enum HTTPParserError: Error, Equatable, Hashable, Sendable, CaseIterable {
    // MARK: 400 Bad Request: the request line
    /// The request line is not `method SP request-target SP HTTP-version` (RFC 9112 §3).
    case invalidRequestLine
    /// The method contains a character that is not a token character (RFC 9110 §9.1).
    case invalidMethod
    /// The request-target has a character outside RFC 3986, or is not one of the four
    /// forms of RFC 9112 §3.2.
    case invalidTarget
    /// `*` (asterisk-form) used with a method other than OPTIONS (RFC 9112 §3.2.4).
    case asteriskFormWithoutOptions
    /// authority-form (`host:port`) used with a method other than CONNECT (RFC 9112 §3.2.3).
    case authorityFormWithoutConnect
    /// The version is not `HTTP/DIGIT.DIGIT` (RFC 9112 §2.3).
    case invalidVersion

    // MARK: 400 Bad Request: line syntax
    /// A CR not followed by LF (RFC 9112 §2.2: reject, never treat as a line end).
    case bareCarriageReturn
    /// An LF without the CR before it. We reject bare LF everywhere (RFC 9112 §2.2 only
    /// permits accepting it): see `HTTPRequestParser` for why.
    case bareLineFeed

    // MARK: 400 Bad Request: header fields
    /// A header line without a colon, with an empty name, or with a name that has a
    /// non-token character (RFC 9110 §5.1).
    case invalidHeaderName
    /// Whitespace between the field name and the colon (RFC 9112 §5.1: MUST reject).
    case whitespaceBeforeColon
    /// A field value with NUL, a control character or DEL (RFC 9110 §5.5).
    case invalidHeaderValue
    /// A header line starting with SP/HTAB: obsolete line folding, or whitespace between
    /// the request line and the first field (RFC 9112 §5.2, §2.2).
    case obsoleteLineFolding
    /// HTTP/1.1 request without `Host` (RFC 9112 §3.2: MUST answer 400).
    case missingHost
    /// More than one `Host` field line (RFC 9112 §3.2: MUST answer 400).
    case duplicateHost
    /// `Host` is not `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2).
    case invalidHost

    // MARK: 400 Bad Request: message framing (request smuggling)
    /// `Content-Length` is not 1*DIGIT or does not fit in 63 bits (RFC 9110 §8.6).
    case invalidContentLength
    /// `Content-Length` sent more than once with the same value (or `5, 5`). RFC 9112 §6.3
    /// allows collapsing these; we reject them because the proxies in front of us may not.
    case duplicateContentLength
    /// `Content-Length` sent more than once with different values (RFC 9112 §6.3 rule 5).
    case conflictingContentLength
    /// `Content-Length` together with `Transfer-Encoding` (RFC 9112 §6.1: a server MAY
    /// reject; it is the classic CL.TE / TE.CL desync, so we always do).
    case contentLengthWithTransferEncoding
    /// `Transfer-Encoding` whose final coding is not `chunked`, that applies `chunked`
    /// twice, or that is empty (RFC 9112 §6.3 rule 4, §7.1).
    case invalidTransferEncoding
    /// `Transfer-Encoding` in an HTTP/1.0 request: the framing is faulty (RFC 9112 §6.1).
    case transferEncodingInHTTP10
    /// A chunk-size line that is not 1*HEXDIG [chunk-ext] CRLF (RFC 9112 §7.1).
    case invalidChunkSize
    /// A chunk extension with a control character or without its leading `;`
    /// (RFC 9112 §7.1.1).
    case invalidChunkExtension
    /// Chunk data not followed by exactly CRLF (RFC 9112 §7.1).
    case invalidChunkTerminator
    /// The connection ended in the middle of a request (RFC 9112 §8: incomplete message).
    case incompleteRequest

    // MARK: 413, 414, 417, 431
    /// The body (declared by `Content-Length` or the running sum of chunk sizes) is larger
    /// than `Limits.maxBodySize` (RFC 9110 §15.5.14).
    case bodyTooLarge
    /// A chunk size with more hex digits than a 64-bit length can hold.
    case chunkSizeTooLarge
    /// The chunk extensions of one body exceed `Limits.maxChunkExtensionBytes`
    /// (the Node.js CVE-2024-22019 resource exhaustion).
    case chunkExtensionsTooLarge
    /// The request line is longer than `Limits.maxRequestLineLength` (RFC 9112 §3: 414).
    case requestLineTooLong
    /// `Expect` with something other than `100-continue` (RFC 9110 §10.1.1: 417).
    case unsupportedExpectation
    /// More header fields than `Limits.maxHeaderCount` (RFC 6585 §5: 431).
    case tooManyHeaders
    /// The header section is larger than `Limits.maxHeaderBytes` (RFC 6585 §5: 431).
    case headerSectionTooLarge
    /// The trailer section is larger than `Limits.maxTrailerBytes` or has more fields
    /// than `Limits.maxHeaderCount`.
    case trailerSectionTooLarge

    // MARK: 501, 505
    /// A transfer coding other than `chunked` (RFC 9112 §6.1: SHOULD answer 501).
    case unsupportedTransferCoding
    /// CONNECT: this is an origin server, not a tunnelling proxy (RFC 9110 §9.3.6, §15.6.2).
    case connectNotSupported
    /// A well-formed version other than HTTP/1.0 and HTTP/1.1 (RFC 9110 §15.6.6: 505).
    case unsupportedVersion

    /// The HTTP status code the server answers with.
    package var status: Int {
        switch self {
        case .bodyTooLarge, .chunkSizeTooLarge, .chunkExtensionsTooLarge: 413
        case .requestLineTooLong: 414
        case .unsupportedExpectation: 417
        case .tooManyHeaders, .headerSectionTooLarge, .trailerSectionTooLarge: 431
        case .unsupportedTransferCoding, .connectNotSupported: 501
        case .unsupportedVersion: 505
        default: 400
        }
    }

    /// A short, stable machine code for the `{"error":{"code":..}}` body.
    package var code: String {
        switch self {
        case .invalidRequestLine: "invalid_request_line"
        case .invalidMethod: "invalid_method"
        case .invalidTarget: "invalid_target"
        case .asteriskFormWithoutOptions: "asterisk_form_without_options"
        case .authorityFormWithoutConnect: "authority_form_without_connect"
        case .invalidVersion: "invalid_version"
        case .bareCarriageReturn: "bare_cr"
        case .bareLineFeed: "bare_lf"
        case .invalidHeaderName: "invalid_header_name"
        case .whitespaceBeforeColon: "whitespace_before_colon"
        case .invalidHeaderValue: "invalid_header_value"
        case .obsoleteLineFolding: "obsolete_line_folding"
        case .missingHost: "missing_host"
        case .duplicateHost: "duplicate_host"
        case .invalidHost: "invalid_host"
        case .invalidContentLength: "invalid_content_length"
        case .duplicateContentLength: "duplicate_content_length"
        case .conflictingContentLength: "conflicting_content_length"
        case .contentLengthWithTransferEncoding: "content_length_with_transfer_encoding"
        case .invalidTransferEncoding: "invalid_transfer_encoding"
        case .transferEncodingInHTTP10: "transfer_encoding_in_http10"
        case .invalidChunkSize: "invalid_chunk_size"
        case .invalidChunkExtension: "invalid_chunk_extension"
        case .invalidChunkTerminator: "invalid_chunk_terminator"
        case .incompleteRequest: "incomplete_request"
        case .bodyTooLarge: "body_too_large"
        case .chunkSizeTooLarge: "chunk_size_too_large"
        case .chunkExtensionsTooLarge: "chunk_extensions_too_large"
        case .requestLineTooLong: "uri_too_long"
        case .unsupportedExpectation: "unsupported_expectation"
        case .tooManyHeaders: "too_many_headers"
        case .headerSectionTooLarge: "header_section_too_large"
        case .trailerSectionTooLarge: "trailer_section_too_large"
        case .unsupportedTransferCoding: "unsupported_transfer_coding"
        case .connectNotSupported: "connect_not_supported"
        case .unsupportedVersion: "unsupported_http_version"
        }
    }

    /// A one-sentence explanation for people reading the error body.
    package var message: String {
        switch self {
        case .invalidRequestLine: "The request line is not 'METHOD SP target SP HTTP/x.y CRLF'."
        case .invalidMethod: "The method contains a character that is not allowed in a token."
        case .invalidTarget: "The request target is not a valid origin-form, absolute-form, authority-form or asterisk-form target."
        case .asteriskFormWithoutOptions: "The asterisk-form target '*' is only allowed with OPTIONS."
        case .authorityFormWithoutConnect: "The authority-form target is only allowed with CONNECT."
        case .invalidVersion: "The HTTP version is not of the form HTTP/DIGIT.DIGIT."
        case .bareCarriageReturn: "A CR was not followed by LF."
        case .bareLineFeed: "A line ended with LF alone; lines must end with CRLF."
        case .invalidHeaderName: "A header line has no colon or its field name is not a token."
        case .whitespaceBeforeColon: "A header field name is followed by whitespace before the colon."
        case .invalidHeaderValue: "A header field value contains a control character."
        case .obsoleteLineFolding: "A header line starts with whitespace (obsolete line folding is not accepted)."
        case .missingHost: "An HTTP/1.1 request must have a Host header."
        case .duplicateHost: "The request has more than one Host header."
        case .invalidHost: "The Host header is not a valid host and optional port."
        case .invalidContentLength: "The Content-Length header is not a non-negative decimal number."
        case .duplicateContentLength: "The Content-Length header is sent more than once."
        case .conflictingContentLength: "The request has Content-Length headers with different values."
        case .contentLengthWithTransferEncoding: "The request has both Content-Length and Transfer-Encoding."
        case .invalidTransferEncoding: "Transfer-Encoding must end with a single 'chunked' coding."
        case .transferEncodingInHTTP10: "Transfer-Encoding is not allowed in an HTTP/1.0 request."
        case .invalidChunkSize: "A chunk size line is not a hexadecimal size followed by CRLF."
        case .invalidChunkExtension: "A chunk extension is malformed."
        case .invalidChunkTerminator: "Chunk data is not followed by CRLF."
        case .incompleteRequest: "The connection ended before the request was complete."
        case .bodyTooLarge: "The request body is larger than the server accepts."
        case .chunkSizeTooLarge: "A chunk size is too large."
        case .chunkExtensionsTooLarge: "The chunk extensions of the body are larger than the server accepts."
        case .requestLineTooLong: "The request line is longer than the server accepts."
        case .unsupportedExpectation: "The only supported expectation is '100-continue'."
        case .tooManyHeaders: "The request has more header fields than the server accepts."
        case .headerSectionTooLarge: "The request header section is larger than the server accepts."
        case .trailerSectionTooLarge: "The chunked trailer section is larger than the server accepts."
        case .unsupportedTransferCoding: "The only supported transfer coding is 'chunked'."
        case .connectNotSupported: "CONNECT is not supported by this server."
        case .unsupportedVersion: "Only HTTP/1 is supported (HTTP/1.0, and HTTP/1.1 for every later minor version)."
        }
    }

    /// The JSON error body of docs/PROTOCOL.md: `{"error":{"code":"..","message":".."}}`.
    /// Codes and messages are fixed ASCII without quotes or backslashes, so no escaping.
    package var jsonBody: [UInt8] {
        Array(#"{"error":{"code":"\#(code)","message":"\#(message)"}}"#.utf8)
    }
}
