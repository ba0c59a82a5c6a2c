import Foundation
import SpinCore
import Testing

/// The constraints a field's schema states, checked on decoding and encoding, with their
/// messages; and the samples the round-trip check makes, which the schema always allows.
private enum Form: TypeTaggedEvent, Equatable, Sendable {
    case fill(name: String, size: String, ratio: Double, scores: [Int], tags: [String]?)

    static let eventTypes: EventTypes<Form> = [
        .type("fill", Form.fill, .field("name", .string(minLength: 3)), .field("size", .oneOf(strings: ["S", "M", "L"])),
              .field("ratio", JSONSchema.number.with("minimum", .integer(0)).with("maximum", .integer(1))),
              .field("scores", .array(of: .integer(minimum: 0))), .field("tags")) {
            if case .fill(let name, let size, let ratio, let scores, let tags) = $0 { (name, size, ratio, scores, tags) } else { nil }
        },
    ]
}

@Suite struct EventFieldTests {
    static func problem(_ json: String) -> String {
        do {
            _ = try JSONDecoder().decode(Form.self, from: Data(json.utf8))
            return "decoded"
        } catch DecodingError.dataCorrupted(let context) {
            return context.codingPath.map(\.stringValue).joined(separator: ".") + ": " + context.debugDescription
        } catch {
            return "other error: \(error)"
        }
    }

    static func fill(name: String = "abc", size: String = "M", ratio: String = "0.5", scores: String = "[1]") -> String {
        #"{"type":"fill","name":"\#(name)","size":"\#(size)","ratio":\#(ratio),"scores":\#(scores)}"#
    }

    @Test func decoding_ChecksWhatTheSchemaStates() {
        #expect(Self.problem(Self.fill()) == "decoded")
        #expect(Self.problem(Self.fill(name: "ab")) == "name: must be at least 3 characters long, got 2")
        #expect(Self.problem(Self.fill(size: "XL")) == #"size: must be one of "S", "M", "L", got "XL""#)
        #expect(Self.problem(Self.fill(ratio: "1.5")) == "ratio: must be 1.0 or less, got 1.5")
        #expect(Self.problem(Self.fill(scores: "[1,-2]")) == "scores: item 1 must be 0 or more, got -2")
        #expect(Self.problem(Self.fill(scores: "3")) == #"scores: "fill" needs field "scores" to be an array"#)
    }

    @Test func encoding_RefusesWhatDecodingWould() {
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(Form.fill(name: "", size: "S", ratio: 0, scores: [], tags: nil)) }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(Form.fill(name: "abc", size: "S", ratio: .nan, scores: [], tags: nil)) }
        #expect(throws: Never.self) { try JSONEncoder().encode(Form.fill(name: "abc", size: "S", ratio: 1, scores: [0], tags: ["x"])) }
    }

    @Test func theRoundTripCheck_PassesWithTheSamplesTheSchemasAllow() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try Form.checkEventTypes(encode: { Array(try encoder.encode($0)) },
                                 decode: { try JSONDecoder().decode(Form.self, from: Data($0)) })
        // Integer samples stay inside narrow and extreme ranges.
        for position in 0..<4 {
            for range in [0...0, 5...6, Int.min...Int.max, -3...Int.max] {
                let schema = JSONSchema.integer(in: range)
                #expect(Int.samples(for: schema, position: position).allSatisfy { range.contains($0) })
                #expect(Int.samples(for: schema, position: position).allSatisfy { Int.checker(for: schema)($0) == nil })
            }
        }
    }
}
