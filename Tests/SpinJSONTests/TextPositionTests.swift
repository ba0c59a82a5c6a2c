import Testing
@testable import SpinJSON

@Suite struct TextPositionTests {
    private func position(_ offset: Int, _ text: String) -> TextPosition {
        TextPosition(offset: offset, in: Array(text.utf8))
    }

    @Test func firstByte_IsLine1Column1() {
        #expect(position(0, "{}") == TextPosition(line: 1, column: 1))
        #expect(position(0, "") == TextPosition(line: 1, column: 1))
    }

    @Test func lineFeeds_StartNewLines_AndColumnsCountFromThere() {
        let text = "{\n  \"a\": 1\n  \"b\": 2}"
        #expect(position(13, text) == TextPosition(line: 3, column: 3))
        #expect(position(10, text) == TextPosition(line: 2, column: 9))    // the line feed ends line 2
        #expect(position(11, text) == TextPosition(line: 3, column: 1))
        #expect(position(4, "{\r\n\"a\"") == TextPosition(line: 2, column: 2))   // CRLF is one line break
    }

    @Test func columns_CountCharacters_NotBytes() {
        // "é" is two bytes and "😀" four: a line of them before the error counts each once.
        let text = "{\"é\": \"😀\",\n \"ü😀\": x}"
        let offset = Array(text.utf8).firstIndex(of: UInt8(ascii: "x"))!
        #expect(position(offset, text) == TextPosition(line: 2, column: 8))
        #expect(position(Array("{\"é\": x}".utf8).firstIndex(of: UInt8(ascii: "x"))!, "{\"é\": x}").column == 7)
    }

    @Test func anOffsetInsideACharacter_GivesThatCharactersColumn_PastTheEnd_TheNextOne() {
        #expect(position(3, "{\"é\"") == TextPosition(line: 1, column: 3))   // the second byte of "é"
        #expect(position(99, "ab") == TextPosition(line: 1, column: 3))
        #expect(position(-1, "ab") == TextPosition(line: 1, column: 1))
    }

    @Test func description_IsLineAndColumn() {
        #expect(TextPosition(line: 12, column: 7).description == "line 12, column 7")
    }
}
