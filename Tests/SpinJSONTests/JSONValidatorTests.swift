import Foundation
import SpinTesting
import Testing
@testable import SpinJSON

@Suite struct JSONValidatorTests {
    private func problem(_ text: String, maxDepth: Int = JSONValidator.defaultMaxDepth) -> JSONValidator.Problem? {
        JSONValidator.firstProblem(in: Array(text.utf8), maxDepth: maxDepth)
    }

    @Test(arguments: [
        #"{}"#, #"[]"#, #"1"#, #""x""#, #"null"#, #" { "a" : 1 , "b" : [ 1 , 2 , { } ] } "#,
        #"[{"a":1},{"a":2}]"#, #"{"a":{"a":{"a":1}}}"#, #"{"a":1,"A":2}"#, #"{"":1,"a":"","b":"\"}"}"#,
        #"{"a\"b":1,"a\\b":2,"ab":3}"#, #"{"x":[true,false,null,-1.5e+3,"s"]}"#, "{\"a\":1,\n\t\"b\":2}\r\n",
    ])
    func documentsWithoutRepeatedKeys_HaveNoProblem(text: String) {
        #expect(problem(text) == nil)
    }

    @Test(arguments: [
        (#"{"a":1,"a":2}"#, "a", "a"),
        (#"{"type":"set","left":1,"right":2,"left":3}"#, "left", "left"),
        (#"[{"a":1},{"b":2,"b":3}]"#, "b", "[1].b"),
        (#"{"id":"c1","event":{"type":"x","type":"y"}}"#, "type", "event.type"),
        (#"{"a":{"b":[0,{"c":1,"c":2}]}}"#, "c", "a.b[1].c"),
        (#"{"a":1,"\u0061":2}"#, "a", "a"),
        (#"{"\ud83d\ude00":1,"😀":2}"#, "😀", "😀"),
        (#"{"x\n":1,"x\u000a":2}"#, "x\n", "x\n"),
    ])
    func repeatedKey_IsFound_WithItsPath(text: String, key: String, path: String) {
        #expect(problem(text) == .duplicateKey(key: key, path: path))
    }

    /// A comment where a value, a member or the end was expected is said to be one, by the
    /// validator and the tree parser alike, at the same byte; a slash elsewhere is not.
    @Test(arguments: [
        ("// a note\n{}", 0), ("{ /* a */ \"a\": 1 }", 2), ("{\"a\": 1 // b\n}", 8), ("[1, /* two */ 2]", 4), ("{} // end", 3),
    ])
    func aComment_IsNamed_AtItsByte(text: String, offset: Int) {
        #expect(problem(text) == .malformed(offset: offset, .comment))
        #expect(throws: JSONValue.ParseError(offset: offset, reason: JSONValidator.Syntax.comment.rawValue)) {
            try JSONValue(parsing: Array(text.utf8))
        }
        #expect(problem("{\"a\": 1 / 2}") == .malformed(offset: 8, .afterMember))
        #expect(problem(#"{"url": "http://x"}"#) == nil)
    }

    @Test func problem_DescriptionNamesKeyAndPath() {
        let text = problem(#"[{"left":1,"left":2}]"#)?.description ?? ""
        #expect(text.contains("\"left\"") && text.contains("[0].left"))
    }

    @Test func nesting_UpToTheLimit_IsFine_BeyondIt_TooDeep() {
        #expect(problem(String(repeating: "[", count: 4) + String(repeating: "]", count: 4), maxDepth: 4) == nil)
        #expect(problem(String(repeating: "[", count: 5) + String(repeating: "]", count: 5), maxDepth: 4) == .tooDeep(limit: 4))
        #expect(problem(String(repeating: #"{"a":"#, count: 600) + "1" + String(repeating: "}", count: 600)) == .tooDeep(limit: 512))
    }

    @Test func hugeNesting_NeverOverflowsTheStack() {
        let deep = String(repeating: "[", count: 1_000_000)
        #expect(problem(deep, maxDepth: .max) == .malformed(offset: 1_000_000, .end))
        #expect(problem(deep) == .tooDeep(limit: 512))
    }

    @Test(arguments: [#"{"a":1"#, #"{"a" 1}"#, #"{"a":1,}"#, #"[1,]"#, #"{a:1}"#, #"[1 2]x"#, #"{"a":"\x"}"#, "\"a\u{01}\"", #"]"#, ""])
    func notJSON_IsMalformed_NotATrap(text: String) {
        guard case .malformed = problem(text) else {
            Issue.record("\(text): \(String(describing: problem(text)))")
            return
        }
    }

    @Test(arguments: [
        (#"{"a":1 "b":2}"#, 7, JSONValidator.Syntax.afterMember), ("[1 2]", 3, .afterElement), (#"{"a" 1}"#, 5, .colon),
        ("{a:1}", 1, .memberName), (#"{"a":1"#, 6, .end), (#"{"a":x}"#, 5, .value), ("[tru]", 2, .literal), ("1.", 2, .digit),
        ("{} x", 3, .textAfterValue), (#""\x""#, 2, .escape), (#""\u12g4""#, 5, .hexDigits), ("\"a\u{01}\"", 2, .controlCharacter),
    ])
    func syntaxErrors_SayWhatIsWrong_WhereItIs(text: String, offset: Int, syntax: JSONValidator.Syntax) {
        #expect(problem(text) == .malformed(offset: offset, syntax))
    }

    @Test func located_GivesLineAndColumn_ForASyntaxError_TheDescriptionOtherwise() throws {
        let bytes = Array("{\n  \"a\": 1\n  \"b\": 2}".utf8)
        let syntax = try #require(JSONValidator.firstProblem(in: bytes))
        #expect(syntax.located(in: bytes) == "line 3, column 3: expected ',' or '}' after an object member")
        #expect(syntax.description == "not JSON (RFC 8259) at byte 13: expected ',' or '}' after an object member")
        let twice = Array(#"{"a":1,"a":2}"#.utf8)
        let duplicate = try #require(JSONValidator.firstProblem(in: twice))
        #expect(duplicate.located(in: twice) == duplicate.description)
    }

    @Test(arguments: [
        "01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "tru", "nul", "falsey", "True", "NaN", "Infinity", "-Infinity",
        "[1,-]", #"{"a":01}"#, "[1.e3]", "1 2",
    ])
    func badScalars_AreMalformed(text: String) {
        guard case .malformed = problem(text) else {
            Issue.record("\(text): \(String(describing: problem(text)))")
            return
        }
    }

    @Test(arguments: ["0", "-0", "10", "-1.25", "1e5", "1E-5", "0.5e+10", "123456789012345678901234567890", "true",
                      "false", "null", #""é😀\u00e9""#])
    func validScalars_AreFine(text: String) {
        #expect(problem(text) == nil)
    }

    @Test func invalidUTF8_InAString_IsMalformed_AtItsLeadByte() {
        for (bytes, offset) in [
            ([0x22, 0xC3, 0x22], 1),                // a lead byte without its continuation
            ([0x22, 0xC0, 0xAF, 0x22], 1),          // an overlong "/"
            ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),    // a UTF-16 surrogate
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // above U+10FFFF
            ([0x22, 0x61, 0xFF, 0x22], 2),
        ] as [([UInt8], Int)] {
            #expect(JSONValidator.firstProblem(in: bytes) == .malformed(offset: offset, .utf8), "\(bytes)")
        }
        #expect(JSONValidator.firstProblem(in: [0x22, 0xE2, 0x82, 0xAC, 0x22]) == nil)   // "€"
    }

    @Test func loneSurrogateEscapes_AreMalformed_AtTheirBackslash_InValuesAndKeys() {
        // Found by Fuzz/json: the validator read a lone surrogate as U+FFFD, Foundation's
        // parser (the decoder behind it) refuses it, so the body got a 422 naming no field.
        for (text, offset) in [
            (#"{"a":"\ud83dx"}"#, 6),               // a high surrogate, then no escape
            (#"{"a":"\ud83d\u0041"}"#, 6),          // a high surrogate, then no low one
            (#"{"a":"\ude00"}"#, 6),                 // a low surrogate first
            (#"{"\ud83dCollect\ude00t":2}"#, 2),    // in a key (the fuzzer's input)
            (#"["x\ud83d"]"#, 3),                     // at the end of a string
        ] {
            #expect(problem(text) == .malformed(offset: offset, .loneSurrogate), "\(text)")
        }
        #expect(problem(#"{"a":"\ud83d\ude00\uD83D\uDE00"}"#) == nil)   // pairs, either case
    }

    @Test func validate_TellsTheTopKind_AndTheTopObjectsMembers() throws {
        let text = Array(#" {"type":"event", "id" : 7, "event":{"a":[1,{"b":2}]}, "e":[] } "#.utf8)
        let document = try JSONValidator.validate(text).get()
        #expect(document.kind == .object)
        let members = document.members.map { ($0.key, String(decoding: text[$0.value], as: UTF8.self)) }
        #expect(members.map(\.0) == ["type", "id", "event", "e"])
        #expect(members.map(\.1) == [#""event""#, "7", #"{"a":[1,{"b":2}]}"#, "[]"])
        #expect(try JSONValidator.validate(Array("[1]".utf8)).get().kind == .array)
        #expect(try JSONValidator.validate(Array(" 2 ".utf8)).get() == JSONValidator.Document(kind: .scalar, members: []))
    }

    @Test func validate_TellsTheTopArraysElements_AndTheMembersOfTheObjectsInIt() throws {
        let text = Array(#"[ {"type":"a","n":{"type":"x"}} , 3, [{"b":1}], {}, {"type" : "c"} ]"#.utf8)
        let document = try JSONValidator.validate(text).get()
        #expect(document.kind == .array)
        func string(_ range: Range<Int>) -> String { String(decoding: text[range], as: UTF8.self) }
        #expect(document.elements.map(\.kind) == [.object, .scalar, .array, .object, .object])
        #expect(document.elements.map { string($0.value) } == [#"{"type":"a","n":{"type":"x"}}"#, "3", #"[{"b":1}]"#, "{}", #"{"type" : "c"}"#])
        let members = document.elements.map { document.members[$0.members].map { "\($0.key)=\(string($0.value))" } }
        #expect(members == [["type=\"a\"", #"n={"type":"x"}"#], [], [], [], ["type=\"c\""]])
        #expect(try JSONValidator.validate(Array("[]".utf8)).get().elements.isEmpty)
    }

    /// Keys are compared within their own object, one by one and past a few by a set.
    @Test func repeatedKeys_AreFoundInTheirOwnObject_HoweverManyKeysItHas() {
        let many = (0..<40).map { "\"k\($0)\":{\"k\($0)\":1,\"a\":{\"a\":2}}" }.joined(separator: ",")
        #expect(JSONValidator.firstProblem(in: Array("{\(many)}".utf8)) == nil)
        #expect(JSONValidator.firstProblem(in: Array("{\(many),\"k39\":0}".utf8)) == .duplicateKey(key: "k39", path: "k39"))
        #expect(JSONValidator.firstProblem(in: Array("{\(many),\"z\":{\"k1\":0,\"k1\":1}}".utf8)) == .duplicateKey(key: "k1", path: "z.k1"))
        #expect(JSONValidator.firstProblem(in: Array(#"[{"a":1,"b":{"a":1}},{"a":1,"\u0061":2}]"#.utf8)) == .duplicateKey(key: "a", path: "[1].a"))
    }

    @Test func trailingComma_IsMalformed_ThoughFoundationAcceptsIt() throws {
        // Found by Fuzz/json: JSONSerialization on Linux takes `[1,]`; RFC 8259 does not.
        #expect(problem("[[1],]") == .malformed(offset: 5, .value))
        #expect(problem(#"{"a":1,}"#) == .malformed(offset: 7, .memberName))
        #expect(problem(#"[{"a":1}, ]"#) == .malformed(offset: 10, .value))
    }

    @Test func utf16_OrAByteOrderMark_IsMalformed_RFC8259Is8Bit() {
        // Found by Fuzz/json: JSONSerialization detects UTF-16 (`\0[\0]`) and skips a BOM.
        for bytes in [[0x00, 0x5B, 0x00, 0x5D], [0xEF, 0xBB, 0xBF] + Array("{}".utf8)] as [[UInt8]] {
            guard case .malformed = JSONValidator.firstProblem(in: bytes) else {
                Issue.record("\(bytes) was not called malformed")
                continue
            }
        }
    }

    @Test func randomBytes_AndEveryTruncation_NeverTrap() {
        var random = SeededGenerator(seed: 2026)
        let alphabet = Array(#"{}[]":,\u0aZ 1e-.tn"#.utf8)
        for _ in 0..<5_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            _ = JSONValidator.firstProblem(in: bytes)
        }
        let document = Array(#"{"a":[1,{"b":"\ud83d\ude00","c":null}],"d":{"e":true}}"#.utf8)
        for end in 0..<document.count {
            #expect(JSONValidator.firstProblem(in: Array(document[..<end])) != nil)
        }
        #expect(JSONValidator.firstProblem(in: document) == nil)
    }

    @Test func agreesWithJSONSerialization_OnWhichObjectsLoseAKey() throws {
        // JSONSerialization keeps one of two equal keys: the member count tells.
        for text in [#"{"a":1,"b":2}"#, #"{"a":1,"a":2}"#, #"{"a":1,"\u0061":2}"#, #"{"é":1,"e\u0301":2}"#] {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let written = text.components(separatedBy: ":").count - 1
            #expect((object.count < written) == (problem(text) != nil), "\(text)")
        }
    }

    @Test func manyKeys_AreScannedInLinearTime() {
        let members = (0..<100_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let clock = ContinuousClock()
        let elapsed = clock.measure { #expect(problem("{\(members)}") == nil) }
        #expect(elapsed < .seconds(5))
    }
}
