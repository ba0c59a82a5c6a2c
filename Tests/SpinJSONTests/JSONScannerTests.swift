import Testing
@testable import SpinJSON

/// `JSONScanner`: the strict tokens (what the validator and `JSONValue(parsing:)` refuse,
/// and where), the trusted ones (what the raw walk, the event reader and `compacted`
/// read), and the one string escaper.
@Suite struct JSONScannerTests {
    private func parseError(_ text: String) -> JSONValue.ParseError? {
        parseError(Array(text.utf8))
    }

    private func parseError(_ bytes: [UInt8]) -> JSONValue.ParseError? {
        do {
            _ = try JSONValue(parsing: bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test func strictString_UnescapesAndEndsPastTheQuote() throws {
        var scanner = JSONScanner(Array(#""a\n\u00e9\ud83d\ude00/\/" x"#.utf8))
        let quote = try scanner.next()
        let string = try scanner.string(decode: true)
        #expect(quote == UInt8(ascii: "\"") && string == "a\né😀//")
        #expect(scanner.peek() == UInt8(ascii: " "))
    }

    @Test func number_FollowsTheGrammar_AndStopsAtItsEnd() throws {
        var scanner = JSONScanner(Array("-12.5e+3,".utf8))
        try scanner.number()
        #expect(scanner.offset == 8)
        var leadingZero = JSONScanner(Array("01".utf8))
        try leadingZero.number()
        #expect(leadingZero.offset == 1, "a zero is a whole number: what follows is for the reader to refuse")
    }

    /// Where the old parser and the validator disagreed, `JSONValue(parsing:)` now says
    /// what the validator says, at the same byte.
    @Test(arguments: [
        #""\x""#, "[tru]", "-x", "1.", #"{"a" 1}"#, #"{"a":1 "b":2}"#, "[1 2]", "{a:1}", #""\u12g4""#, "\"a\u{01}\"",
        #""\ud800x""#, #""\udc00""#, "{} x", "", "[", #"{"a":"#,
    ])
    func parsing_RefusesWhereAndAsTheValidatorDoes(text: String) throws {
        let bytes = Array(text.utf8)
        guard case .malformed(let offset, let syntax)? = JSONValidator.firstProblem(in: bytes) else {
            Issue.record("\(text) is not malformed to the validator")
            return
        }
        #expect(parseError(bytes) == JSONValue.ParseError(offset: offset, reason: syntax.rawValue))
    }

    @Test func parsing_InvalidUTF8_IsFoundAtItsLeadByte() {
        #expect(parseError([0x22, 0x61, 0xFF, 0x22]) == JSONValue.ParseError(offset: 2, reason: "invalid UTF-8"))
        #expect(parseError([0x22, 0xED, 0xA0, 0x80, 0x22]) == JSONValue.ParseError(offset: 1, reason: "invalid UTF-8"))
    }

    @Test func parsing_RepeatedKeyAndDepth_SayWhereReadingStopped() {
        #expect(parseError(#"{"a":1,"a":2}"#) == JSONValue.ParseError(offset: 10, reason: #"the key "a" appears twice in one object"#))
        let deep = Array("[[[]]]".utf8)
        #expect(throws: JSONValue.ParseError(offset: 2, reason: "objects and arrays are nested more than 2 deep")) {
            try JSONValue(parsing: deep, maxDepth: 2)
        }
        #expect((try? JSONValue(parsing: Array("[[]]".utf8), maxDepth: 2)) == .array([.array([])]))
    }

    @Test func trustedString_ReadsWhatTheStrictOneReads() throws {
        let text = #""a\"b\\c\/\b\f\n\r\t\u0041\u00e9\ud83d\ude00""#
        var trusted = JSONScanner(Array(text.utf8))
        var strict = JSONScanner(Array(text.utf8))
        _ = try strict.next()
        let read = trusted.trustedString()
        #expect(read == (try strict.string(decode: true)))
        #expect(trusted.offset == strict.offset)
    }

    @Test func trustedValue_SkipsContainersAndStrings_AndRefusesWhatDoesNotEnd() {
        var scanner = JSONScanner(Array(#"{"a":["]",{"b":"}"}],"c":1} 2"#.utf8))
        let skipped = scanner.skipTrustedValue()
        #expect(skipped && scanner.offset == 27)
        for text in [#"{"a":1"#, #"["x]"#, ",", ""] {
            var unfinished = JSONScanner(Array(text.utf8))
            let skipped = unfinished.skipTrustedValue()
            #expect(!skipped && unfinished.offset == 0, "\(text)")
        }
    }

    @Test func compacted_DropsWhitespaceBetweenTokens_KeepsStringsAsWritten() {
        let text = " { \"a b\" : [ 1 , \"x \\\" y\" ] ,\n\t\"c\" : null }\r\n"
        #expect(String(decoding: JSONValue.compacted(Array(text.utf8)), as: UTF8.self) == #"{"a b":[1,"x \" y"],"c":null}"#)
    }

    @Test func writeString_HTMLSafe_AndMinimal() {
        let string = "q\"b\\n\nr\rt\t\u{08}\u{0C}\u{01}<>&é"
        var html: [UInt8] = []
        JSONValue.writeString(string, into: &html)
        #expect(String(decoding: html, as: UTF8.self) == #""q\"b\\n\nr\rt\t\b\f\u0001\u003c\u003e\u0026é""#)
        var minimal: [UInt8] = []
        JSONValue.writeString(string, into: &minimal, escaping: .minimal)
        #expect(String(decoding: minimal, as: UTF8.self) == #""q\"b\\n\nr\rt\t\u0008\u000c\u0001<>&é""#)
    }

    @Test func writeString_IsWhatOrderedJSONEncoderWrites() throws {
        let string = "a\u{0}\u{1F}\u{7F}<&>\"\\/é😀"
        var written: [UInt8] = []
        JSONValue.writeString(string, into: &written)
        #expect(written == Array((try OrderedJSONEncoder().encode([string])).dropFirst().dropLast()))
    }
}
