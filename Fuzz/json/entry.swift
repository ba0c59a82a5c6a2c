// libFuzzer target: JSONValidator, the validator of event bodies and
// stream messages. Built with all SpinWire sources in one module (see Fuzz/run.sh), so
// no `import SpinWire`.
//
// Oracles: no input traps or overflows the stack (the validator has no recursion and a
// depth limit); a document Foundation's parser accepts is never `.malformed` to the
// validator (it only adds the repeated-key and depth rules), except where Foundation is
// more lenient than RFC 8259 (both found by this target): a trailing comma, and
// UTF-16/UTF-32 or a byte order mark (RFC 8259 §8.1: UTF-8, no BOM); and what the
// validator accepts Foundation parses (but for numbers beyond a Double).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let problem = JSONValidator.firstProblem(in: bytes, maxDepth: 64)
    let foundation = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    if case .malformed(let offset, _) = problem, !isTrailingComma(bytes, at: offset), !isNotUTF8(bytes), foundation != nil {
        fatalError("Foundation parses it, the validator calls it malformed at byte \(offset)")
    }
    // The validator replaced JSONSerialization on the request path: what it accepts must
    // be JSON to Foundation too (which keeps one of two repeated keys, and may refuse a
    // number too large for a Double).
    if problem == nil, foundation == nil, !hasHugeNumber(bytes) {
        fatalError("the validator accepts what Foundation cannot parse")
    }
    return 0
}

/// A run of more than 300 digits or an exponent above 300: valid JSON that Foundation may
/// refuse (it parses numbers into Double or Decimal); the decoder then answers 422.
private func hasHugeNumber(_ bytes: [UInt8]) -> Bool {
    let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    var run = 0
    for (index, byte) in bytes.enumerated() {
        run = isDigit(byte) ? run + 1 : 0
        if run > 300 { return true }
        // An exponent: a digit, then e or E.
        if (byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")), index > 0, isDigit(bytes[index - 1]) { return true }
    }
    return false
}

/// UTF-16 or UTF-32 (a NUL among the first four bytes), or a byte order mark.
private func isNotUTF8(_ bytes: [UInt8]) -> Bool {
    bytes.prefix(4).contains(0) || bytes.starts(with: [0xEF, 0xBB, 0xBF]) || bytes.starts(with: [0xFE, 0xFF])
        || bytes.starts(with: [0xFF, 0xFE])
}

/// `]` or `}` at `offset`, with a comma before it (whitespace aside).
private func isTrailingComma(_ bytes: [UInt8], at offset: Int) -> Bool {
    guard offset < bytes.count, bytes[offset] == UInt8(ascii: "]") || bytes[offset] == UInt8(ascii: "}") else { return false }
    var index = offset - 1
    while index >= 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index -= 1 }
    return index >= 0 && bytes[index] == UInt8(ascii: ",")
}
