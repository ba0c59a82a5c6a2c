/// What the writer needs to know about the request being answered.
package struct HTTPResponseContext: Sendable, Equatable {
    package var requestMethod: HTTPMethod
    package var requestVersion: HTTPVersion
    /// Whether the server keeps the connection open after this response. False writes
    /// `Connection: close` (RFC 9112 §9.6), and the server closes after the last byte.
    package var keepAlive: Bool

    package init(requestMethod: HTTPMethod = .get, requestVersion: HTTPVersion = .http1_1, keepAlive: Bool = true) {
        self.requestMethod = requestMethod
        self.requestVersion = requestVersion
        self.keepAlive = keepAlive
    }

    /// The context for answering `request`; pass `keepAlive: false` to close anyway
    /// (shutting down, or after an error).
    package init(for request: HTTPRequest, keepAlive: Bool? = nil) {
        self.init(requestMethod: request.method, requestVersion: request.version,
                  keepAlive: keepAlive ?? request.keepAlive)
    }
}

/// The head of a streamed response and the encoder for its body.
package struct HTTPStreamingResponse: Sendable {
    /// The status line and header section, ready to write.
    package var head: [UInt8]
    /// Frames each piece of the body (chunked, raw, or nothing for HEAD/204/304).
    package var body: HTTPBodyEncoder
    /// False when the body is delimited by closing the connection (an HTTP/1.0 client
    /// cannot read chunked, RFC 9112 §7): close after `body.end()`.
    package var keepAlive: Bool
}

/// Frames the body of a streamed response, e.g. Server-Sent Events.
package struct HTTPBodyEncoder: Sendable, Equatable {
    package enum Mode: Sendable, Equatable {
        /// RFC 9112 §7.1 chunked coding.
        case chunked
        /// Bytes as they are; the end is the connection's close (HTTP/1.0 clients).
        case closeDelimited
        /// No content may be sent (HEAD, 1xx, 204, 304): every piece is dropped.
        case none
    }

    package let mode: Mode

    package init(mode: Mode) { self.mode = mode }

    /// The bytes to write for one piece of the body. An empty piece writes nothing (a
    /// zero-size chunk would end the body).
    package func encode(_ bytes: some Collection<UInt8>) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        switch mode {
        case .none:
            return []
        case .closeDelimited:
            return Array(bytes)
        case .chunked:
            var output = Array(String(bytes.count, radix: 16).utf8)
            output.reserveCapacity(output.count + bytes.count + 4)
            output += [HTTPSyntax.cr, HTTPSyntax.lf]
            output.append(contentsOf: bytes)
            output += [HTTPSyntax.cr, HTTPSyntax.lf]
            return output
        }
    }

    /// The bytes that end the body: the last chunk and the trailer section (RFC 9112 §7.1.2).
    package func end(trailers: HTTPHeaders = [:]) -> [UInt8] {
        guard mode == .chunked else { return [] }
        var output = Array("0\r\n".utf8)
        HTTPResponseWriter.appendFields(trailers, to: &output)
        output += [HTTPSyntax.cr, HTTPSyntax.lf]
        return output
    }
}

