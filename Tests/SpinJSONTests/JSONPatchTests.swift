import Foundation
import SpinTesting
import Testing
@testable import SpinJSON

@Suite struct JSONPatchTests {
    static func json(_ text: String) throws -> JSONValue { try JSONValue(parsing: Array(text.utf8)) }

    static func patchText(_ old: String, _ new: String) throws -> String {
        JSONPatch.diff(from: try json(old), to: try json(new)).json.text
    }

    // MARK: Diff

    @Test func equalDocuments_GiveAnEmptyPatch() throws {
        #expect(try Self.patchText(#"{"a":[1,{"b":null}],"c":"x"}"#, #"{"a":[1,{"b":null}],"c":"x"}"#) == "[]")
    }

    @Test func aChangedMember_IsOneReplaceAtItsPath() throws {
        #expect(try Self.patchText(#"{"a":{"b":1,"c":2}}"#, #"{"a":{"b":1,"c":3}}"#)
            == #"[{"op":"replace","path":"/a/c","value":3}]"#)
    }

    @Test func membersThatCameAndWent_AreAddAndRemove() throws {
        #expect(try Self.patchText(#"{"a":1,"b":2}"#, #"{"a":1,"c":3}"#)
            == #"[{"op":"remove","path":"/b"},{"op":"add","path":"/c","value":3}]"#)
    }

