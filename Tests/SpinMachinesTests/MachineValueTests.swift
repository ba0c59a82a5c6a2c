import Foundation
import SpinMachines
import Testing

@Suite struct MachineValueTests {
    @Test func pathLookup_WalksObjectsAndArrays() {
        let value: MachineValue = ["a": ["b": "c", "list": [10, ["x": true]]]]
        #expect(value[path: "a.b"] == "c")
        #expect(value[path: "a.list.0"] == 10)
        #expect(value[path: "a.list.1.x"] == true)
        #expect(value[path: ""] == value)
        #expect(value[path: "a.missing"] == nil)
        #expect(value[path: "a.list.2"] == nil)
        #expect(value[path: "a.b.c"] == nil)
    }

    @Test func json_RoundTripsEveryKind() throws {
        let text = #"{"a":null,"b":true,"c":1,"d":1.5,"e":"s","f":[1,"x"],"g":{"h":-2}}"#
        let value = try JSONDecoder().decode(MachineValue.self, from: Data(text.utf8))
        #expect(value == ["a": nil, "b": true, "c": 1, "d": 1.5, "e": "s", "f": [1, "x"], "g": ["h": -2]])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == text)
    }
}

/// A stored event read without a `Decoder` (`MachineEvent.stored`, what recovery and
/// history replay use) is the event `JSONDecoder` reads, and text that is no event is
/// left to `JSONDecoder` to refuse.
@Suite struct MachineStoredEventTests {
    @Test func aStoredEvent_IsTheEventTheDecoderReads() throws {
        let texts = [
            #"{"type":"OPEN"}"#,
            #"{"code":"1234","type":"UNLOCK"}"#,
            #"{"type":"SET","n":-3,"x":1.5,"big":1e300,"flag":true,"none":null,"list":[1,"a",{"b":[]}],"deep":{"a":{"b":{"c":0}}}}"#,
            #"{"type":"ünïcode \u00e9 \"quoted\"","s":"\n\t"}"#,
        ]
        for text in texts {
            let decoded = try JSONDecoder().decode(MachineEvent.self, from: Data(text.utf8))
            #expect(MachineEvent.stored(Array(text.utf8)[...]) == decoded, "\(text)")
        }
        for text in [#"{"kind":"OPEN"}"#, #"{"type":1}"#, "[]", #""OPEN""#, #"{"type":"A","n":1e400}"#, "{", ""] {
            #expect(MachineEvent.stored(Array(text.utf8)[...]) == nil, "\(text)")
        }
    }
}
