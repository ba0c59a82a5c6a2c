import Foundation
import Testing
@testable import SpinWire

@Suite struct JSONDuplicateKeysTests {
    private func problem(_ text: String, maxDepth: Int = JSONDuplicateKeys.defaultMaxDepth) -> JSONDuplicateKeys.Problem? {
        JSONDuplicateKeys.firstProblem(in: Array(text.utf8), maxDepth: maxDepth)
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
        #expect(problem(deep, maxDepth: .max) == .malformed(offset: 1_000_000))
        #expect(problem(deep) == .tooDeep(limit: 512))
    }

    @Test(arguments: [#"{"a":1"#, #"{"a" 1}"#, #"{"a":1,}"#, #"[1,]"#, #"{a:1}"#, #"[1 2]x"#, #"{"a":"\x"}"#, "\"a\u{01}\"", #"]"#, ""])
    func notJSON_IsMalformed_NotATrap(text: String) {
        guard case .malformed = problem(text) else {
            Issue.record("\(text): \(String(describing: problem(text)))")
            return
        }
    }

    @Test func trailingComma_IsMalformed_ThoughFoundationAcceptsIt() throws {
        // Found by Fuzz/json: JSONSerialization on Linux takes `[1,]`; RFC 8259 does not.
        #expect(problem("[[1],]") == .malformed(offset: 5))
        #expect(problem(#"{"a":1,}"#) == .malformed(offset: 7))
        #expect(problem(#"[{"a":1}, ]"#) == .malformed(offset: 10))
    }

    @Test func utf16_OrAByteOrderMark_IsMalformed_RFC8259Is8Bit() {
        // Found by Fuzz/json: JSONSerialization detects UTF-16 (`\0[\0]`) and skips a BOM.
        for bytes in [[0x00, 0x5B, 0x00, 0x5D], [0xEF, 0xBB, 0xBF] + Array("{}".utf8)] as [[UInt8]] {
            guard case .malformed = JSONDuplicateKeys.firstProblem(in: bytes) else {
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
            _ = JSONDuplicateKeys.firstProblem(in: bytes)
        }
        let document = Array(#"{"a":[1,{"b":"\ud83d\ude00","c":null}],"d":{"e":true}}"#.utf8)
        for end in 0..<document.count {
            #expect(JSONDuplicateKeys.firstProblem(in: Array(document[..<end])) != nil)
        }
        #expect(JSONDuplicateKeys.firstProblem(in: document) == nil)
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