    @Test func aChangedElement_IsOneReplaceAtItsIndex() throws {
        let old = "[" + (0..<1000).map { #"{"id":\#($0),"name":"n\#($0)"}"# }.joined(separator: ",") + "]"
        let new = old.replacingOccurrences(of: #""name":"n500""#, with: #""name":"renamed""#)
        #expect(try Self.patchText(old, new) == #"[{"op":"replace","path":"/500/name","value":"renamed"}]"#)
    }

    @Test func oneElementInsertedOrRemovedInTheMiddle_IsOneOperation() throws {
        #expect(try Self.patchText("[1,2,3,4,5]", "[1,2,9,3,4,5]") == #"[{"op":"add","path":"/2","value":9}]"#)
        #expect(try Self.patchText("[1,2,3,4,5]", "[1,2,4,5]") == #"[{"op":"remove","path":"/2"}]"#)
        #expect(try Self.patchText("[1,2,3]", "[0,1,2,3]") == #"[{"op":"add","path":"/0","value":0}]"#)
        #expect(try Self.patchText("[1,2,3]", "[1,2,3,4]") == #"[{"op":"add","path":"/3","value":4}]"#)
    }

    @Test func severalElementsRemoved_AreRemovedFromTheLast() throws {
        #expect(try Self.patchText("[1,2,3,4,5]", "[1,5]")
            == #"[{"op":"remove","path":"/3"},{"op":"remove","path":"/2"},{"op":"remove","path":"/1"}]"#)
    }

    @Test func numbers_CompareAsTheirText() throws {
        #expect(try Self.patchText(#"{"a":1}"#, #"{"a":1.0}"#) == #"[{"op":"replace","path":"/a","value":1.0}]"#)
    }

    @Test func aDifferentKindOfValue_OrTheRoot_IsReplacedWhole() throws {
        #expect(try Self.patchText(#"{"a":[1]}"#, #"{"a":{"0":1}}"#) == #"[{"op":"replace","path":"/a","value":{"0":1}}]"#)
        #expect(try Self.patchText("[1]", #"{"a":1}"#) == #"[{"op":"replace","path":"","value":{"a":1}}]"#)
    }

    @Test func keysWithSlashOrTilde_AreEscapedInPaths() throws {
        #expect(try Self.patchText(#"{"a/b":{"~c":1}}"#, #"{"a/b":{"~c":2}}"#)
            == #"[{"op":"replace","path":"/a~1b/~0c","value":2}]"#)
    }

    @Test func rawValues_AreTakenApartWhereTheyDiffer() throws {
        let patch = JSONPatch.diff(from: .raw(Array(#"{"a":[1,2], "b" : {"c":[true]}}"#.utf8)),
                                   to: .raw(Array(#"{"a":[1,3],"b":{"c":[true]}}"#.utf8)))
        #expect(patch == JSONPatch([.replace(JSONPointer(tokens: ["a", "1"]), .number("3"))]))
        // An escaped key is unescaped for its path.
        #expect(JSONPatch.diff(from: .raw(Array(#"{"a/":1}"#.utf8)), to: .raw(Array(#"{"a/":2}"#.utf8))).json.text
            == #"[{"op":"replace","path":"/a~1","value":2}]"#)
    }

    @Test func textThatIsNotJSON_IsReplacedWhole() {
        for bad in ["{\"a\":", "[1,,2]", "{\"a\" 1}", "\"open"] {
            let patch = JSONPatch.diff(from: .raw(Array(bad.utf8)), to: .raw(Array("[1]".utf8)))
            #expect(patch == JSONPatch([.replace(.root, .raw(Array("[1]".utf8)))]), "\(bad)")
        }
    }

    // MARK: Apply

    @Test func apply_TakesEveryOperationOfRFC6902() throws {
        let patch = try JSONPatch(json: Self.json("""
            [{"op":"add","path":"/list/-","value":4},{"op":"remove","path":"/gone"},
             {"op":"replace","path":"/list/0","value":"one"},{"op":"move","from":"/list/1","path":"/moved"},
             {"op":"copy","from":"/moved","path":"/copied"},{"op":"test","path":"/copied","value":2.0}]
            """))
        let result = try patch.apply(to: Self.json(#"{"list":[1,2,3],"gone":true}"#))
        #expect(result.text == #"{"list":["one",3,4],"moved":2,"copied":2}"#)
    }

    @Test func anOperationThatDoesNotApply_IsRefusedWithItsIndex_AndChangesNothing() throws {
        let document = try Self.json(#"{"a":[1]}"#)
        let cases: [(String, String)] = [
            (#"[{"op":"replace","path":"/b","value":1}]"#, "no member at /b"),
            (#"[{"op":"add","path":"/a/1","value":1},{"op":"remove","path":"/a/5"}]"#, "no element at /a/5"),
            (#"[{"op":"add","path":"/a/01","value":1}]"#, "no index 01"),
            (#"[{"op":"test","path":"/a/0","value":2}]"#, "test failed"),
            (#"[{"op":"move","from":"/a","path":"/a/0"}]"#, "its own child"),
            (#"[{"op":"add","path":"/a/0/x","value":1}]"#, "neither an object nor an array"),
        ]
        for (text, reason) in cases {
            let patch = try JSONPatch(json: Self.json(text))
            #expect { _ = try patch.apply(to: document) } throws: { error in
                "\(error)".contains(reason)
            }
        }
    }

    @Test func malformedPatches_AreRefused() throws {
        for text in [#"{"op":"add"}"#, #"[{"op":"jump","path":""}]"#, #"[{"op":"add","path":"a","value":1}]"#,
                     #"[{"op":"add","path":"/a"}]"#, #"[{"op":"remove","path":"/a~2"}]"#, "[1]"] {
            #expect(throws: JSONPatch.Failure.self) { try JSONPatch(json: Self.json(text)) }
        }
    }

    @Test func pointers_UnescapeTildeOneBeforeTildeZero() {
        #expect(JSONPointer("/~01")?.tokens == ["~1"])
        #expect(JSONPointer("/a~1b/")?.tokens == ["a/b", ""])
        #expect(JSONPointer("")?.tokens == [])
        #expect(JSONPointer("a") == nil)
        #expect(JSONPointer(tokens: ["~1", "a/b"]).description == "/~01/a~1b")
    }

    // MARK: Property: apply(diff(a, b), a) == b

    @Test func applyingTheDiff_GivesTheNewDocument_ForRandomPairs() throws {
        var random = SeededGenerator(seed: 0x5EED)
        for round in 0..<2000 {
            let a = Self.randomValue(&random, depth: 0)
            // Mostly b is an edit of a (the case a state stream sees); sometimes unrelated.
            let b = round % 5 == 0 ? Self.randomValue(&random, depth: 0) : Self.edit(a, &random, depth: 0)
            let patch = JSONPatch.diff(from: a, to: b)
            let applied = try patch.apply(to: a)
            #expect(JSONPatch.equivalent(applied, b), "round \(round): \(a.text) → \(b.text) by \(patch.json.text)")
            // The patch survives its own JSON text.
            #expect(try JSONPatch(json: JSONValue(parsing: patch.bytes)) == patch)
        }
    }

    @Test func parsing_ReadsBackWhatJSONValueWrites() throws {
        var random = SeededGenerator(seed: 42)
        for _ in 0..<500 {
            let value = Self.randomValue(&random, depth: 0)
            #expect(try JSONValue(parsing: value.bytes).text == value.text)
        }
        #expect(try JSONValue(parsing: Array(#" {"a" : [ 1e5 , -0.5 , "\u00e9\ud83d\ude00\n" ] } "#.utf8)).text
            == #"{"a":[1e5,-0.5,"é😀\n"]}"#)
        for bad in ["", "[1,]", "{\"a\":1,\"a\":2}", "01", "\"\\ud800\"", "[" + String(repeating: "[", count: 600) , "nul", "1 2"] {
            #expect(throws: JSONValue.ParseError.self, "\(bad)") { try JSONValue(parsing: Array(bad.utf8)) }
        }
    }

    // MARK: Random documents

    static let keys = ["a", "b", "c/d", "e~f", "", "0", "items", "é"]

    static func randomScalar(_ random: inout SeededGenerator) -> JSONValue {
        switch random.next() % 5 {
        case 0: .null
        case 1: .bool(random.next() % 2 == 0)
        case 2: .number(String(Int(random.next() % 200) - 100))
        case 3: .number(["1.5", "1.50", "-0", "1e3"][Int(random.next() % 4)])
        default: .string(["", "x", "y", "a\"b", "<tag>", "~/"][Int(random.next() % 6)])
        }
    }

    static func randomValue(_ random: inout SeededGenerator, depth: Int) -> JSONValue {
        let roll = depth >= 4 ? 0 : random.next() % 4
        switch roll {
        case 0, 1: return randomScalar(&random)
        case 2:
            return .array((0..<Int(random.next() % 6)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var members: [(key: String, value: JSONValue)] = []
            for key in keys where random.next() % 3 == 0 { members.append((key, randomValue(&random, depth: depth + 1))) }
            return .object(members)
        }
    }

    /// `value` with a few random changes: elements inserted, removed or changed, members
    /// added (last), removed or changed.
    static func edit(_ value: JSONValue, _ random: inout SeededGenerator, depth: Int) -> JSONValue {
        switch value {
        case .array(var items):
            for _ in 0..<Int(random.next() % 3) {
                switch random.next() % 3 {
                case 0: items.insert(randomValue(&random, depth: depth + 1), at: Int(random.next() % UInt64(items.count + 1)))
                case 1 where !items.isEmpty: items.remove(at: Int(random.next() % UInt64(items.count)))
                default:
                    if !items.isEmpty {
                        let index = Int(random.next() % UInt64(items.count))
                        items[index] = edit(items[index], &random, depth: depth + 1)
                    }
                }
            }
            return .array(items)
        case .object(var members):
            for _ in 0..<Int(random.next() % 3) {
                switch random.next() % 3 {
                case 0:
                    let key = keys[Int(random.next() % UInt64(keys.count))]
                    if !members.contains(where: { $0.key == key }) { members.append((key, randomValue(&random, depth: depth + 1))) }
                case 1 where !members.isEmpty: members.remove(at: Int(random.next() % UInt64(members.count)))
                default:
                    if !members.isEmpty {
                        let index = Int(random.next() % UInt64(members.count))
                        members[index].value = edit(members[index].value, &random, depth: depth + 1)
                    }
                }
            }
            return .object(members)
        default:
            return random.next() % 2 == 0 ? value : randomValue(&random, depth: depth)
        }
    }
}
