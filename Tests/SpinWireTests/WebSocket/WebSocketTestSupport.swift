import Foundation
@testable import SpinWire

/// Raw-byte fixtures of Tests/SpinWireTests/Fixtures/WebSocket, found from `#filePath`.
enum WebSocketFixture {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/WebSocket")

    /// The bytes of a `.hex` fixture: hex pairs, `#` comments, whitespace ignored.
    static func bytes(_ name: String) -> [UInt8] {
        hex(text(name + ".hex"))
    }

    /// Each non-comment line of a `.hex` fixture as its own byte string (one frame a line).
    static func lines(_ name: String) -> [[UInt8]] {
        text(name + ".hex").split(separator: "\n")
            .filter { !$0.hasPrefix("#") }
            .map { hex(String($0)) }
    }

    static func text(_ file: String) -> String {
        let url = directory.appendingPathComponent(file)
        guard let data = try? Data(contentsOf: url) else { fatalError("missing fixture \(url.path)") }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Bytes from hex text ("81 05 48"), ignoring whitespace and `#` comment lines.
func wsHex(_ text: String) -> [UInt8] { hex(text) }

private func hex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        let digits = line.filter { !$0.isWhitespace }
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            out.append(UInt8(digits[index..<next], radix: 16)!)
            index = next
        }
    }
    return out
}

/// A masked client frame, the way a browser sends it.
func makeClientFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8] = [], fin: Bool = true,
                     rsv1: Bool = false, key: UInt32 = 0x37FA_213D) -> [UInt8] {
    WebSocketFrameEncoder.encode(opcode: opcode, payload: payload, fin: fin, rsv1: rsv1, maskingKey: key)
}

func makeClientFrame(_ opcode: WebSocketOpcode, _ text: String, fin: Bool = true) -> [UInt8] {
    makeClientFrame(opcode, Array(text.utf8), fin: fin)
}

/// Parses every frame in `bytes` with a fresh parser; the error, if any, ends the list.
func parseAll(_ bytes: [UInt8], role: WebSocketRole = .server,
              limits: WebSocketLimits = WebSocketLimits(),
              compressed: Bool = false) -> (frames: [WebSocketFrame], error: WebSocketError?) {
    var parser = WebSocketFrameParser(role: role, limits: limits, allowsCompressedFrames: compressed)
    parser.append(bytes)
    var frames: [WebSocketFrame] = []
    do {
        while let frame = try parser.nextFrame() { frames.append(frame) }
    } catch {
        return (frames, error)
    }
    return (frames, nil)
}

