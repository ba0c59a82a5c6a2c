// spin-websocket-benchmark: `swift run -c release spin-websocket-benchmark`
//
// Measures the WebSocket receive path and permessage-deflate beside a ceiling/peer run in
// the same process on the same bytes, and prints a table with ratios:
// - frames/s of WebSocketFrameParser and WebSocketSession on masked frames (32 B and
//   64 KiB payloads) beside a bare unmasking loop over the same bytes (the ceiling: the
//   least work any parser must do);
// - MB/s of PerMessageDeflateCompressor/Decompressor beside raw zlib deflate/inflate calls
//   with the same settings (raw DEFLATE, window 15, level 6, sync flush).
import CZlib
import Dispatch
import SpinWire

/// Best-of-`rounds` throughput of `ours` and `reference`, measured in alternating rounds so
/// that load from other processes (or frequency changes) hits both alike. Each round runs
/// a closure repeatedly for at least `minimumSeconds`; `unitsPerCall` units per call.
func measurePair(unitsPerCall: Double, rounds: Int = 7, minimumSeconds: Double = 0.2,
                 ours: () -> Void, reference: () -> Void) -> (ours: Double, reference: Double) {
    func once(_ work: () -> Void) -> Double {
        var calls = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        repeat {
            work()
            calls += 1
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < minimumSeconds
        return Double(calls) * unitsPerCall / elapsed
    }
    var best = (ours: 0.0, reference: 0.0)
    for _ in 0..<rounds {
        best.reference = max(best.reference, once(reference))
        best.ours = max(best.ours, once(ours))
    }
    return best
}

/// Keeps results alive so the optimiser cannot drop the work.
nonisolated(unsafe) var sink = 0

struct Row {
    var name: String
    var ours: Double
    var reference: Double
    var unit: String
    var referenceName: String
}

var rows: [Row] = []

// MARK: Frames

func maskedFrames(payloadSize: Int, count: Int) -> (bytes: [UInt8], payloadOffsets: [Int]) {
    var bytes: [UInt8] = []
    var offsets: [Int] = []
    let payload = (0..<payloadSize).map { UInt8(truncatingIfNeeded: $0 &* 13) }
    for i in 0..<count {
        let frame = WebSocketFrameEncoder.encode(opcode: .binary, payload: payload,
                                                 maskingKey: 0x9E37_79B9 &+ UInt32(i))
        offsets.append(bytes.count + frame.count - payloadSize)
        bytes += frame
    }
    return (bytes, offsets)
}

/// The ceiling: unmask every payload in place of a copy, nothing else (no header parsing,
/// no allocation per frame), 8 bytes at a time.
func bareUnmask(_ bytes: [UInt8], offsets: [Int], payloadSize: Int, into out: inout [UInt8]) {
    bytes.withUnsafeBytes { source in
        out.withUnsafeMutableBytes { destination in
            var written = 0
            for offset in offsets {
                let key = source.loadUnaligned(fromByteOffset: offset - 4, as: UInt32.self)
                let key64 = UInt64(key) | UInt64(key) << 32
                var i = 0
                while i + 8 <= payloadSize {
                    let word = source.loadUnaligned(fromByteOffset: offset + i, as: UInt64.self)
                    destination.storeBytes(of: word ^ key64, toByteOffset: written + i, as: UInt64.self)
                    i += 8
                }
                withUnsafeBytes(of: key) { k in
                    while i < payloadSize {
                        destination[written + i] = source[offset + i] ^ k[i & 3]
                        i += 1
                    }
                }
                written += payloadSize
            }
        }
    }
}

for (label, payloadSize, count) in [("32 B", 32, 20_000), ("64 KiB", 65_536, 64)] {
    let (bytes, offsets) = maskedFrames(payloadSize: payloadSize, count: count)
    var out = [UInt8](repeating: 0, count: payloadSize * count)
    let ceiling = {
        bareUnmask(bytes, offsets: offsets, payloadSize: payloadSize, into: &out)
        sink &+= Int(out[out.count - 1])
    }
    let limits = WebSocketLimits(maxFrameSize: 1 << 20, maxMessageSize: 1 << 20)
    let parser = measurePair(unitsPerCall: Double(count), ours: {
        var parser = WebSocketFrameParser(role: .server, limits: limits)
        parser.append(bytes)
        var n = 0
        while let frame = try? parser.nextFrame() { n &+= frame.payload.count }
        sink &+= n
    }, reference: ceiling)
    let session = measurePair(unitsPerCall: Double(count), ours: {
        var session = WebSocketSession(role: .server, limits: limits)
        sink &+= session.receive(bytes).count
    }, reference: ceiling)
    rows.append(Row(name: "parse masked \(label) frames", ours: parser.ours, reference: parser.reference,
                    unit: "frames/s", referenceName: "bare unmask loop"))
    rows.append(Row(name: "session masked \(label) messages", ours: session.ours, reference: session.reference,
                    unit: "frames/s", referenceName: "bare unmask loop"))
}

// MARK: Deflate

/// A state-stream-like JSON text: compressible but not trivially.
func makeMessage(size: Int) -> [UInt8] {
    var text = ""
    var i = 0
    while text.utf8.count < size {
        text += "{\"type\":\"state\",\"sequence\":\(i * 7919 % 100_003),\"state\":{\"left\":\(i % 97),\"right\":\(i % 89)}}\n"
        i += 1
    }
    return Array(text.utf8.prefix(size))
}

/// Raw zlib with the settings the compressor uses; one reused output buffer.
final class RawDeflate {
    var stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    var output = [UInt8](repeating: 0, count: 1 << 20)
    init() {
        stream.initialize(to: z_stream())
        _ = CZlib_deflateInit2(stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY)
    }
    deinit { deflateEnd(stream); stream.deallocate() }
    func compress(_ input: [UInt8]) -> Int {
        input.withUnsafeBytes { inBuffer in
            output.withUnsafeMutableBytes { outBuffer in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self))
                stream.pointee.avail_in = uInt(inBuffer.count)
                stream.pointee.next_out = outBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(outBuffer.count)
                _ = deflate(stream, Z_SYNC_FLUSH)
                return outBuffer.count - Int(stream.pointee.avail_out)
            }
        }
    }
}

