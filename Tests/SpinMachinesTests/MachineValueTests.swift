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
