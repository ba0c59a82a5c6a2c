import Foundation
import SpinCore
import Testing

/// A todo event with every shape the protocol handles: fields, an optional field, a
/// checked field and a case without fields.
private enum TodoEvent: TypeTaggedEvent, Equatable, Sendable {
    case add(title: String, note: String?)
    case toggle(id: Int)
    case cleanup

    static let eventTypes: [EventType<TodoEvent>] = [
        .type("add") { try .add(title: $0("title"), note: $0.optional("note")) },
        .type("toggle") { try .toggle(id: $0("id") { $0 > 0 ? nil : "must be 1 or more, got \($0)" }) },
        .type(.cleanup),
    ]
}

private enum Light: TypeTaggedEvent, CaseIterable, Equatable, Sendable {
    case on, off
}

/// Breaks the rules: an unlabeled value, and a case missing from `eventTypes`.
private enum Broken: TypeTaggedEvent, Sendable {
    case unlabeled(Int)
    case unlisted(id: Int)

    static let eventTypes: [EventType<Broken>] = [.type("unlabeled") { _ in .unlabeled(0) }]
}

@Suite struct TypeTaggedEventTests {
    static func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The description of the `DecodingError` decoding `json` throws, with its path.
    static func problem<T: Decodable>(_ type: T.Type, _ json: String) -> String {
        do {
            _ = try JSONDecoder().decode(type, from: Data(json.utf8))
            return "decoded"
        } catch DecodingError.dataCorrupted(let context) {
            return context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
                + ": " + context.debugDescription
        } catch {
            return "other error: \(error)"
        }
    }

    @Test func cases_EncodeAsTypeTaggedObjects() throws {
        #expect(try Self.json(TodoEvent.add(title: "milk", note: nil)) == #"{"title":"milk","type":"add"}"#)
        #expect(try Self.json(TodoEvent.add(title: "milk", note: "2 l")) == #"{"note":"2 l","title":"milk","type":"add"}"#)
        #expect(try Self.json(TodoEvent.toggle(id: 3)) == #"{"id":3,"type":"toggle"}"#)
        #expect(try Self.json(TodoEvent.cleanup) == #"{"type":"cleanup"}"#)
        #expect(try Self.json(Light.off) == #"{"type":"off"}"#)
    }

    @Test func everyCase_RoundTrips() throws {
        let events: [TodoEvent] = [.add(title: "milk", note: nil), .add(title: "tea", note: "green"), .toggle(id: 1), .cleanup]
        let decoded = try JSONDecoder().decode([TodoEvent].self, from: JSONEncoder().encode(events))
        #expect(decoded == events)
        #expect(try JSONDecoder().decode([Light].self, from: Data(#"[{"type":"on"},{"type":"off"}]"#.utf8)) == [.on, .off])
    }

    @Test func decodingErrors_ListTheTypes_AndNameTheField() {
        #expect(Self.problem(TodoEvent.self, #"{"type":"jump"}"#)
                == #"type: unknown type "jump": expected "type" to be one of "add", "toggle", "cleanup""#)
        #expect(Self.problem(TodoEvent.self, #"{"title":"milk"}"#)
                == #"type: missing: expected "type" to be one of "add", "toggle", "cleanup""#)
        #expect(Self.problem(TodoEvent.self, #"{"type":7}"#)
                == #"type: not a string: expected "type" to be one of "add", "toggle", "cleanup""#)
        #expect(Self.problem([TodoEvent].self, #"[{"type":"cleanup"},{"type":"add"}]"#)
                == #"[1].title: "add" needs field "title" (a string)"#)
        #expect(Self.problem(TodoEvent.self, #"{"type":"toggle","id":"one"}"#)
                == #"id: "toggle" needs field "id" to be an integer"#)
        #expect(Self.problem(TodoEvent.self, #"{"type":"toggle","id":null}"#)
                == #"id: "toggle" needs field "id" to be an integer, not null"#)
        #expect(Self.problem(TodoEvent.self, #"{"type":"toggle","id":0}"#) == "id: must be 1 or more, got 0")
        #expect(Self.problem(Light.self, #"{"type":"dim"}"#) == #"type: unknown type "dim": expected "type" to be one of "on", "off""#)
    }

    @Test func anOptionalField_MayBeAbsentOrNull() throws {
        let absent = try JSONDecoder().decode(TodoEvent.self, from: Data(#"{"type":"add","title":"a"}"#.utf8))
        let null = try JSONDecoder().decode(TodoEvent.self, from: Data(#"{"type":"add","title":"a","note":null}"#.utf8))
        #expect(absent == .add(title: "a", note: nil))
        #expect(null == absent)
    }

    @Test func encodingACaseThatBreaksTheRules_Throws() {
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(Broken.unlabeled(1)) }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(Broken.unlisted(id: 1)) }
    }
}
