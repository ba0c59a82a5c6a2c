/// What the parser asks of the I/O layer after `next()`.
package enum HTTPParserAction: Sendable, Equatable {
    /// Nothing more can be parsed from what was fed: read from the socket and `feed` again.
    case needMoreData
    /// The head of an HTTP/1.1 request with `Expect: 100-continue` and a non-empty body is
    /// complete: write `HTTPResponseWriter.continueResponse` (or a final error response and
    /// close), then call `next()` again. Always emitted for such requests, even when the
    /// body is already buffered, so the outcome never depends on how reads were split
    /// (RFC 9110 §10.1.1 allows the extra 100).
    case sendContinue
    /// A complete request. Answer it before asking for the next one (RFC 9112 §9.3.2:
    /// responses to pipelined requests go out in order).
    case request(HTTPRequest)
    /// The previous request was an upgrade candidate. Call `acceptUpgrade()` (the
    /// connection now speaks the new protocol; it returns the bytes already read past the
    /// request) or `declineUpgrade()` (keep parsing HTTP).
    case pausedForUpgrade
    /// No more requests on this connection: the last one asked to close (RFC 9112 §9.6:
    /// a server SHOULD NOT process further requests), or the upgrade was accepted. Close
    /// after writing the last response. Bytes fed from now on are dropped.
    case finished
    /// The request is refused. Answer `error.status` with `error.jsonBody` and
    /// `Connection: close`, then close. The parser stays failed.
    case error(HTTPParserError)
}

