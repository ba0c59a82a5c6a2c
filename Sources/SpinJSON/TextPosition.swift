/// Where a byte offset of a UTF-8 text falls as an editor shows it: a line and a
/// column, both from 1.
///
/// Lines end at line feeds (so a `\r\n` file counts the same). The column counts
/// characters (Unicode scalars), not bytes: in `{"é": x}` the `x` is in column 7, not 8.
/// An offset inside a multi-byte character gives that character's column; one past the
/// end, the column after the last character.
///
/// ```swift
/// TextPosition(offset: 13, in: Array("{\n  \"a\": 1\n  \"b\": 2}".utf8)).description
/// // "line 3, column 3"
/// ```
package struct TextPosition: Sendable, Hashable, CustomStringConvertible {
    package let line: Int
    package let column: Int

    /// `line 12, column 7`.
    package var description: String {
        "line \(line), column \(column)"
    }
}

extension TextPosition {
    /// The position of the byte at `offset` in `bytes`.
    package init(offset: Int, in bytes: [UInt8]) {
        var end = min(max(offset, 0), bytes.count)
        while end > 0, end < bytes.count, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        var line = 1
        var column = 1
        for byte in bytes[..<end] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {   // not a UTF-8 continuation byte: a new character
                column += 1
            }
        }
        self.init(line: line, column: column)
    }
}
