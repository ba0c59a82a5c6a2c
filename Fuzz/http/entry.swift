// libFuzzer target for HTTPRequestParser. Compiled by Fuzz/run.sh into the same module as
// the SpinWire sources (so no `import SpinWire`: internal API is visible too).
//
// Input layout: byte 0 seeds the split points and picks the limits; the rest is the
// connection's bytes. Each input is parsed whole and in pieces; the run traps when:
// - the two disagree (the result must never depend on how reads were split),
// - a returned request breaks a limit or an invariant the server relies on,
// - anything crashes (bounds, overflow) or ASan sees a memory error.
// The same bytes, read as header lines, also go through HTTPResponseWriter, which must
// never let them split the response (see checkResponseWriter).

private struct FuzzRun: Equatable {
    var actions: [HTTPParserAction] = []
    var handedOver: [UInt8]? = nil
    var endOfInput: HTTPParserError? = nil
}

private func fuzzRun(_ pieces: [ArraySlice<UInt8>], limits: HTTPRequestParser.Limits) -> FuzzRun {
    var parser = HTTPRequestParser(limits: limits)
    var run = FuzzRun()
    var stopped = false
    for piece in pieces {
        parser.feed(piece)
        while !stopped {
            let action = parser.next()
            if action == .needMoreData { break }
            run.actions.append(action)
            switch action {
            case .error, .finished, .pausedForUpgrade: stopped = true
            default: break
            }
        }
    }
    if run.actions.last == .pausedForUpgrade {
        run.handedOver = parser.acceptUpgrade()
    } else {
        run.endOfInput = parser.endOfInput()
    }
    return run
}

private func check(_ request: HTTPRequest, limits: HTTPRequestParser.Limits) {
    precondition(request.body.count <= limits.maxBodySize, "body over the limit")
    precondition(request.headers.count <= limits.maxHeaderCount, "too many headers")
    precondition(request.trailers.count <= limits.maxHeaderCount, "too many trailers")
    precondition(request.version == .http1_0 || request.version == .http1_1, "unsupported version returned")
    precondition(request.method != .connect, "CONNECT returned")
    precondition(request.version == .http1_0 || request.headers.values(for: "host").count == 1, "Host rule broken")
    precondition(!(request.headers.contains("content-length") && request.headers.contains("transfer-encoding")), "CL with TE returned")
    precondition(request.headers.values(for: "content-length").count <= 1, "duplicate Content-Length returned")
    for field in request.headers {
        precondition(!field.name.isEmpty && field.name.utf8.allSatisfy(HTTPSyntax.isToken), "bad field name")
        precondition(!field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }), "CR/LF/NUL in value")
    }
    switch request.target.form {
    case .origin, .absolute: precondition(request.target.path.hasPrefix("/"), "path without /")
    case .asterisk: precondition(request.method == .options, "* without OPTIONS")
    case .authority: preconditionFailure("authority-form returned")
    }
    // Exercise the decoding helpers the router uses.
    _ = request.target.queryItems
    _ = request.target.pathSegments
    if request.isUpgradeCandidate { precondition(request.version == .http1_1, "upgrade in 1.0") }
}

/// The response writer must never let caller-supplied header bytes split the response:
/// whatever the names and values, the head is status line + Date + one line per kept field
/// + framing lines, each ending in CRLF, with no other CR or LF.
private func checkResponseWriter(_ bytes: [UInt8], seed: UInt8) {
    var headers = HTTPHeaders()
    for line in bytes.split(separator: 0x0A, maxSplits: 8, omittingEmptySubsequences: false) {
        let parts = line.split(separator: UInt8(ascii: ":"), maxSplits: 1, omittingEmptySubsequences: false)
        headers.append(name: String(decoding: parts[0], as: UTF8.self),
                       value: parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : "")
    }
    var writer = HTTPResponseWriter()
    let status = [200, 204, 304, 404, 101, 599][Int(seed) % 6]
    let context = HTTPResponseContext(
        requestMethod: seed & 8 == 0 ? .get : .head, requestVersion: seed & 16 == 0 ? .http1_1 : .http1_0,
        keepAlive: seed & 32 == 0)
    let output = writer.response(HTTPResponseHead(status: HTTPStatus(code: status), headers: headers),
                                 body: [UInt8](), context: context, secondsSince1970: Int(seed) * 86_400)
    var lines = 0
    var index = 0
    while index < output.count {
        if output[index] == 0x0A {
            precondition(index > 0 && output[index - 1] == 0x0D, "bare LF in response head")
            lines += 1
        } else if output[index] == 0x0D {
            precondition(index + 1 < output.count && output[index + 1] == 0x0A, "bare CR in response head")
        }
        index += 1
    }
    let owned: Set<String> = ["content-length", "transfer-encoding", "connection", "date"]
    let kept = headers.filter { field in
        !field.name.isEmpty && field.name.utf8.allSatisfy(HTTPSyntax.isToken) && !owned.contains(field.name.lowercased())
    }.count
    let framing = (HTTPStatus(code: status).allowsContent ? 1 : 0)
        + (!context.keepAlive || context.requestVersion == .http1_0 ? 1 : 0)
    precondition(lines == 2 + kept + framing + 1, "response head has \(lines) lines, expected \(2 + kept + framing + 1)")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequestParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    var seed = UInt64(input[0]) &* 0x9E37_79B9_7F4A_7C15 | 1
    let bytes = Array(input.dropFirst())
    // Small limits half of the time, so every limit is reachable with short inputs.
    let limits = input[0] & 1 == 0 ? HTTPRequestParser.Limits() : HTTPRequestParser.Limits(
        maxRequestLineLength: 64, maxHeaderCount: 4, maxHeaderBytes: 128, maxBodySize: 64,
        maxChunkExtensionBytes: 16, maxTrailerBytes: 32)

    checkResponseWriter(bytes, seed: input[0])
    let whole = fuzzRun([bytes[...]], limits: limits)
    var pieces: [ArraySlice<UInt8>] = []
    var start = 0
    while start < bytes.count {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
        let length = Int(seed % 7) + 1
        let end = min(bytes.count, start + length)
        pieces.append(bytes[start..<end])
        start = end
    }
    let split = fuzzRun(pieces, limits: limits)
    precondition(whole == split, "split parsing differs from whole-buffer parsing")

    for action in whole.actions {
        if case .request(let request) = action { check(request, limits: limits) }
        if case .error(let error) = action {
            precondition([400, 413, 414, 417, 431, 501, 505].contains(error.status), "odd status")
        }
    }
    return 0
}