final class RawInflate {
    var stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    var output = [UInt8](repeating: 0, count: 1 << 20)
    init() {
        stream.initialize(to: z_stream())
        _ = CZlib_inflateInit2(stream, -15)
    }
    deinit { inflateEnd(stream); stream.deallocate() }
    func inflate(_ input: [UInt8]) -> Int {
        input.withUnsafeBytes { inBuffer in
            output.withUnsafeMutableBytes { outBuffer in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self))
                stream.pointee.avail_in = uInt(inBuffer.count)
                stream.pointee.next_out = outBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(outBuffer.count)
                _ = CZlib.inflate(stream, Z_SYNC_FLUSH)
                return outBuffer.count - Int(stream.pointee.avail_out)
            }
        }
    }
}

for size in [1024, 16 * 1024, 256 * 1024] {
    let message = makeMessage(size: size)
    let megabytes = Double(size) / 1e6
    let label = size >= 1024 * 1024 ? "\(size / (1024 * 1024)) MiB" : "\(size / 1024) KiB"

    // Compression, both without context takeover (each message alone: comparable work per call).
    let compressor = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true)!
    let raw = RawDeflate()
    let deflated = measurePair(unitsPerCall: megabytes, ours: {
        sink &+= (try? compressor.compress(message))?.count ?? 0
    }, reference: {
        sink &+= raw.compress(message)
        deflateReset(raw.stream)
    })
    rows.append(Row(name: "deflate \(label) JSON", ours: deflated.ours, reference: deflated.reference, unit: "MB/s",
                    referenceName: "raw zlib deflate"))

    // Decompression of the same compressed message (with 00 00 ff ff for raw zlib).
    let compressed = try! PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true)!.compress(message)
    let decompressor = PerMessageDeflateDecompressor(windowBits: 15, noContextTakeover: true)!
    let rawInflate = RawInflate()
    let withTail = compressed + [0x00, 0x00, 0xFF, 0xFF]
    let inflated = measurePair(unitsPerCall: megabytes, ours: {
        sink &+= (try? decompressor.decompress(compressed, maxMessageSize: 1 << 20))?.count ?? 0
    }, reference: {
        sink &+= rawInflate.inflate(withTail)
        inflateReset(rawInflate.stream)
    })
    rows.append(Row(name: "inflate \(label) JSON (ratio \(String(format1(Double(size) / Double(compressed.count))))x)",
                    ours: inflated.ours, reference: inflated.reference, unit: "MB/s", referenceName: "raw zlib inflate"))
}

func format1(_ value: Double) -> String {
    let tenths = Int(value * 10 + 0.5)
    return "\(tenths / 10).\(tenths % 10)"
}

func formatRate(_ value: Double, unit: String) -> String {
    if unit == "MB/s" { return format1(value) + " MB/s" }
    if value >= 1e6 { return format1(value / 1e6) + " M" + unit }
    if value >= 1e3 { return format1(value / 1e3) + " k" + unit }
    return format1(value) + " " + unit
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

print(pad("benchmark", 44) + pad("ours", 18) + pad("reference", 18) + pad("ours/ref", 10) + "reference is")
print(String(repeating: "-", count: 110))
for row in rows {
    print(pad(row.name, 44) + pad(formatRate(row.ours, unit: row.unit), 18)
          + pad(formatRate(row.reference, unit: row.unit), 18)
          + pad(format1(row.ours / row.reference * 100) + "%", 10) + row.referenceName)
}
if sink == 42 { print("") }
