import Foundation
import SpinCore
import Testing

/// A todo event with every shape the protocol handles: fields, an optional field, a
/// checked field, an unlabeled value and a case without fields.
private enum TodoEvent: TypeTaggedEvent, Equatable, Sendable {
    case add(title: String, note: String?)
    case toggle(id: Int)
    case setTarget(Int)
    case cleanup

    static let eventTypes: EventTypes<TodoEvent> = [
        .type("add", TodoEvent.add, .field("title"), .field("note")) {
            if case .add(let title, let note) = $0 { (title, note) } else { nil }
        },
        .type("toggle", TodoEvent.toggle, .field("id", .integer(minimum: 1))) { if case .toggle(let id) = $0 { id } else { nil } },
        .type("setTarget", TodoEvent.setTarget, .field("degrees", .integer(in: -50...50))) {
            if case .setTarget(let degrees) = $0 { degrees } else { nil }
        },
        .type(.cleanup),
    ]
}

private enum Light: String, TypeTaggedEvent, CaseIterable, Equatable, Sendable {
    case on, off
}

/// A field of a type of its own: published with the schema given, checked by its type's
/// own decoding.
private enum Drawing: TypeTaggedEvent, Equatable, Sendable {
    struct Point: Codable, Equatable, Sendable {
        var x: Int
        var y: Int
    }

    case move(to: Point)

    static let eventTypes: EventTypes<Drawing> = [
        .type("move", Drawing.move, .field("to", JSONSchema.object(["x": .integer(), "y": .integer()]), sample: Point(x: 1, y: 2))) {
            if case .move(let point) = $0 { point } else { nil }
        },
    ]
}

/// A case missing from `eventTypes`.
private enum Unlisted: TypeTaggedEvent, Equatable, Sendable {
    case listed
    case unlisted(id: Int)

    static let eventTypes: EventTypes<Unlisted> = [.type(.listed)]
}

/// Declarations that do not round-trip, one per way of getting it wrong.
enum Mislabeled: TypeTaggedEvent, Equatable, Sendable {
    case set(left: Int, right: Int)
    case other(Int)
    case reset

    /// Which declaration `eventTypes` gives (a static per test would need a type per test).
    nonisolated(unsafe) static var table = EventTypes<Mislabeled>([])
    static var eventTypes: EventTypes<Mislabeled> { table }

    static let swapped: EventTypes<Mislabeled> = [
        .type("set", Mislabeled.set, .field("left"), .field("right")) {
            if case .set(let left, let right) = $0 { (right, left) } else { nil }
        },
    ]
    static let wrongCase: EventTypes<Mislabeled> = [
        .type("set", Mislabeled.set, .field("left"), .field("right")) {
            if case .other(let value) = $0 { (value, value) } else { nil }
        },
    ]
    static let fieldTwice: EventTypes<Mislabeled> = [
        .type("set", Mislabeled.set, .field("value"), .field("value")) {
            if case .set(let left, let right) = $0 { (left, right) } else { nil }
        },
    ]
    static let fieldNamedType: EventTypes<Mislabeled> = [
        .type("other", Mislabeled.other, .field("type")) { if case .other(let value) = $0 { value } else { nil } },
    ]
    static let typeTwice: EventTypes<Mislabeled> = [.type("reset", .reset), .type("reset", .reset)]
    static let stolen: EventTypes<Mislabeled> = [
        .type("any", Mislabeled.other, .field("value")) { if case .other(let value) = $0 { value } else { nil } },
        .type("other", Mislabeled.other, .field("value")) { if case .other(let value) = $0 { value } else { nil } },
    ]
}