/// An incremental HTTP/1.1 request parser (RFC 9112): push bytes with `feed(_:)`, then call
/// `next()` until it returns `.needMoreData`. A pure value, no I/O: the socket loop is
///
/// ```swift
/// parser.feed(bytesRead)
/// loop: while true {
///     switch parser.next() {
///     case .needMoreData: break loop            // read again
///     case .sendContinue: write(HTTPResponseWriter.continueResponse)
///     case .request(let request): write(respond(to: request))
///     case .pausedForUpgrade: handOver(parser.acceptUpgrade()); break loop
///     case .finished: close(); break loop
///     case .error(let error): write(errorResponse(error)); close(); break loop
///     }
/// }
/// ```
///
/// The result never depends on how the input was split into `feed` calls: every decision
/// is taken at a byte position from the bytes before it (tests feed every split).
///
/// Strictness, chosen against request smuggling (a proxy in front must never frame a
/// request differently from us):
/// - Lines end with CRLF only. A bare LF is rejected everywhere, not accepted as RFC 9112
///   §2.2 permits: every real client sends CRLF, and the LF leniency is exactly what lets a
///   front end and a back end disagree on where a header (or a chunk-size line) ends.
///   A bare CR is rejected as §2.2 requires.
/// - Empty lines before the request line are skipped (RFC 9112 §2.2 SHOULD), within the
///   request-line limit.
/// - Request line: exactly one SP between its three parts (RFC 9112 §3).
/// - Framing: see `HTTPParserError` for each rejected combination (RFC 9112 §6).
package struct HTTPRequestParser: Sendable {
    package let limits: Limits

    private enum State: Sendable, Equatable {
        case requestLine
        case headers
        case contentLengthBody(remaining: Int)
        case chunkSizeLine(ChunkSizeLine)
        case chunkData(remaining: Int)
        case chunkDataCR
        case chunkDataLF
        case trailers
        case upgradePending
        case finished
        case failed(HTTPParserError)
    }

    /// Progress through `1*HEXDIG [ BWS ";" chunk-ext ] CRLF` (RFC 9112 §7.1), byte by byte.
    private struct ChunkSizeLine: Sendable, Equatable {
        enum Phase: Sendable, Equatable { case digits, whitespace, extensions, lineFeed }
        var phase = Phase.digits
        var digits = 0
        var size: UInt64 = 0
    }

    private enum LineScan {
        case line(Range<Int>)
        case incomplete
        case failure(HTTPParserError)
    }

    private var state = State.requestLine
    /// Bytes fed and not yet consumed are `buffer[readIndex...]`.
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// How far past `readIndex` the current line has been scanned already (so byte-at-a-time
    /// input is scanned once, not quadratically).
    private var lineScanned = 0
    /// Empty-line bytes skipped before the current request line.
    private var skippedBytes = 0
    private var head = HeadBuilder()
    private var body: [UInt8] = []
    private var trailers = HTTPHeaders()
    private var trailerBytes = 0
    private var extensionBytes = 0

    package init(limits: Limits = .default) {
        self.limits = limits
    }

    /// Where the parser is within the connection, for the server's timeouts: an idle
    /// timeout while `.idle`, a header timeout while `.head` (slowloris), a body timeout
    /// while `.body`.
    package enum Phase: Sendable, Equatable {
        /// Between requests, nothing of the next one received yet.
        case idle
        /// Part of a request line or header section received.
        case head
        /// The head is complete; body or trailer bytes are awaited.
        case body
        /// `.pausedForUpgrade`: waiting for `acceptUpgrade()` or `declineUpgrade()`.
        case upgradePending
        /// `.finished` or failed: no more requests on this connection.
        case done
    }

    package var phase: Phase {
        switch state {
        case .requestLine: bufferedByteCount == 0 ? .idle : .head
        case .headers: .head
        case .contentLengthBody, .chunkSizeLine, .chunkData, .chunkDataCR, .chunkDataLF, .trailers: .body
        case .upgradePending: .upgradePending
        case .finished, .failed: .done
        }
    }

    /// Bytes fed but not consumed yet (for backpressure: stop reading past some bound).
    package var bufferedByteCount: Int { buffer.count - readIndex }

    /// Appends bytes read from the connection. Dropped once the parser is finished or failed.
    package mutating func feed(_ bytes: some Collection<UInt8>) {
        guard makeRoomToFeed() else { return }
        buffer.append(contentsOf: bytes)
    }

    /// `feed` for what a socket read returns: not generic, so that a call from another
    /// module (the server's connection) copies the bytes with one memcpy rather than
    /// through an unspecialised generic append that looks up type metadata at every call.
    package mutating func feed(_ bytes: [UInt8]) {
        guard makeRoomToFeed() else { return }
        buffer.append(contentsOf: bytes)
    }

    /// Drops the consumed bytes before new ones are appended; false once the parser is
    /// finished or failed (new bytes are dropped then).
    private mutating func makeRoomToFeed() -> Bool {
        switch state {
        case .finished, .failed: return false
        default: break
        }
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex >= 4096 && readIndex * 2 >= buffer.count {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
        return true
    }

    /// `feed(bytes)` then `next()`.
    package mutating func parse(_ bytes: some Collection<UInt8>) -> HTTPParserAction {
        feed(bytes)
        return next()
    }

    /// Takes the bytes read past an upgrade request (they belong to the new protocol, e.g.
    /// the first WebSocket frames) and finishes the parser. Returns [] unless `next()`
    /// returned `.pausedForUpgrade`.
    package mutating func acceptUpgrade() -> [UInt8] {
        guard state == .upgradePending else { return [] }
        let rest = Array(buffer[readIndex...])
        buffer = []
        readIndex = 0
        state = .finished
        head = HeadBuilder()  // a stream lives long: keep nothing of the request it began with
        return rest
    }

    /// Refuses the upgrade (RFC 9110 §7.8: a server may ignore `Upgrade`) and goes on
    /// parsing HTTP requests, or finishes if that request did not keep the connection alive.
    package mutating func declineUpgrade() {
        guard state == .upgradePending else { return }
        state = head.keepAlive ? .requestLine : .finished
        head = HeadBuilder()
    }

    /// Tells the parser the peer closed its side. Returns `.incompleteRequest` when a
    /// request was cut in the middle (nothing to answer then, but worth a log line), nil
    /// on a clean close between requests.
    package mutating func endOfInput() -> HTTPParserError? {
        switch state {
        case .requestLine where bufferedByteCount == 0, .finished, .upgradePending, .failed:
            return nil
        default:
            state = .failed(.incompleteRequest)
            return .incompleteRequest
        }
    }

    /// Parses as far as the fed bytes allow and says what to do next.
    package mutating func next() -> HTTPParserAction {
        do {
            return try step()
        } catch {
            state = .failed(error)
            buffer = []
            readIndex = 0
            return .error(error)
        }
    }

    private mutating func step() throws(HTTPParserError) -> HTTPParserAction {
        while true {
            switch state {
            case .failed(let error):
                return .error(error)
            case .finished:
                return .finished
            case .upgradePending:
                return .pausedForUpgrade

            case .requestLine:
                switch scanLine(maxContent: limits.maxRequestLineLength - skippedBytes, tooLong: .requestLineTooLong) {
                case .incomplete: return .needMoreData
                case .failure(let error): throw error
                case .line(let range) where range.isEmpty:
                    // RFC 9112 §2.2: ignore empty lines before the request line.
                    skippedBytes += 2
                    if skippedBytes > limits.maxRequestLineLength { throw .requestLineTooLong }
                case .line(let range):
                    skippedBytes = 0
                    head = HeadBuilder(fieldCapacity: 16)  // one allocation for a typical head
                    let buffer = self.buffer
                    try buffer.withUnsafeBufferPointer { bytes throws(HTTPParserError) in try head.parseRequestLine(bytes[range]) }
                    state = .headers
                }

            case .headers:
                switch scanLine(maxContent: limits.maxHeaderBytes - head.headerBytes - 2, tooLong: .headerSectionTooLarge) {
                case .incomplete: return .needMoreData
                case .failure(let error): throw error
                case .line(let range) where range.isEmpty:
                    if let action = try headComplete() { return action }
                case .line(let range):
                    head.headerBytes += range.count + 2
                    guard head.headers.count < limits.maxHeaderCount else { throw .tooManyHeaders }
                    let buffer = self.buffer
                    try buffer.withUnsafeBufferPointer { bytes throws(HTTPParserError) in try head.parseField(bytes[range]) }
                }

            case .contentLengthBody(let remaining):
                let available = min(remaining, buffer.count - readIndex)
                if available > 0 {
                    body.append(contentsOf: buffer[readIndex..<(readIndex + available)])
                    readIndex += available
                }
                if available == remaining { return requestComplete() }
                state = .contentLengthBody(remaining: remaining - available)
                return .needMoreData

            case .chunkSizeLine(var line):
                guard try scanChunkSizeLine(&line) else {
                    state = .chunkSizeLine(line)
                    return .needMoreData
                }
                if line.size == 0 {
                    state = .trailers
                } else {
                    // RFC 9110 §15.5.14: refuse as soon as the sum of chunk sizes passes the limit.
                    guard line.size <= UInt64(limits.maxBodySize - body.count) else { throw .bodyTooLarge }
                    state = .chunkData(remaining: Int(line.size))
                }

            case .chunkData(let remaining):
                let available = min(remaining, buffer.count - readIndex)
                if available > 0 {
                    body.append(contentsOf: buffer[readIndex..<(readIndex + available)])
                    readIndex += available
                }
                guard available == remaining else {
                    state = .chunkData(remaining: remaining - available)
                    return .needMoreData
                }
                state = .chunkDataCR

            case .chunkDataCR, .chunkDataLF:
                // RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF.
                guard readIndex < buffer.count else { return .needMoreData }
                let expected = state == .chunkDataCR ? HTTPSyntax.cr : HTTPSyntax.lf
                guard buffer[readIndex] == expected else { throw .invalidChunkTerminator }
                readIndex += 1
                state = state == .chunkDataCR ? .chunkDataLF : .chunkSizeLine(ChunkSizeLine())

            case .trailers:
                // RFC 9112 §7.1.2: trailer-section = *( field-line CRLF ), then CRLF.
                switch scanLine(maxContent: limits.maxTrailerBytes - trailerBytes - 2, tooLong: .trailerSectionTooLarge) {
                case .incomplete: return .needMoreData
                case .failure(let error): throw error
                case .line(let range) where range.isEmpty:
                    return requestComplete()
                case .line(let range):
                    trailerBytes += range.count + 2
                    guard trailers.count < limits.maxHeaderCount else { throw .trailerSectionTooLarge }
                    let (name, value) = try buffer.withUnsafeBufferPointer { bytes throws(HTTPParserError) in
                        let field = try HeadBuilder.splitField(bytes[range])
                        return (String(decoding: field.name, as: UTF8.self), String(decoding: field.value, as: UTF8.self))
                    }
                    trailers.append(name: name, value: value)
                }
            }
        }
    }

    /// The empty line after the headers: decide the framing (RFC 9112 §6.3) and move on.
    private mutating func headComplete() throws(HTTPParserError) -> HTTPParserAction? {
        let framing = try head.framing(limits: limits)
        body = []
        trailers = HTTPHeaders()
        trailerBytes = 0
        extensionBytes = 0
        switch framing {
        case .none, .contentLength(0):
            return requestComplete()
        case .contentLength(let length):
            body.reserveCapacity(length)
            state = .contentLengthBody(remaining: length)
        case .chunked:
            state = .chunkSizeLine(ChunkSizeLine())
        }
        return head.expectsContinue ? .sendContinue : nil
    }

    private mutating func requestComplete() -> HTTPParserAction {
        let request = head.request(body: body, trailers: trailers)
        body = []
        trailers = HTTPHeaders()
        if request.isUpgradeCandidate {
            state = .upgradePending  // `declineUpgrade` still reads the head
        } else {
            state = request.keepAlive ? .requestLine : .finished
            head = HeadBuilder()  // the request owns its fields now; an idle connection keeps none
        }
        return .request(request)
    }

    /// Finds the end of the line starting at `readIndex`: returns its content (without
    /// CRLF) and consumes it. Rules are checked byte by byte in order, so the first
    /// offending byte decides the error however the input was split.
    private mutating func scanLine(maxContent: Int, tooLong: HTTPParserError) -> LineScan {
        buffer.withUnsafeBufferPointer { bytes in
            let start = readIndex
            var index = start + lineScanned
            while index < bytes.count {
                let byte = bytes[index]
                if byte == HTTPSyntax.lf {
                    // RFC 9112 §2.2: a line ends with CRLF; bare LF is rejected (see type doc).
                    guard index > start && bytes[index - 1] == HTTPSyntax.cr else { return .failure(.bareLineFeed) }
                    readIndex = index + 1
                    lineScanned = 0
                    return .line(start..<(index - 1))
                }
                // RFC 9112 §2.2: a CR not followed by LF is rejected.
                if index > start && bytes[index - 1] == HTTPSyntax.cr { return .failure(.bareCarriageReturn) }
                if byte != HTTPSyntax.cr && index - start >= maxContent { return .failure(tooLong) }
                index += 1
            }
            lineScanned = index - start
            return .incomplete
        }
    }

    /// Consumes the bytes of a chunk-size line; true once its LF was read.
    private mutating func scanChunkSizeLine(_ line: inout ChunkSizeLine) throws(HTTPParserError) -> Bool {
        while readIndex < buffer.count {
            let byte = buffer[readIndex]
            readIndex += 1
            switch line.phase {
            case .digits:
                if let value = HTTPSyntax.hexValue(byte) {
                    // 16 hex digits fill 64 bits; more can only overflow.
                    guard line.digits < 16 else { throw .chunkSizeTooLarge }
                    line.size = line.size << 4 | UInt64(value)
                    line.digits += 1
                    continue
                }
                guard line.digits > 0 else { throw byte == HTTPSyntax.lf ? .bareLineFeed : .invalidChunkSize }
                switch byte {
                case HTTPSyntax.cr: line.phase = .lineFeed
                case HTTPSyntax.lf: throw .bareLineFeed
                case HTTPSyntax.semicolon: line.phase = .extensions
                case HTTPSyntax.sp, HTTPSyntax.htab: line.phase = .whitespace
                default: throw .invalidChunkSize
                }
                if line.phase != .lineFeed { try countExtensionByte() }
            case .whitespace:
                // RFC 9112 §7.1.1: BWS is only allowed before ";".
                switch byte {
                case HTTPSyntax.sp, HTTPSyntax.htab: break
                case HTTPSyntax.semicolon: line.phase = .extensions
                case HTTPSyntax.lf: throw .bareLineFeed
                default: throw .invalidChunkSize
                }
                try countExtensionByte()
            case .extensions:
                if byte == HTTPSyntax.cr {
                    line.phase = .lineFeed
                } else if byte == HTTPSyntax.lf {
                    throw .bareLineFeed
                } else if HTTPSyntax.isFieldValue(byte) {
                    try countExtensionByte()
                } else {
                    throw .invalidChunkExtension
                }
            case .lineFeed:
                guard byte == HTTPSyntax.lf else { throw .bareCarriageReturn }
                return true
            }
        }
        return false
    }

    private mutating func countExtensionByte() throws(HTTPParserError) {
        extensionBytes += 1
        if extensionBytes > limits.maxChunkExtensionBytes { throw .chunkExtensionsTooLarge }
    }
}
