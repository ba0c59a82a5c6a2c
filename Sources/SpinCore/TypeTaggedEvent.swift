/// An enum coded as JSON objects `{"type":"case", ...fields}`: the case name in `type`,
/// each labeled associated value as a member of the same object.
///
/// ```swift
/// enum TodoEvent: TypeTaggedEvent {
///     case add(title: String)
///     case toggle(id: Int)
///     case cleanup
///
///     static let eventTypes: [EventType<TodoEvent>] = [
///         .type("add") { try .add(title: $0("title")) },
///         .type("toggle") { try .toggle(id: $0("id")) },
///         .type(.cleanup),
///     ]
/// }
/// ```
///
/// Encoding needs no code: it reads the case name and the labels of its associated values
/// by reflection, in declaration order, and leaves out a `nil` optional. Decoding reads
/// `type` and calls the matching entry of `eventTypes`; an enum whose cases have no
/// associated values and that is `CaseIterable` gets `eventTypes` for free.
///
/// Rules: every associated value has a label (`case add(title: String)`, not
/// `case add(String)`), no label is `type`, the enum has no custom `description`
/// (reflection names a case without values by it) and no raw type (the standard library's
/// coding of `RawRepresentable` would take precedence). Encoding a case that breaks them, or
/// that `eventTypes` does not list, throws an `EncodingError`.
///
/// Decoding errors are `DecodingError.dataCorrupted` whose coding path ends at the
/// member at fault and whose description says what was expected:
/// `unknown type "jump": expected "type" to be one of "add", "toggle", "cleanup"`,
/// `"add" needs field "title" (a string)`.
///
/// Its JSON Schema (`JSONSchemaDescribable`) comes from `eventTypes`: one object per type,
/// `type` its name, with the fields an entry lists (`.type("add", fields: ["title": .string()])`);
/// an entry that lists none allows any other member.
public protocol TypeTaggedEvent: Codable, JSONSchemaDescribable {
    /// Every accepted `type`, each with how to make the case from the object's fields.
    static var eventTypes: [EventType<Self>] { get }
}

/// One accepted `type` of a `TypeTaggedEvent` and how to decode its fields.
public struct EventType<Event>: Sendable {
    /// The `type` member's value.
    public let name: String
    /// The fields `make` reads, each required, with their schemas; nil when not described
    /// (the event's schema then allows any member besides `type`).
    public let fields: [(key: String, value: JSONSchema)]?
    let make: @Sendable (EventFields) throws -> Event

    /// A case with fields: `make` reads them from its argument, `try $0("title")`.
    /// - Parameter fields: the members `make` requires and what each must be, for the
    ///   event's JSON Schema: `["title": .string(minLength: 1)]`.
    public static func type(_ name: String, fields: KeyValuePairs<String, JSONSchema>? = nil,
                            _ make: @escaping @Sendable (EventFields) throws -> Event) -> EventType {
        EventType(name: name, fields: fields.map { $0.map { (key: $0.key, value: $0.value) } }, make: make)
    }

    /// The JSON Schema of this type's events: `type` is `name`, and the listed fields are
    /// required.
    public var jsonSchema: JSONSchema {
        let type = (key: "type", value: JSONSchema.const(name))
        guard let fields else { return .object([type], required: ["type"]) }
        return .object([type] + fields)
    }
}

extension EventType where Event: Sendable {
    /// A case without associated values; its name is the case name.
    public static func type(_ event: Event) -> EventType {
        EventType(name: EventFields.caseName(of: event), fields: [], make: { _ in event })
    }
}

extension TypeTaggedEvent where Self: CaseIterable, Self: Sendable {
    /// Every case, by its name: for enums whose cases have no associated values.
    public static var eventTypes: [EventType<Self>] { allCases.map { EventType.type($0) } }
}

extension TypeTaggedEvent {
    /// One object schema per entry of `eventTypes`, in order (`oneOf`).
    public static var jsonSchema: JSONSchema {
        .oneOf(eventTypes.map(\.jsonSchema))
    }

