/// A name pattern of a permission: `*` matches any run of characters (none included),
/// every other character only itself. `tenant-42-*` matches `tenant-42-` and
/// `tenant-42-door`; `*` matches every name. There is no escape: Spin and Gear names
/// never contain `*` (the config refuses them).
package struct Glob: Sendable, Equatable, CustomStringConvertible {
    package let pattern: String
    /// The pattern's pieces between stars, as bytes.
    private let pieces: [[UInt8]]

    package init(_ pattern: String) {
        self.pattern = pattern
        let bytes = Array(pattern.utf8)
        pieces = bytes.split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: false).map(Array.init)
    }

    package var description: String { pattern }

    /// Whether `name` matches. Linear in the name's length times the pattern's: the
    /// first piece is anchored at the start, the last at the end, and each piece between
    /// is taken at its leftmost place, which is never worse for the pieces after it.
    package func matches(_ name: some StringProtocol) -> Bool {
        let text = Array(name.utf8)
        guard pieces.count > 1 else { return text == pieces[0] }
        let first = pieces[0], last = pieces[pieces.count - 1]
        guard text.count >= first.count + last.count,
              text.starts(with: first), text[(text.count - last.count)...].elementsEqual(last) else { return false }
        var position = first.count
        let end = text.count - last.count
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let found = Self.find(piece, in: text, from: position, before: end) else { return false }
            position = found + piece.count
        }
        return true
    }

    /// The first index at or after `start` where `piece` lies wholly before `end`.
    private static func find(_ piece: [UInt8], in text: [UInt8], from start: Int, before end: Int) -> Int? {
        guard end - start >= piece.count else { return nil }
        for index in start...(end - piece.count) where text[index..<(index + piece.count)].elementsEqual(piece) {
            return index
        }
        return nil
    }
}
