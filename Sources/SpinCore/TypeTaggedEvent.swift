/// An enum coded as JSON objects `{"type":"case", ...fields}`: the case's wire name in
/// `type`, each associated value as a named member of the same object.
///
/// One table, `eventTypes`, says both ways for each case: its wire `type`, its fields
/// (wire name and JSON Schema), how to make the case from them (the case itself:
/// `TodoEvent.add`) and how to take them back out (`extract`):
///
/// ```swift
/// enum TodoEvent: TypeTaggedEvent, Equatable, Sendable {
///     case add(title: String)
///     case toggle(Int)
///     case cleanup
///
///     static let eventTypes: EventTypes<TodoEvent> = [
///         .type("add", TodoEvent.add, .field("title", .string(minLength: 1))) {
///             if case .add(let title) = $0 { title } else { nil }
///         },
///         .type("toggle", TodoEvent.toggle, .field("id", .integer(minimum: 1))) {
///             if case .toggle(let id) = $0 { id } else { nil }
///         },
///         .type(.cleanup),
///     ]
/// }
/// ```
///
/// A field's Swift type comes from the case: `Int`, `String`, `Bool`, `Double`, arrays of
/// them, and optionals (absent or null decodes as nil; nil is left out), each with the
/// schema given or its own (`.field("id")`); any other `Codable` type with a sample value
/// for the check, `.field("at", schema, sample: value)`. A case without values is
/// `.type(.cleanup)`, named by the case (read once, when the table is built), or
/// `.type("clean-up", .cleanup)`.
///
/// Encoding and decoding both go through the entry, so the wire names cannot disagree,
/// and a case's labels do not matter (`toggle(Int)` is fine: the entry names the field).
/// A field's schema is what both check: decoding `{"type":"toggle","id":0}` fails, and so
/// does encoding `.toggle(0)` made in Swift (what cannot be decoded back is never written).
/// An enum whose cases have no associated values gets its table for free when it is
/// `CaseIterable` with `String` raw values (`enum Light: String, TypeTaggedEvent,
/// CaseIterable { case on, off }`): the raw value is the `type`.
///
/// `checkEventTypes(encode:decode:)` tells whether a table round-trips (a server hosting
/// the Spin runs it at registration, `SpinHost.checkEvents`): no two entries share a
/// `type`, no field is listed twice or named `type`, and sample values made from each
/// field's schema encode through their own entry and decode back to the same JSON.
///
/// Decoding errors are `DecodingError.dataCorrupted` whose coding path ends at the
/// member at fault and whose description says what was expected:
/// `unknown type "jump": expected "type" to be one of "add", "toggle", "cleanup"`,
/// `"add" needs field "title" (a string)`, `must be 1 or more, got 0`.
///
/// Its JSON Schema (`JSONSchemaDescribable`) comes from `eventTypes`: one object per
/// entry, `type` its name, with the entry's fields (required unless optional).
///
/// A server hosting the Spin reads and writes these events straight through the table
/// (no `Decoder` nor `Encoder`; the same events, bytes and errors as `init(from:)` and
/// `encode(to:)` here), so a type that declares its own `init(from:)` or `encode(to:)`
/// is not read or written through them there.
public protocol TypeTaggedEvent: Codable, JSONSchemaDescribable {
    /// Every accepted `type`, each with its fields and how to make and take apart its
    /// case. Declare it as a `static let`: the table is built once.
    static var eventTypes: EventTypes<Self> { get }
}

/// The table of a `TypeTaggedEvent`: one `EventType` per case, written as an array
/// literal. Looks a `type` up by name in one step.
public struct EventTypes<Event>: Sendable, ExpressibleByArrayLiteral {
    /// The entries, in the order given (what errors and the schema list).
    public let entries: [EventType<Event>]
    /// The index of each `type`'s first entry.
    private let index: [String: Int]
    /// True when every field is of a type whose decoding checks what its encoding checks
    /// (an `EventFieldValue`): then an event that decoded encodes again, as long as each
    /// entry's extract gives back what its case holds (what the round-trip check
    /// samples). A server then does not encode a client's events before applying them.
    public let decodedEventsEncode: Bool

    /// The table of `entries`.
    public init(_ entries: [EventType<Event>]) {
        self.entries = entries
        var index: [String: Int] = [:]
        for (offset, entry) in entries.enumerated() where index[entry.name] == nil { index[entry.name] = offset }
        self.index = index
        self.decodedEventsEncode = entries.allSatisfy(\.decodedEventsEncode)
    }