/// Serialises responses (RFC 9112 §4, §6): the status line, the header section with the
/// framing fields the writer decides (`Content-Length` or `Transfer-Encoding: chunked`,
/// `Connection`, `Date`), and the body, omitted where a response has none.
///
/// Header fields from the caller are sanitised against response splitting: a field whose
/// name is not a token is dropped, and CR, LF and other control characters in a value
/// become SP (RFC 9110 §5.5).
package struct HTTPResponseWriter: Sendable {
    private var dateCache = HTTPDateCache()

    package init() {}

    /// The interim response for `HTTPParserAction.sendContinue` (RFC 9110 §15.2.1).
    package static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// A complete response with `body` framed by `Content-Length`. For HEAD the length is
    /// that of the body a GET would have had (RFC 9110 §9.3.2) and no body is written;
    /// 1xx, 204 and 304 get neither length nor body (RFC 9110 §8.6, §15.3.5, §15.4.5).
    package mutating func response(
        _ head: HTTPResponseHead, body: some Collection<UInt8> = [UInt8](),
        context: HTTPResponseContext, secondsSince1970 now: Int
    ) -> [UInt8] {
        var output = statusLineAndFields(head, context: context, now: now, room: body.count)
        if head.status.allowsContent {
            output += "Content-Length: ".utf8
            output += String(body.count).utf8
            output += "\r\n".utf8
        }
        appendConnection(context.keepAlive, version: context.requestVersion, to: &output)
        output += "\r\n".utf8
        if head.status.allowsContent && context.requestMethod != .head {
            output.append(contentsOf: body)
        }
        return output
    }

    /// The head of a response whose body is streamed: chunked for HTTP/1.1, delimited by
    /// close for HTTP/1.0 (RFC 9112 §7: never chunked to a 1.0 client).
    package mutating func streamingResponse(
        _ head: HTTPResponseHead, context: HTTPResponseContext, secondsSince1970 now: Int
    ) -> HTTPStreamingResponse {
        var output = statusLineAndFields(head, context: context, now: now, room: 0)
        var keepAlive = context.keepAlive
        let mode: HTTPBodyEncoder.Mode
        if !head.status.allowsContent {
            mode = .none
        } else if context.requestVersion == .http1_1 {
            output += Array("Transfer-Encoding: chunked\r\n".utf8)
            mode = context.requestMethod == .head ? .none : .chunked
        } else {
            keepAlive = false
            mode = context.requestMethod == .head ? .none : .closeDelimited
        }
        appendConnection(keepAlive, version: context.requestVersion, to: &output)
        output += [HTTPSyntax.cr, HTTPSyntax.lf]
        return HTTPStreamingResponse(head: output, body: HTTPBodyEncoder(mode: mode), keepAlive: keepAlive)
    }

    /// The head of a `101 Switching Protocols` answer (RFC 9110 §15.2.2): no framing
    /// fields; the caller's headers carry `Upgrade`, `Connection` and the protocol's own.
    package mutating func switchingProtocols(headers: HTTPHeaders, secondsSince1970 now: Int) -> [UInt8] {
        var output = Array("HTTP/1.1 101 Switching Protocols\r\n".utf8)
        output += Array("Date: \(dateCache.imfFixdate(secondsSince1970: now))\r\n".utf8)
        Self.appendFields(headers, to: &output)
        output += [HTTPSyntax.cr, HTTPSyntax.lf]
        return output
    }

    /// The status line, `Date` and the caller's fields but those the writer owns, in one
    /// buffer with `room` more bytes reserved (the body): no string or array is made on
    /// the way, on every response.
    private mutating func statusLineAndFields(_ head: HTTPResponseHead, context: HTTPResponseContext, now: Int,
                                              room: Int) -> [UInt8] {
        // RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ].
        // We answer HTTP/1.1 to both 1.0 and 1.1 clients (RFC 9110 §6.2).
        let code = min(max(head.status.code, 100), 999)
        var output: [UInt8] = []
        output.reserveCapacity(256 + room)
        output += "HTTP/1.1 ".utf8
        output += String(code).utf8
        output.append(HTTPSyntax.sp)
        Self.appendSanitised(head.status.reasonPhrase, to: &output)
        output += "\r\nDate: ".utf8
        output += dateCache.imfFixdate(secondsSince1970: now).utf8
        output += "\r\n".utf8
        Self.appendFields(head.headers, to: &output, skipping: Self.ownedFields)
        return output
    }

    /// The framing fields the writer decides; the caller's are left out.
    private static let ownedFields = ["Content-Length", "Transfer-Encoding", "Connection", "Date"]

    private func appendConnection(_ keepAlive: Bool, version: HTTPVersion, to output: inout [UInt8]) {
        if !keepAlive {
            output += "Connection: close\r\n".utf8
        } else if version == .http1_0 {
            // RFC 9112 §9.3: an HTTP/1.0 client keeps the connection only when told so.
            output += "Connection: keep-alive\r\n".utf8
        }
    }

    static func appendFields(_ fields: HTTPHeaders, to output: inout [UInt8], skipping skipped: [String] = []) {
        for field in fields {
            guard !field.name.isEmpty, field.name.utf8.allSatisfy(HTTPSyntax.isToken),
                  !skipped.contains(where: { field.name.equalsIgnoringASCIICase($0) }) else { continue }
            output.append(contentsOf: field.name.utf8)
            output.append(HTTPSyntax.colon)
            output.append(HTTPSyntax.sp)
            appendSanitised(field.value, to: &output)
            output.append(HTTPSyntax.cr)
            output.append(HTTPSyntax.lf)
        }
    }

    private static func appendSanitised(_ value: String, to output: inout [UInt8]) {
        for byte in value.utf8 { output.append(sanitisedValueByte(byte)) }
    }

    @inline(__always)
    static func sanitisedValueByte(_ byte: UInt8) -> UInt8 {
        HTTPSyntax.isFieldValue(byte) ? byte : HTTPSyntax.sp
    }
}
