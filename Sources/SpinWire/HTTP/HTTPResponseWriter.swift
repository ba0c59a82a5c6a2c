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
///
/// Every response is written into one array reserved at its final size: bytes are
/// appended in place (no string interpolation, no intermediate arrays), and the framing
/// fields a caller set are skipped while writing rather than removed from a copy.
package struct HTTPResponseWriter: Sendable {
    private var dateCache = HTTPDateCache()

    package init() {}

    /// The interim response for `HTTPParserAction.sendContinue` (RFC 9110 §15.2.1).
    package static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// A complete response with `body` framed by `Content-Length`. For HEAD the length is
    /// that of the body a GET would have had (RFC 9110 §9.3.2) and no body is written;
    /// 1xx, 204 and 304 get neither length nor body (RFC 9110 §8.6, §15.3.5, §15.4.5).
    /// (`body` is an array, not any collection: a generic function called from another
    /// module runs unspecialised, copying the body byte by byte through witness tables.)
    /// `lastField` is written after the head's fields: a field the server adds to every
    /// answer (its request ID) without a copy of the head's fields to append it to.
    package mutating func response(
        _ head: HTTPResponseHead, body: [UInt8] = [],
        context: HTTPResponseContext, secondsSince1970 now: Int,
        lastField: HTTPHeaders.Field? = nil
    ) -> [UInt8] {
        let writesBody = head.status.allowsContent && context.requestMethod != .head
        var output: [UInt8] = []
        let last = lastField.map { $0.name.utf8.count + $0.value.utf8.count + 4 } ?? 0
        output.reserveCapacity(Self.headCapacity(head) + last + (writesBody ? body.count : 0))
        appendStatusLineAndFields(head, now: now, to: &output)
        if let lastField { Self.appendField(lastField, to: &output, skippingFraming: true) }
        if head.status.allowsContent {
            Self.append("Content-Length: ", to: &output)
            Self.appendDecimal(body.count, to: &output)
            Self.appendCRLF(to: &output)
        }
        Self.appendConnection(context.keepAlive, version: context.requestVersion, to: &output)
        Self.appendCRLF(to: &output)
        if writesBody {
            output.append(contentsOf: body)
        }
        return output
    }

    /// The head of a response whose body is streamed: chunked for HTTP/1.1, delimited by
    /// close for HTTP/1.0 (RFC 9112 §7: never chunked to a 1.0 client).
    package mutating func streamingResponse(
        _ head: HTTPResponseHead, context: HTTPResponseContext, secondsSince1970 now: Int
    ) -> HTTPStreamingResponse {
        var output: [UInt8] = []
        output.reserveCapacity(Self.headCapacity(head))
        appendStatusLineAndFields(head, now: now, to: &output)
        var keepAlive = context.keepAlive
        let mode: HTTPBodyEncoder.Mode
        if !head.status.allowsContent {
            mode = .none
        } else if context.requestVersion == .http1_1 {
            Self.append("Transfer-Encoding: chunked\r\n", to: &output)
            mode = context.requestMethod == .head ? .none : .chunked
        } else {
            keepAlive = false
            mode = context.requestMethod == .head ? .none : .closeDelimited
        }
        Self.appendConnection(keepAlive, version: context.requestVersion, to: &output)
        Self.appendCRLF(to: &output)
        return HTTPStreamingResponse(head: output, body: HTTPBodyEncoder(mode: mode), keepAlive: keepAlive)
    }

    /// The head of a `101 Switching Protocols` answer (RFC 9110 §15.2.2): no framing
    /// fields; the caller's headers carry `Upgrade`, `Connection` and the protocol's own.
    package mutating func switchingProtocols(headers: HTTPHeaders, secondsSince1970 now: Int) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(Self.headCapacity(HTTPResponseHead(status: .switchingProtocols, headers: headers)))
        Self.append("HTTP/1.1 101 Switching Protocols\r\n", to: &output)
        dateCache.appendDateField(secondsSince1970: now, to: &output)
        Self.appendFields(headers, to: &output)
        Self.appendCRLF(to: &output)
        return output
    }

    /// Room for everything a head can hold: status line, `Date`, the caller's fields and
    /// the framing fields (at most `Content-Length` with 20 digits and `Connection`).
    private static func headCapacity(_ head: HTTPResponseHead) -> Int {
        var capacity = 128 + head.status.reasonPhrase.utf8.count
        for field in head.headers.fields {
            capacity += field.name.utf8.count + field.value.utf8.count + 4
        }
        return capacity
    }

    private mutating func appendStatusLineAndFields(_ head: HTTPResponseHead, now: Int, to output: inout [UInt8]) {
        // RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ].
        // We answer HTTP/1.1 to both 1.0 and 1.1 clients (RFC 9110 §6.2).
        let code = min(max(head.status.code, 100), 999)
        Self.append("HTTP/1.1 ", to: &output)
        output.append(UInt8(ascii: "0") &+ UInt8(code / 100))
        output.append(UInt8(ascii: "0") &+ UInt8(code / 10 % 10))
        output.append(UInt8(ascii: "0") &+ UInt8(code % 10))
        output.append(HTTPSyntax.sp)
        Self.appendSanitisedValue(head.status.reasonPhrase, to: &output)
        Self.appendCRLF(to: &output)
        dateCache.appendDateField(secondsSince1970: now, to: &output)
        Self.appendFields(head.headers, to: &output, skippingFraming: true)
    }

    private static func appendConnection(_ keepAlive: Bool, version: HTTPVersion, to output: inout [UInt8]) {
        if !keepAlive {
            append("Connection: close\r\n", to: &output)
        } else if version == .http1_0 {
            // RFC 9112 §9.3: an HTTP/1.0 client keeps the connection only when told so.
            append("Connection: keep-alive\r\n", to: &output)
        }
    }

    /// Appends `name: value` CRLF for each field whose name is a token; with
    /// `skippingFraming`, fields the writer owns (`Content-Length`, `Transfer-Encoding`,
    /// `Connection`, `Date`) are left out.
    static func appendFields(_ fields: HTTPHeaders, to output: inout [UInt8], skippingFraming: Bool = false) {
        for field in fields.fields { appendField(field, to: &output, skippingFraming: skippingFraming) }
    }

    /// `appendFields` for one field.
    static func appendField(_ field: HTTPHeaders.Field, to output: inout [UInt8], skippingFraming: Bool) {
        let written = field.name.utf8.withContiguousStorageIfAvailable { name -> Bool in
            guard !name.isEmpty, name.allSatisfy(HTTPSyntax.isToken) else { return false }
            if skippingFraming && isFramingField(name) { return false }
            output.append(contentsOf: name)
            return true
        } ?? appendNameSlowly(field.name, to: &output, skippingFraming: skippingFraming)
        guard written else { return }
        output.append(HTTPSyntax.colon)
        output.append(HTTPSyntax.sp)
        appendSanitisedValue(field.value, to: &output)
        appendCRLF(to: &output)
    }

    /// `appendFields` for a name whose bytes are not contiguous (never for the native
    /// strings this server makes).
    private static func appendNameSlowly(_ name: String, to output: inout [UInt8], skippingFraming: Bool) -> Bool {
        let bytes = Array(name.utf8)
        return bytes.withUnsafeBufferPointer { bytes in
            guard !bytes.isEmpty, bytes.allSatisfy(HTTPSyntax.isToken) else { return false }
            if skippingFraming && isFramingField(bytes) { return false }
            output.append(contentsOf: bytes)
            return true
        }
    }

    /// Whether `name` is one of the fields the writer decides (RFC 9110 §5.1:
    /// case-insensitive).
    private static func isFramingField(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        let bytes = name[...]
        switch name.count {
        case 4: return HTTPSyntax.equalsIgnoringCase(bytes, "date")
        case 10: return HTTPSyntax.equalsIgnoringCase(bytes, "connection")
        case 14: return HTTPSyntax.equalsIgnoringCase(bytes, "content-length")
        case 17: return HTTPSyntax.equalsIgnoringCase(bytes, "transfer-encoding")
        default: return false
        }
    }

    /// Appends the bytes of `value`, each control character (CR, LF, NUL, ...) as SP.
    private static func appendSanitisedValue(_ value: String, to output: inout [UInt8]) {
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { bytes in
            if bytes.allSatisfy(HTTPSyntax.isFieldValue) {
                output.append(contentsOf: bytes)
            } else {
                for byte in bytes { output.append(sanitisedValueByte(byte)) }
            }
        }
        if done == nil {
            for byte in value.utf8 { output.append(sanitisedValueByte(byte)) }
        }
    }

    @inline(__always)
    static func sanitisedValueByte(_ byte: UInt8) -> UInt8 {
        HTTPSyntax.isFieldValue(byte) ? byte : HTTPSyntax.sp
    }

    @inline(__always)
    static func append(_ text: StaticString, to output: inout [UInt8]) {
        output.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    static func appendCRLF(to output: inout [UInt8]) {
        output.append(HTTPSyntax.cr)
        output.append(HTTPSyntax.lf)
    }

    /// The decimal digits of `value` (negative counts as 0), as `Content-Length` wants them.
    static func appendDecimal(_ value: Int, to output: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for Int.max
        withUnsafeMutableBytes(of: &digits) { buffer in
            var rest = UInt(max(value, 0))
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") &+ UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }
}