    public init(arrayLiteral entries: EventType<Event>...) {
        self.init(entries)
    }

    /// The entry whose `type` is `name`.
    public func entry(named name: String) -> EventType<Event>? {
        index[name].map { entries[$0] }
    }

    /// The offset in `entries` of the entry whose `type` is `name`.
    func offset(named name: String) -> Int? {
        index[name]
    }

    /// The offset of the first entry that takes `event` apart (the one that encodes it).
    func offset(encoding event: Event) -> Int? {
        entries.firstIndex { $0.extracts(event) }
    }

    /// `"a", "b"`: the names, for messages.
    var quotedNames: String {
        entries.map { "\"\($0.name)\"" }.joined(separator: ", ")
    }

    /// One object schema per entry, in order (`oneOf`).
    public var jsonSchema: JSONSchema {
        .oneOf(entries.map(\.jsonSchema))
    }

    /// Reads `type`, then the fields of that entry.
    func decode(from decoder: any Decoder) throws -> Event {
        let container = try decoder.container(keyedBy: EventKey.self)
        let name = try EventKey.readType(container, codingPath: decoder.codingPath, expected: quotedNames)
        guard let entry = entry(named: name) else {
            throw EventKey.typeProblem(decoder.codingPath, "unknown type \"\(name)\": expected \"type\" to be one of \(quotedNames)")
        }
        return try entry.decode(container, decoder.codingPath)
    }

    /// Writes `type` and the fields, through the first entry that takes `event` apart.
    func encode(_ event: Event, to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: EventKey.self)
        for entry in entries where try entry.encode(event, &container, encoder.codingPath) { return }
        throw EncodingError.invalidValue(event, .init(
            codingPath: encoder.codingPath,
            debugDescription: "\(Event.self): no entry of eventTypes takes this case apart (is it listed?)"))
    }
}

extension TypeTaggedEvent {
    /// One object schema per entry of `eventTypes`, in order (`oneOf`).
    public static var jsonSchema: JSONSchema { eventTypes.jsonSchema }

    /// `eventTypes.decodedEventsEncode`.
    public static var decodedEventsEncode: Bool { eventTypes.decodedEventsEncode }

    /// Reads `type`, then the fields of that case through its `eventTypes` entry.
    public init(from decoder: any Decoder) throws {
        self = try Self.eventTypes.decode(from: decoder)
    }

    /// Writes `type`, then the fields its `eventTypes` entry takes out of the case.
    public func encode(to encoder: any Encoder) throws {
        try Self.eventTypes.encode(self, to: encoder)
    }
}

extension TypeTaggedEvent where Self: RawRepresentable<String>, Self: CaseIterable, Self: Sendable {
    /// One entry per case, named by its raw value; made on each access, but coding does
    /// not use it (it reads and writes the raw value directly).
    public static var eventTypes: EventTypes<Self> {
        EventTypes(allCases.map { event in EventType(name: event.rawValue, event) { $0.rawValue == event.rawValue } })
    }

    /// Reads `type` as the raw value of a case.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: EventKey.self)
        func expected() -> String { Self.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ") }
        let name = try EventKey.readType(container, codingPath: decoder.codingPath, expected: expected())
        guard let event = Self(rawValue: name) else {
            throw EventKey.typeProblem(decoder.codingPath, "unknown type \"\(name)\": expected \"type\" to be one of \(expected())")
        }
        self = event
    }

    /// Writes `{"type":rawValue}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: EventKey.self)
        try container.encode(rawValue, forKey: .type)
    }
}

/// A member of an event object.
struct EventKey: CodingKey, Sendable {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    static let type = EventKey("type")

    /// The `type` member, or an error saying it must be one of `expected`.
    static func readType(_ container: KeyedDecodingContainer<EventKey>, codingPath: [any CodingKey],
                         expected: @autoclosure () -> String) throws -> String {
        guard container.contains(.type) else {
            throw typeProblem(codingPath, "missing: expected \"type\" to be one of \(expected())")
        }
        guard let name = try? container.decode(String.self, forKey: .type) else {
            throw typeProblem(codingPath, "not a string: expected \"type\" to be one of \(expected())")
        }
        return name
    }

    static func typeProblem(_ codingPath: [any CodingKey], _ description: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath + [EventKey.type], debugDescription: description))
    }
}