    /// Reads `type`, then the fields of that case through its `eventTypes` entry.
    public init(from decoder: any Decoder) throws {
        let types = Self.eventTypes
        let container = try decoder.container(keyedBy: EventFields.Key.self)
        let path = decoder.codingPath + [EventFields.Key.type]
        func expected() -> String {
            "expected \"type\" to be one of " + types.map { "\"\($0.name)\"" }.joined(separator: ", ")
        }
        guard container.contains(.type) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "missing: \(expected())"))
        }
        guard let name = try? container.decode(String.self, forKey: .type) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "not a string: \(expected())"))
        }
        guard let type = types.first(where: { $0.name == name }) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "unknown type \"\(name)\": \(expected())"))
        }
        self = try type.make(EventFields(type: name, container: container, codingPath: decoder.codingPath))
    }

    /// Writes `type`, then each labeled associated value, found by reflection.
    public func encode(to encoder: any Encoder) throws {
        let name = EventFields.caseName(of: self)
        func refuse(_ problem: String) -> EncodingError {
            .invalidValue(self, .init(codingPath: encoder.codingPath, debugDescription: "\(Self.self).\(name): \(problem)"))
        }
        guard Self.eventTypes.contains(where: { $0.name == name }) else { throw refuse("not listed in eventTypes") }
        var container = encoder.container(keyedBy: EventFields.Key.self)
        try container.encode(name, forKey: .type)
        guard let payload = Mirror(reflecting: self).children.first?.value else { return }
        let fields = Mirror(reflecting: payload)
        guard fields.displayStyle == .tuple else { throw refuse("its associated value needs a label") }
        for field in fields.children {
            guard let label = field.label, !label.hasPrefix("."), label != "type" else {
                throw refuse("every associated value needs a label other than \"type\"")
            }
            let value = Mirror(reflecting: field.value)
            if value.displayStyle == .optional, value.children.isEmpty { continue }
            guard let encodable = field.value as? any Encodable else { throw refuse("\"\(label)\" is not Encodable") }
            try container.encode(encodable, forKey: EventFields.Key(label))
        }
    }
}

/// The members of one decoded event object, read by name in an `EventType`'s closure.
public struct EventFields {
    struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
        static let type = Key("type")
    }

    /// The event's `type`.
    public let type: String
    let container: KeyedDecodingContainer<Key>
    let codingPath: [any CodingKey]

    /// The member `name`; when it is missing or of another type, a `DecodingError`
    /// naming it: `"add" needs field "title" (a string)`.
    public func callAsFunction<Value: Decodable>(_ name: String, as _: Value.Type = Value.self) throws -> Value {
        let key = Key(name)
        guard container.contains(key) else { throw problem(name, "\"\(type)\" needs field \"\(name)\" (\(Self.describe(Value.self)))") }
        do {
            return try container.decode(Value.self, forKey: key)
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.count == codingPath.count + 1 {
            throw problem(name, "\"\(type)\" needs field \"\(name)\" to be \(Self.describe(Value.self))")
        } catch DecodingError.valueNotFound(_, let context) where context.codingPath.count == codingPath.count + 1 {
            throw problem(name, "\"\(type)\" needs field \"\(name)\" to be \(Self.describe(Value.self)), not null")
        }
    }

    /// The member `name`, checked: `check` returns what is wrong with the value, or nil.
    /// `try $0("items") { $0 >= 0 ? nil : "must be 0 or more, got \($0)" }`.
    public func callAsFunction<Value: Decodable>(_ name: String, _ check: (Value) -> String?) throws -> Value {
        let value: Value = try self(name)
        if let wrong = check(value) { throw problem(name, wrong) }
        return value
    }

    /// The member `name`, or nil when it is absent or null.
    public func optional<Value: Decodable>(_ name: String, as _: Value.Type = Value.self) throws -> Value? {
        guard container.contains(Key(name)), !((try? container.decodeNil(forKey: Key(name))) ?? false) else { return nil }
        return try self(name) as Value
    }

    /// A decoding error at member `name` saying `description`: for checks of your own.
    public func problem(_ name: String, _ description: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath + [Key(name)], debugDescription: description))
    }

    /// The name of `event`'s case, by reflection.
    static func caseName(of event: Any) -> String {
        if let label = Mirror(reflecting: event).children.first?.label { return label }
        return String(describing: event)
    }

    /// "a string", "an integer", ... for the messages.
    static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type,
             is UInt.Type, is UInt8.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        default: "a value of type \(type)"
        }
    }
}
