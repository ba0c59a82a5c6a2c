import Foundation
import SpinCore
import Testing

/// A JSON Schema's text, members in the order they were built.
private func text(_ schema: JSONSchema) throws -> String {
    schema.json.text
}

private enum Shape: TypeTaggedEvent, Equatable, Sendable {
    case circle(radius: Int)
    case named(title: String, note: String?)
    case clear

    static let eventTypes: EventTypes<Shape> = [
        .type("circle", Shape.circle, .field("radius", .integer(minimum: 1, maximum: 100))) {
            if case .circle(let radius) = $0 { radius } else { nil }
        },
        .type("named", Shape.named, .field("title"), .field("note")) {
            if case .named(let title, let note) = $0 { (title, note) } else { nil }
        },
        .type(.clear),
    ]
}

private enum Switch: String, TypeTaggedEvent, CaseIterable, Equatable, Sendable {
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

    @Test func aTypeTaggedEvent_DescribesOneObjectPerType_WithTheFieldsItsEntryLists_OptionalOnesNotRequired() throws {
        #expect(try text(Shape.jsonSchema) == #"{"oneOf":["#
            + #"{"type":"object","required":["type","radius"],"properties":{"type":{"const":"circle"},"radius":{"type":"integer","minimum":1,"maximum":100}}},"#
            // An optional field is not required.
            + #"{"type":"object","required":["type","title"],"properties":{"type":{"const":"named"},"title":{"type":"string"},"note":{"type":"string"}}},"#
            + #"{"type":"object","required":["type"],"properties":{"type":{"const":"clear"}}}]}"#)
    }

    @Test func aCaseIterableEvent_ListsEveryCase() throws {
        let types = Switch.jsonSchema["oneOf"]
        guard case .array(let branches)? = types else { Issue.record("no oneOf"); return }
        #expect(branches.map { $0["properties"]?["type"]?["const"] } == [.string("on"), .string("off")])
    }

    @Test func text_EscapesStrings() {
        #expect(JSONSchema.const("a\"b\\c\n\u{1}").json.text == #"{"const":"a\"b\\c\n\u0001"}"#)
        // Only the escapes RFC 8259 requires, as this text always had (the server's answers
        // escape `<`, `>` and `&` too, and write backspace and form feed as `\b` and `\f`).
        #expect(JSONSchema.const("<&>\u{8}\u{C}").json.text == #"{"const":"<&>\u0008\u000c"}"#)
    }

    @Test func with_ReplacesAKeywordOrAddsIt() {
        let schema = JSONSchema.string().with("minLength", .integer(2)).with("type", .string("number"))
        #expect(schema.json == .object([.init("type", .string("number")), .init("minLength", .integer(2))]))
    }
}