@Suite struct TypeTaggedEventTests {
    static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try bytes(value), as: UTF8.self)
    }

    /// Sorted keys: Foundation's encoder may order them differently each time.
    static func bytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(try encoder.encode(value))
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

    /// What the check of `table` says, or "round-trips".
    static func check(_ table: EventTypes<Mislabeled>) -> String {
        Mislabeled.table = table
        do {
            try Mislabeled.checkEventTypes(encode: { try Self.bytes($0) },
                                           decode: { try JSONDecoder().decode(Mislabeled.self, from: Data($0)) })
            return "round-trips"
        } catch {
            return "\(error)"
        }
    }

    @Test func cases_EncodeAsTypeTaggedObjects() throws {
        #expect(try Self.json(TodoEvent.add(title: "milk", note: nil)) == #"{"title":"milk","type":"add"}"#)
        #expect(try Self.json(TodoEvent.add(title: "milk", note: "2 l")) == #"{"note":"2 l","title":"milk","type":"add"}"#)
        #expect(try Self.json(TodoEvent.toggle(id: 3)) == #"{"id":3,"type":"toggle"}"#)
        #expect(try Self.json(TodoEvent.cleanup) == #"{"type":"cleanup"}"#)
        #expect(try Self.json(TodoEvent.setTarget(25)) == #"{"degrees":25,"type":"setTarget"}"#)
        #expect(try Self.json(Light.off) == #"{"type":"off"}"#)
    }

    @Test func everyCase_RoundTrips() throws {
        let events: [TodoEvent] = [.add(title: "milk", note: nil), .add(title: "tea", note: "green"), .toggle(id: 1),
                                   .setTarget(-50), .cleanup]
        let decoded = try JSONDecoder().decode([TodoEvent].self, from: JSONEncoder().encode(events))
        #expect(decoded == events)
        #expect(try JSONDecoder().decode([Light].self, from: Data(#"[{"type":"on"},{"type":"off"}]"#.utf8)) == [.on, .off])
    }

    @Test func decodingErrors_ListTheTypes_AndNameTheField() {
        #expect(Self.problem(TodoEvent.self, #"{"type":"jump"}"#)
                == #"type: unknown type "jump": expected "type" to be one of "add", "toggle", "setTarget", "cleanup""#)
        #expect(Self.problem(TodoEvent.self, #"{"title":"milk"}"#)
                == #"type: missing: expected "type" to be one of "add", "toggle", "setTarget", "cleanup""#)
        #expect(Self.problem(TodoEvent.self, #"{"type":7}"#)
                == #"type: not a string: expected "type" to be one of "add", "toggle", "setTarget", "cleanup""#)
        #expect(Self.problem([TodoEvent].self, #"[{"type":"cleanup"},{"type":"add"}]"#)
                == #"[1].title: "add" needs field "title" (a string)"#)
        #expect(Self.problem(TodoEvent.self, #"{"type":"toggle","id":"one"}"#)
                == #"id: "toggle" needs field "id" to be an integer"#)
        #expect(Self.problem(TodoEvent.self, #"{"type":"toggle","id":null}"#)
                == #"id: "toggle" needs field "id" to be an integer, not null"#)
        #expect(Self.problem(TodoEvent.self, #"{"type":"toggle","id":0}"#) == "id: must be 1 or more, got 0")
        #expect(Self.problem(TodoEvent.self, #"{"type":"setTarget","degrees":51}"#) == "degrees: must be an integer from -50 to 50, got 51")
        #expect(Self.problem(TodoEvent.self, #"{"type":"setTarget","value":5}"#) == #"degrees: "setTarget" needs field "degrees" (an integer)"#)
        #expect(Self.problem(Light.self, #"{"type":"dim"}"#) == #"type: unknown type "dim": expected "type" to be one of "on", "off""#)
    }

    @Test func anOptionalField_MayBeAbsentOrNull() throws {
        let absent = try JSONDecoder().decode(TodoEvent.self, from: Data(#"{"type":"add","title":"a"}"#.utf8))
        let null = try JSONDecoder().decode(TodoEvent.self, from: Data(#"{"type":"add","title":"a","note":null}"#.utf8))
        #expect(absent == .add(title: "a", note: nil))
        #expect(null == absent)
    }

    @Test func encodingACaseNotListed_OrAValueItsSchemaRefuses_Throws() {
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(Unlisted.unlisted(id: 1)) }
        // Made in Swift, refused by the schema: it would be written and never read back.
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(TodoEvent.toggle(id: 0)) }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(TodoEvent.setTarget(51)) }
    }

    @Test func theExamplesOfThisFile_RoundTrip() throws {
        try TodoEvent.checkEventTypes(encode: { try Self.bytes($0) },
                                      decode: { try JSONDecoder().decode(TodoEvent.self, from: Data($0)) })
        try Light.checkEventTypes(encode: { try Self.bytes($0) },
                                  decode: { try JSONDecoder().decode(Light.self, from: Data($0)) })
    }

    @Test func aFieldOfAnyCodableType_RoundTrips_ButIsNotTakenToEncodeWhateverDecodes() throws {
        try Drawing.checkEventTypes(encode: { try Self.bytes($0) },
                                    decode: { try JSONDecoder().decode(Drawing.self, from: Data($0)) })
        #expect(try Self.json(Drawing.move(to: .init(x: 3, y: 4))) == #"{"to":{"x":3,"y":4},"type":"move"}"#)
        #expect(!Drawing.decodedEventsEncode)
        #expect(TodoEvent.decodedEventsEncode && Light.decodedEventsEncode)
    }

    @Test(.serialized, arguments: [
        (Mislabeled.swapped, #"Mislabeled, type "set": set(left: "#),
        (Mislabeled.wrongCase, #"Mislabeled, type "set": its extract does not take back the case its embed makes"#),
        (Mislabeled.fieldTwice, #"Mislabeled, type "set": field "value" is listed twice"#),
        (Mislabeled.fieldNamedType, #"Mislabeled, type "other": a field is named "type""#),
        (Mislabeled.typeTwice, #"Mislabeled, type "reset": two entries have this type"#),
        (Mislabeled.stolen, #"Mislabeled, type "other": its case other("#),
    ])
    func aDeclarationThatCannotRoundTrip_IsRefused_NamingTypeAndEntry(table: EventTypes<Mislabeled>, message: String) {
        let said = Self.check(table)
        #expect(said.contains(message), "\(said)")
    }
}
