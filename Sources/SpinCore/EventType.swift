import SpinJSON

/// One entry of a `TypeTaggedEvent`'s table: a wire `type`, its fields, and how to make
/// its case from their values and take them back out. Encoding and decoding both use it.
public struct EventType<Event>: Sendable {
    /// The `type` member's value.
    public let name: String
    /// The fields, in the order they are written.
    public let fields: [EventFieldListing]
    let decode: @Sendable (KeyedDecodingContainer<EventKey>, [any CodingKey]) throws -> Event
    /// Reads the fields from an event object's JSON (its `type` is this entry's).
    let decodeJSON: @Sendable (EventJSON, any EventJSONFallback) throws -> Event
    /// Writes the event's fields and `type` and returns true when the entry takes it
    /// apart; false (nothing written) for a case of another entry.
    let encode: @Sendable (Event, inout KeyedEncodingContainer<EventKey>, [any CodingKey]) throws -> Bool
    /// Appends the event's JSON object when the entry takes it apart (see
    /// `EventTypes.json(encoding:)`).
    let encodeJSON: @Sendable (Event, inout [UInt8]) -> EventJSONWriting
    /// Whether the entry takes the event apart.
    let extracts: @Sendable (Event) -> Bool
    /// Events made from sample field values (for the round-trip check).
    let samples: @Sendable () -> [Event]
    /// Whether every field's decoded values encode again (see `EventTypes`).
    let decodedEventsEncode: Bool

    /// A case with fields: `embed` makes it from the fields' values (the case itself,
    /// `Event.set`), `extract` takes them back out of it, nil for any other case.
    ///
    /// ```swift
    /// .type("set", Event.set, .field("left", .integer()), .field("right", .integer())) {
    ///     if case .set(let left, let right) = $0 { (left, right) } else { nil }
    /// }
    /// ```
    public static func type<each Value: Codable & Sendable>(
        _ name: String, _ embed: @escaping @Sendable (repeat each Value) -> Event,
        _ fields: repeat EventField<each Value>,
        extract: @escaping @Sendable (Event) -> (repeat each Value)?
    ) -> EventType {
        let fields = (repeat each fields)
        let opening = openingJSON(name)
        var listed: [EventFieldListing] = []
        repeat listed.append((each fields).listing)
        var decodedEventsEncode = true
        repeat decodedEventsEncode = decodedEventsEncode && (each fields).decodedValuesEncode
        return EventType(
            name: name, fields: listed,
            decode: { container, path in
                embed(repeat try (each fields).decode(from: container, type: name, codingPath: path))
            },
            decodeJSON: { json, fallback in
                embed(repeat try (each fields).decode(json, type: name, fallback: fallback))
            },
            encode: { event, container, path in
                guard let values = extract(event) else { return false }
                try container.encode(name, forKey: .type)
                repeat try (each fields).encode(each values, to: &container, type: name, codingPath: path)
                return true
            },
            encodeJSON: { event, json in
                guard let values = extract(event) else { return .notThisEntry }
                json += opening
                var written = true
                repeat written = (each fields).write(each values, into: &json, after: written)
                json.append(UInt8(ascii: "}"))
                return written ? .written : .notWritten
            },
            extracts: { extract($0) != nil },
            samples: {
                (0..<EventFieldSamples.count).map { sample in
                    var position = 0
                    func value<V>(_ field: EventField<V>) -> V {
                        defer { position += 1 }
                        let values = field.samples(position)
                        return values[sample % values.count]
                    }
                    return embed(repeat value(each fields))
                }
            }, decodedEventsEncode: decodedEventsEncode)
    }

    /// A case without associated values, named by itself: `.type(.cleanup)` is
    /// `{"type":"cleanup"}`. The name is the case's description, read once when the table
    /// is built; give it with `type(_:_:)` for an enum with a custom `description`.
    public static func type(_ event: Event) -> EventType where Event: Equatable & Sendable {
        type(String(describing: event), event)
    }

    /// A case without associated values, under the wire name `name`.
    public static func type(_ name: String, _ event: Event) -> EventType where Event: Equatable & Sendable {
        EventType(name: name, event) { $0 == event }
    }

    /// A case without associated values; `matches` tells it from the others.
    init(name: String, _ event: Event, matches: @escaping @Sendable (Event) -> Bool) where Event: Sendable {
        let json = Self.openingJSON(name) + [UInt8(ascii: "}")]
        self.init(name: name, fields: [], decode: { _, _ in event }, decodeJSON: { _, _ in event },
                  encode: { candidate, container, _ in
                      guard matches(candidate) else { return false }
                      try container.encode(name, forKey: .type)
                      return true
                  },
                  encodeJSON: { candidate, bytes in
                      guard matches(candidate) else { return .notThisEntry }
                      bytes += json
                      return .written
                  },
                  extracts: matches, samples: { [event] }, decodedEventsEncode: true)
    }

    private init(name: String, fields: [EventFieldListing],
                 decode: @escaping @Sendable (KeyedDecodingContainer<EventKey>, [any CodingKey]) throws -> Event,
                 decodeJSON: @escaping @Sendable (EventJSON, any EventJSONFallback) throws -> Event,
                 encode: @escaping @Sendable (Event, inout KeyedEncodingContainer<EventKey>, [any CodingKey]) throws -> Bool,
                 encodeJSON: @escaping @Sendable (Event, inout [UInt8]) -> EventJSONWriting,
                 extracts: @escaping @Sendable (Event) -> Bool, samples: @escaping @Sendable () -> [Event],
                 decodedEventsEncode: Bool) {
        self.name = name
        self.fields = fields
        self.decode = decode
        self.decodeJSON = decodeJSON
        self.encode = encode
        self.encodeJSON = encodeJSON
        self.extracts = extracts
        self.samples = samples
        self.decodedEventsEncode = decodedEventsEncode
    }

    /// `{"type":"name"`: how the entry's JSON objects start.
    private static func openingJSON(_ name: String) -> [UInt8] {
        var json = Array(#"{"type":"#.utf8)
        JSONValue.writeString(name, into: &json)
        return json
    }

    /// The JSON Schema of this type's events: `type` is `name`, then the fields; all
    /// required but the optional ones.
    public var jsonSchema: JSONSchema {
        let type = (key: "type", value: JSONSchema.const(name))
        return .object([type] + fields.map { (key: $0.name, value: $0.schema) },
                       required: ["type"] + fields.filter(\.isRequired).map(\.name))
    }
}

/// A field of an `EventType`, as the event's schema lists it.
public struct EventFieldListing: Sendable {
    /// The member's name in the event object.
    public let name: String
    public let schema: JSONSchema
    /// False for an optional field (absent or null decodes as nil, nil is left out).
    public let isRequired: Bool
}
