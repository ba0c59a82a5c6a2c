// libFuzzer target: WebSocket receive path (frame parser, aggregator, UTF-8, close
// handling, permessage-deflate inflation) through `WebSocketSession`.
// Built with all SpinWire sources in one module (see Fuzz/run.sh), so no `import SpinWire`.
// Seeds: Fuzz/websocket/corpus (first byte: configuration, second: split point / limit).
// Standalone build (the C shims need a module map naming CZlib.h and COpenSSL.h), e.g.:
//   swiftc -sanitize=fuzzer,address -parse-as-library -O -g -package-name spin \
//     -I <dir with module.modulemap> Fuzz/websocket/entry.swift Sources/SpinWire/WebSocket/*.swift \
//     Sources/SpinWire/Deflate/*.swift -lz -lssl -lcrypto -o fuzz-websocket
// `-package-name` is required: the codecs are `package` API.
//
// Oracles beyond "no crash / no sanitizer report":
// - feeding the input whole or split at any point gives the same actions;
// - the UTF-8 DFA agrees with the standard library's validation;
// - every delivered text message is valid UTF-8 and within the size limits;
// - after `.closeConnection` nothing more comes out.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocket(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let config = bytes[0]
    let split = Int(bytes[1])
    let input = Array(bytes[2...])

    // Differential check of the UTF-8 validator on the raw input.
    let dfa = UTF8StreamValidator.isValid(input)
    let stdlib = String(validating: input, as: UTF8.self) != nil
    precondition(dfa == stdlib, "UTF-8 validator disagrees with the standard library")

    let limits = WebSocketLimits(maxFrameSize: 4096, maxMessageSize: 8192, maxFragmentCount: 16,
                                 maxDecompressedMessageSize: 16384)
    let role: WebSocketRole = config & 1 == 0 ? .server : .client
    let deflate: PerMessageDeflateParameters? = config & 2 == 0 ? nil : PerMessageDeflateParameters(
        serverNoContextTakeover: config & 4 != 0, clientNoContextTakeover: config & 8 != 0,
        serverMaxWindowBits: 8 + Int(config >> 4 & 7), clientMaxWindowBits: 8 + Int(config >> 4 & 7))

    var whole = WebSocketSession(role: role, limits: limits, deflate: deflate)
    let wholeActions = whole.receive(input)

    var pieces = WebSocketSession(role: role, limits: limits, deflate: deflate)
    let cut = input.isEmpty ? 0 : split % (input.count + 1)
    let pieceActions = pieces.receive(Array(input[..<cut])) + pieces.receive(Array(input[cut...]))
    precondition(normalized(wholeActions, role) == normalized(pieceActions, role),
                 "split feeding changed the result")

    var closed = false
    for action in wholeActions {
        precondition(!closed, "action after closeConnection")
        switch action {
        case .message(.text(let text)):
            precondition(text.utf8.count <= limits.maxDecompressedMessageSize)
        case .message(.binary(let payload)):
            precondition(payload.count <= max(limits.maxMessageSize, limits.maxDecompressedMessageSize))
        case .closeConnection:
            closed = true
        default:
            break
        }
    }
    return 0
}

/// A client masks what it sends with random keys: compare the unmasked frames instead.
private func normalized(_ actions: [WebSocketSession.Action], _ role: WebSocketRole) -> [WebSocketSession.Action] {
    guard role == .client else { return actions }
    return actions.map { action in
        guard case .send(let bytes) = action else { return action }
        var parser = WebSocketFrameParser(role: .server, allowsCompressedFrames: true)
        parser.append(bytes)
        guard let frame = try? parser.nextFrame() else { preconditionFailure("client sent an unparsable frame") }
        return .send(WebSocketFrameEncoder.encode(opcode: frame.opcode, payload: frame.payload,
                                                  fin: frame.fin, rsv1: frame.rsv1))
    }
}
