// libFuzzer target for HTTPRequestParser. Compiled by Fuzz/run.sh into the same module as
// the SpinWire sources (so no `import SpinWire`: internal API is visible too).
//
// Input layout: byte 0 seeds the split points and picks the limits; the rest is the
// connection's bytes. Each input is parsed whole and in pieces; the run traps when:
// - the two disagree (the result must never depend on how reads were split),
// - a returned request breaks a limit or an invariant the server relies on,
// - anything crashes (bounds, overflow) or ASan sees a memory error.

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
