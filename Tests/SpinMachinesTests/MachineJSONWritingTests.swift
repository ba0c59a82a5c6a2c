import Foundation
@testable import SpinMachines
import SpinJSON
import SpinTesting
import Testing

/// A machine's state writes its own JSON (`JSONWritable`): byte for byte what its
/// `encode(to:)` makes through `OrderedJSONEncoder`, which the journal, the streams and the
/// history compare and keep.
@Suite struct MachineJSONWritingTests {
    static let strings = ["", "a", "on", "é", "e\u{301}", "\"quoted\"", "back\\slash", "line\nbreak", "\u{1}\u{1f}",
                          "</script>", "&<>'", "😀", "\u{2028}", "type", "zz", "Z", "10", "2"]

    static func value(_ generator: inout SeededGenerator, depth: Int) -> MachineValue {
        switch Int.random(in: 0..<(depth > 2 ? 5 : 7), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2:
            let numbers: [Double] = [0, -0.0, 1, -7, 0.1, 1.5e-7, 123456.789, 9_007_199_254_740_992, 9_007_199_254_740_994,
                                     -9_007_199_254_740_993, 1e300, -2.5e-300, 4.9e-324, Double(Int.random(in: -1_000_000...1_000_000, using: &generator)),
                                     Double.random(in: -1e9...1e9, using: &generator)]
            return .number(numbers.randomElement(using: &generator)!)
        case 3, 4: return .string(strings.randomElement(using: &generator)!)
        case 5: return .array((0..<Int.random(in: 0...3, using: &generator)).map { _ in value(&generator, depth: depth + 1) })
        default: return .object(members(&generator, depth: depth + 1))
        }
    }

    static func members(_ generator: inout SeededGenerator, depth: Int) -> [String: MachineValue] {
        var members: [String: MachineValue] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &generator) {
            members[strings.randomElement(using: &generator)!] = value(&generator, depth: depth)
        }
        return members
    }

    static func json(_ value: MachineValue) throws -> String {
        String(decoding: try OrderedJSONEncoder().encode(value), as: UTF8.self)
    }

    @Test func states_WriteTheBytesTheirEncodingMakes() throws {
        var generator = SeededGenerator(seed: 38)
        let values = [#""idle""#, #"{"a":"x","b":{"c":"y","d":{}}}"#, #"{"p":{"r":"on","s":"off"}}"#]
        for round in 0..<400 {
            var scheduled: [String] = []
            for key in 1...Int.random(in: 1...3, using: &generator) where Bool.random(using: &generator) {
                let id = Bool.random(using: &generator) ? #","id":\#(try Self.json(.string(Self.strings.randomElement(using: &generator)!)))"# : ""
                var payload = Self.members(&generator, depth: 1)
                payload["type"] = nil
                let event = try Self.json(.object(payload.merging(["type": .string("T\(key)")]) { $1 }))
                scheduled.append(#"{"key":\#(key)\#(id),"delay":\#(Int.random(in: 0...5000, using: &generator)),"event":\#(event)}"#)
            }
            let history = Bool.random(using: &generator) ? #","history":{"a":"a.x","p.r":"p.r.on"}"# : ""
            let text = #"{"value":\#(values[round % values.count]),"context":\#(try Self.json(.object(Self.members(&generator, depth: 0))))\#(history),"scheduled":[\#(scheduled.joined(separator: ","))]}"#
            let state = try JSONDecoder().decode(MachineState.self, from: Data(text.utf8))
            let encoded = try OrderedJSONEncoder().encode(state)
            var written: [UInt8] = []
            #expect(state.writeJSON(into: &written))
            #expect(written == encoded, "\(text)\n\(String(decoding: written, as: UTF8.self))\n\(String(decoding: encoded, as: UTF8.self))")
            #expect(try OrderedJSONEncoder().encode(writing: state) == encoded)
        }
        // Events too, `type` first.
        let event = MachineEvent(type: "GO", payload: ["z": 1, "a": [true, nil, "x"], "type": "ignored"])
        var written: [UInt8] = []
        let expected = try OrderedJSONEncoder().encode(event)
        #expect(event.writeJSON(into: &written) && written == expected)
    }

    @Test func aValueWithNoJSON_IsLeftToTheEncoder_WhichSaysWhy() throws {
        for number in [Double.nan, .infinity, -.infinity] {
            let state = try JSONDecoder().decode(MachineState.self, from: Data(#"{"value":"idle","context":{}}"#.utf8))
            var broken = state
            broken.context["x"] = .array([.number(number)])
            var written: [UInt8] = []
            #expect(!broken.writeJSON(into: &written))
            #expect(throws: EncodingError.self) { try OrderedJSONEncoder().encode(writing: broken) }
        }
    }
}
