// libFuzzer target: permessage-deflate inflation with a size limit.
// Built with all SpinWire sources in one module (see Fuzz/run.sh), so no `import SpinWire`.
// Seeds: Fuzz/inflate/corpus (first byte: configuration, second: split point / limit).
// Standalone build (the C shims need a module map naming CZlib.h and COpenSSL.h), e.g.:
//   swiftc -sanitize=fuzzer,address -parse-as-library -O -g -package-name spin \
//     -I <dir with module.modulemap> Fuzz/inflate/entry.swift Sources/SpinWire/WebSocket/*.swift \
//     Sources/SpinWire/Deflate/*.swift -lz -lssl -lcrypto -o fuzz-inflate
// `-package-name` is required: the codecs are `package` API.
//
// Oracles: inflation never produces more than limit + 1 bytes, whatever the input; a
// message compressed by our compressor always inflates back to itself.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInflate(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let config = bytes[0]
    let windowBits = 8 + Int(config & 7)
    let noContextTakeover = config & 8 != 0
    let limit = Int(bytes[1]) * 64
    let input = Array(bytes[2...])

    // Arbitrary input as up to three frames of one compressed message, then a second message.
    guard let decompressor = PerMessageDeflateDecompressor(windowBits: windowBits,
                                                          noContextTakeover: noContextTakeover) else {
        fatalError("inflateInit2 failed")
    }
    let third = input.count / 3
    let frames = [Array(input[..<third]), Array(input[third..<(2 * third)]), Array(input[(2 * third)...])]
    for round in 0..<2 {
        var output: [UInt8] = []
        do {
            for (index, frame) in frames.enumerated() {
                try decompressor.decompress(frame, isFinal: index == frames.count - 1,
                                            into: &output, maxMessageSize: limit)
            }
            precondition(output.count <= limit, "accepted output over the limit (round \(round))")
        } catch {
            precondition(output.count <= limit + 1, "inflated past the limit: \(output.count) > \(limit) + 1")
            break
        }
    }

    // Round trip through our own compressor.
    guard let compressor = PerMessageDeflateCompressor(windowBits: windowBits, noContextTakeover: noContextTakeover),
          let inflater = PerMessageDeflateDecompressor(windowBits: windowBits, noContextTakeover: noContextTakeover) else {
        fatalError("zlib init failed")
    }
    for message in [input, Array(input.reversed()), input] {
        do {
            let compressed = try compressor.compress(message)
            let restored = try inflater.decompress(compressed, maxMessageSize: message.count)
            precondition(restored == message, "round trip changed the message")
        } catch {
            preconditionFailure("round trip failed: \(error)")
        }
    }
    return 0
}
