import Foundation
import SpinCore
import Testing

/// A JSON Schema's text, members in the order they were built.
private func text(_ schema: JSONSchema) throws -> String {
    schema.json.text
}

private enum Shape: TypeTaggedEvent, Equatable, Sendable {
    case circle(radius: Int)
    case named(title: String)
    case clear

    static let eventTypes: [EventType<Shape>] = [
        .type("circle", fields: ["radius": .integer(minimum: 1, maximum: 100)]) { try .circle(radius: $0("radius")) },
        .type("named") { try .named(title: $0("title")) },
        .type(.clear),
    ]
}

private enum Switch: TypeTaggedEvent, CaseIterable, Equatable, Sendable {
    case on, off
}

struct JSONSchemaTests {
    @Test func factories_WriteTheirKeywordsInOrder() throws {
        #expect(try text(.object(["value": .integer(minimum: 0, maximum: 9), "name": .string(minLength: 1)]))
            == #"{"type":"object","required":["value","name"],"properties":{"value":{"type":"integer","minimum":0,"maximum":9},"name":{"type":"string","minLength":1}}}"#)
        #expect(try text(.object(["a": .boolean], required: [], additionalProperties: false))
            == #"{"type":"object","properties":{"a":{"type":"boolean"}},"additionalProperties":false}"#)
        #expect(try text(.array(of: .oneOf(strings: ["x", "y"])).described("letters"))
            == #"{"type":"array","items":{"type":"string","enum":["x","y"]},"description":"letters"}"#)
        #expect(try text(.any) == "{}")
    }

    @Test func aTypeTaggedEvent_DescribesOneObjectPerType_WithTheFieldsItsEntryLists() throws {
        #expect(try text(Shape.jsonSchema) == #"{"oneOf":["#
            + #"{"type":"object","required":["type","radius"],"properties":{"type":{"const":"circle"},"radius":{"type":"integer","minimum":1,"maximum":100}}},"#
            // No fields listed: only `type` is known, anything else may come along.
            + #"{"type":"object","required":["type"],"properties":{"type":{"const":"named"}}},"#
            + #"{"type":"object","required":["type"],"properties":{"type":{"const":"clear"}}}]}"#)
    }

    @Test func aCaseIterableEvent_ListsEveryCase() throws {
        let types = Switch.jsonSchema["oneOf"]
        guard case .array(let branches)? = types else { Issue.record("no oneOf"); return }
        #expect(branches.map { $0["properties"]?["type"]?["const"] } == [.string("on"), .string("off")])
    }

    @Test func text_EscapesStrings() {
        #expect(JSONSchema.const("a\"b\\c\n\u{1}").json.text == #"{"const":"a\"b\\c\n\u0001"}"#)
    }

    @Test func with_ReplacesAKeywordOrAddsIt() {
        let schema = JSONSchema.string().with("minLength", .integer(2)).with("type", .string("number"))
        #expect(schema.json == .object([.init("type", .string("number")), .init("minLength", .integer(2))]))
    }
}
