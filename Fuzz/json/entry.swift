// libFuzzer target: JSONDuplicateKeys, the repeated-key scanner of event bodies and
// stream messages. Built with all SpinWire sources in one module (see Fuzz/run.sh), so
// no `import SpinWire`.
//
// Oracles: no input traps or overflows the stack (the scanner has no recursion and a
// depth limit); a document Foundation's parser accepts is never `.malformed` to the
// scanner (it only adds the repeated-key and depth rules), except where Foundation is
// more lenient than RFC 8259 (both found by this target): a trailing comma, and
// UTF-16/UTF-32 or a byte order mark (RFC 8259 §8.1: UTF-8, no BOM).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let problem = JSONDuplicateKeys.firstProblem(in: bytes, maxDepth: 64)
    if case .malformed(let offset) = problem, !isTrailingComma(bytes, at: offset), !isNotUTF8(bytes),
       (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil {
        fatalError("Foundation parses it, the scanner calls it malformed at byte \(offset)")
    }
    return 0
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
