import SpinJSON

/// A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1): what a Spin's events or
/// state look like in JSON, for documents, validators and example makers.
///
/// Build one from the factory methods, or give any schema as a `JSONSchema.JSON` tree:
///
/// ```swift
/// let state: JSONSchema = .object(["value": .integer()])
/// let event: JSONSchema = .oneOf([.object(["type": .const("increase")])])
/// ```
///
/// Keywords keep the order they are given in, so a schema encodes to the same text every
/// time.
public struct JSONSchema: Sendable, Equatable, Encodable, CustomStringConvertible {
    /// A JSON value with object members in order.
    public indirect enum JSON: Sendable, Equatable, Encodable {
        case null
        case bool(Bool)
        case integer(Int)
        case double(Double)
        case string(String)
        case array([JSON])
        case object([Member])

        /// One member of an object.
        public struct Member: Sendable, Equatable {
            public var key: String
            public var value: JSON

            /// The member `key` with `value`.
            public init(_ key: String, _ value: JSON) {
                self.key = key
                self.value = value
            }
        }

        /// Compact JSON text, object members in order (Foundation's `JSONEncoder` may
        /// reorder them): the server's one JSON tree and writer, with only the escapes
        /// RFC 8259 requires in strings.
        public var text: String {
            var out: [UInt8] = []
            JSONValue(self).write(into: &out, escaping: .minimal)
            return String(decoding: out, as: UTF8.self)
        }

        /// The object's member `key`; nil for a missing member or a value that is no object.
        public subscript(key: String) -> JSON? {
            guard case .object(let members) = self else { return nil }
            return members.first { $0.key == key }?.value
        }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .null:
                var container = encoder.singleValueContainer()
                try container.encodeNil()
            case .bool(let value):
                var container = encoder.singleValueContainer()
                try container.encode(value)
            case .integer(let value):
                var container = encoder.singleValueContainer()
                try container.encode(value)
            case .double(let value):
                var container = encoder.singleValueContainer()
                try container.encode(value)
            case .string(let value):
                var container = encoder.singleValueContainer()
                try container.encode(value)
            case .array(let items):
                var container = encoder.unkeyedContainer()
                for item in items { try container.encode(item) }
            case .object(let members):
                var container = encoder.container(keyedBy: Key.self)
                for member in members { try container.encode(member.value, forKey: Key(stringValue: member.key)) }
            }
        }

        private struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
    }

    /// The schema as JSON: an object of keywords.
    public let json: JSON

    /// The schema whose JSON is `json`, an object of JSON Schema keywords.
    public init(json: JSON) {
        self.json = json
    }

    /// A schema of the keywords `members`, in that order.
    init(_ members: [JSON.Member]) {
        json = .object(members)
    }

    /// The value of `keyword`, when the schema has it.
    public subscript(keyword: String) -> JSON? { json[keyword] }

    /// This schema with `keyword` set to `value` (replaced when present, else appended).
    public func with(_ keyword: String, _ value: JSON) -> JSONSchema {
        guard case .object(var members) = json else { return self }
        if let index = members.firstIndex(where: { $0.key == keyword }) {
            members[index].value = value
        } else {
            members.append(JSON.Member(keyword, value))
        }
        return JSONSchema(json: .object(members))
    }

    /// This schema with a `description`.
    public func described(_ text: String) -> JSONSchema { with("description", .string(text)) }

    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }

    public var description: String { json.text }

    // MARK: - Factories

    /// Any JSON value: `{}`.
    public static let any = JSONSchema([])

    /// A string, at least `minLength` characters long.
    public static func string(minLength: Int? = nil) -> JSONSchema {
        var members = [JSON.Member("type", .string("string"))]
        if let minLength { members.append(JSON.Member("minLength", .integer(minLength))) }
        return JSONSchema(members)
    }

    /// One of `values`, each a string.
    public static func oneOf(strings values: [String]) -> JSONSchema {
        JSONSchema([JSON.Member("type", .string("string")), JSON.Member("enum", .array(values.map(JSON.string)))])
    }

    /// An integer in `minimum...maximum`; the default is `Int`'s range, what a Swift `Int`
    /// decodes.
    public static func integer(minimum: Int = .min, maximum: Int = .max) -> JSONSchema {
        JSONSchema([JSON.Member("type", .string("integer")), JSON.Member("minimum", .integer(minimum)),
                    JSON.Member("maximum", .integer(maximum))])
    }

    /// An integer in `range`.
    public static func integer(in range: ClosedRange<Int>) -> JSONSchema {
        integer(minimum: range.lowerBound, maximum: range.upperBound)
    }

    /// Any finite number.
    public static let number = JSONSchema([JSON.Member("type", .string("number"))])

    /// `true` or `false`.
    public static let boolean = JSONSchema([JSON.Member("type", .string("boolean"))])

    /// Exactly the string `value`.
    public static func const(_ value: String) -> JSONSchema {
        JSONSchema([JSON.Member("const", .string(value))])
    }

    /// An array whose items all match `items`.
    public static func array(of items: JSONSchema) -> JSONSchema {
        JSONSchema([JSON.Member("type", .string("array")), JSON.Member("items", items.json)])
    }

    /// An object with `properties`, in order.
    /// - Parameters:
    ///   - properties: each member's name and schema, in order.
    ///   - required: the members that must be present; nil (the default) requires them all.
    ///   - additionalProperties: whether other members are allowed (the default, as a
    ///     Swift `Decodable` ignores members it does not read).
    public static func object(_ properties: KeyValuePairs<String, JSONSchema>, required: [String]? = nil,
                              additionalProperties: Bool = true) -> JSONSchema {
        object(properties.map { (key: $0.key, value: $0.value) }, required: required,
               additionalProperties: additionalProperties)
    }

    /// An object with `properties`, in order (the array form, for properties built at run time).
    public static func object(_ properties: [(key: String, value: JSONSchema)], required: [String]? = nil,
                              additionalProperties: Bool = true) -> JSONSchema {
        var members = [JSON.Member("type", .string("object"))]
        let names = required ?? properties.map(\.key)
        if !names.isEmpty { members.append(JSON.Member("required", .array(names.map(JSON.string)))) }
        if !properties.isEmpty {
            members.append(JSON.Member("properties", .object(properties.map { JSON.Member($0.key, $0.value.json) })))
        }
        if !additionalProperties { members.append(JSON.Member("additionalProperties", .bool(false))) }
        return JSONSchema(members)
    }

    /// Exactly one of `schemas`.
    public static func oneOf(_ schemas: [JSONSchema]) -> JSONSchema {
        JSONSchema([JSON.Member("oneOf", .array(schemas.map(\.json)))])
    }
}

/// A type that can say what its JSON looks like.
///
/// A hosted Spin whose event or state type adopts it publishes that schema (in the
/// server's OpenAPI document, at `GET /v1/spins/{name}/schema`, and in the dashboard's
/// example events). Every `TypeTaggedEvent` adopts it already, from its `eventTypes`.
public protocol JSONSchemaDescribable {
    /// The JSON Schema of this type's JSON form.
    static var jsonSchema: JSONSchema { get }
}

extension JSONValue {
    /// The JSON of a schema (a non-finite number, which JSON cannot write, as null).
    package init(_ json: JSONSchema.JSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .integer(let value): self = .number(String(value))
        case .double(let value): self = value.isFinite ? .number("\(value)") : .null
        case .string(let value): self = .string(value)
        case .array(let items): self = .array(items.map(JSONValue.init))
        case .object(let members): self = .object(members.map { ($0.key, JSONValue($0.value)) })
        }
    }
}
