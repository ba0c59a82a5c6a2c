import SpinJSON

/// One field of an `EventType`: the member's name, its JSON Schema, and the value's
/// Swift type. The schema is what decoding and encoding check (`.integer(in: 0...9)`
/// refuses 10 both ways), and what the event's published schema says.
///
/// ```swift
/// .field("title", .string(minLength: 1))      // a String, not empty
/// .field("id")                                // an Int, any (the type's own schema)
/// .field("note", .string())                   // a String?: may be absent or null
/// .field("item", JSONSchema.object([...]), sample: item) // any Codable type, with a sample
/// ```
public struct EventField<Value: Codable & Sendable>: Sendable {
    /// The member's name.
    public let name: String
    public let schema: JSONSchema
    /// "an integer", "a string", ... for the messages.
    let kind: String
    /// What is wrong with a value, or nil: the schema's constraints.
    let check: @Sendable (Value) -> String?
    /// The value an absent or null member decodes as (`.some(nil)` for an optional);
    /// nil when the member is required.
    let absent: Value?
    /// Whether a value is left out when encoding (nil of an optional).
    let isAbsent: @Sendable (Value) -> Bool
    /// Sample values for the round-trip check; the argument is the field's position, so
    /// that two fields of one type get different values (a swap shows).
    let samples: @Sendable (_ position: Int) -> [Value]
    /// Whether a value that decoded always encodes again: its decoding checks what its
    /// encoding checks (true for an `EventFieldValue`).
    let decodedValuesEncode: Bool
    /// How a value is read and written as JSON without a `Decoder` or `Encoder`; nil for a
    /// type the direct path does not know (it falls back to the Codable path).
    let coding: EventFieldCoding<Value>?
    /// `,"name":`, what precedes the value in an event object.
    let memberJSON: [UInt8]

    /// A field of a type that knows its schema (`Int`, `String`, `Bool`, `Double`, their
    /// optionals and arrays). `schema` defaults to the type's own.
    public static func field(_ name: String, _ schema: JSONSchema? = nil) -> EventField where Value: EventFieldValue {
        let schema = schema ?? Value.defaultSchema
        return EventField(name: name, schema: schema, kind: Value.kind, check: Value.checker(for: schema),
                          absent: Value.absent, isAbsent: { $0.isAbsent },
                          samples: { Value.samples(for: schema, position: $0) }, decodedValuesEncode: true,
                          coding: .of(Value.self))
    }

    /// A field of any `Codable` type, required: `schema` is published as it is (decoding
    /// checks what the type's own decoding checks), and `sample` is a value for the
    /// round-trip check.
    public static func field(_ name: String, _ schema: JSONSchema, sample: Value) -> EventField {
        EventField(name: name, schema: schema, kind: "a value of type \(Value.self)", check: { _ in nil },
                   absent: nil, isAbsent: { _ in false }, samples: { _ in [sample] }, decodedValuesEncode: false,
                   coding: nil)
    }

    private init(name: String, schema: JSONSchema, kind: String, check: @escaping @Sendable (Value) -> String?,
                 absent: Value?, isAbsent: @escaping @Sendable (Value) -> Bool,
                 samples: @escaping @Sendable (_ position: Int) -> [Value], decodedValuesEncode: Bool,
                 coding: EventFieldCoding<Value>?) {
        self.name = name
        self.schema = schema
        self.kind = kind
        self.check = check
        self.absent = absent
        self.isAbsent = isAbsent
        self.samples = samples
        self.decodedValuesEncode = decodedValuesEncode
        self.coding = coding
        var member = [UInt8(ascii: ",")]
        JSONValue.writeString(name, into: &member)
        member.append(UInt8(ascii: ":"))
        self.memberJSON = member
    }

    var listing: EventFieldListing {
        EventFieldListing(name: name, schema: schema, isRequired: absent == nil)
    }

    /// The member `name` of an event of type `type`; a `DecodingError` at it naming what
    /// is wrong: `"add" needs field "title" (a string)`.
    func decode(from container: KeyedDecodingContainer<EventKey>, type: String,
                codingPath: [any CodingKey]) throws -> Value {
        let key = EventKey(name)
        if let absent {
            guard container.contains(key), !((try? container.decodeNil(forKey: key)) ?? false) else { return absent }
        } else if !container.contains(key) {
            throw problem(codingPath, "\"\(type)\" needs field \"\(name)\" (\(kind))")
        }
        let value: Value
        do {
            value = try container.decode(Value.self, forKey: key)
        } catch let error as DecodingError {
            throw refined(error, codingPath, type: type)
        }
        if let wrong = check(value) { throw problem(codingPath, wrong) }
        return value
    }

    /// The member `name` of an event object's JSON of type `type`, read directly when
    /// the field's type allows (`coding`) and through `fallback` otherwise: the value and
    /// the errors of `decode(from:type:codingPath:)`.
    func decode(_ json: EventJSON, type: String, fallback: any EventJSONFallback) throws -> Value {
        guard let range = json.value(of: name) else {
            if let absent { return absent }
            throw problem(json.codingPath, "\"\(type)\" needs field \"\(name)\" (\(kind))")
        }
        var reader = EventJSONReader(json.bytes, range)
        if let absent {
            var null = reader
            if null.whole({ $0.null() ? true : nil }) != nil { return absent }
        }
        let value: Value
        if let coding, let read = reader.whole(coding.read) {
            value = read
        } else {
            do {
                value = try fallback.decode(Value.self, from: json.bytes[range])
            } catch let error as DecodingError {
                throw refined(error.prefixed(by: json.codingPath + [EventKey(name)]), json.codingPath, type: type)
            }
        }
        if let wrong = check(value) { throw problem(json.codingPath, wrong) }
        return value
    }

    /// A decoding error of this member's value, as the event's error: a value of the
    /// wrong kind, or null, is named by the member (`"add" needs field "title" to be a
    /// string`); an error inside the value stays as it is.
    private func refined(_ error: DecodingError, _ codingPath: [any CodingKey], type: String) -> DecodingError {
        switch error {
        case .typeMismatch(_, let context) where context.codingPath.count == codingPath.count + 1:
            problem(codingPath, "\"\(type)\" needs field \"\(name)\" to be \(kind)")
        case .valueNotFound(_, let context) where context.codingPath.count == codingPath.count + 1:
            problem(codingPath, "\"\(type)\" needs field \"\(name)\" to be \(kind), not null")
        default:
            error
        }
    }

    /// Appends `,"name":value` unless the value is an absent optional; false when the
    /// value's schema refuses it or its type does not write directly (`coding`), or when
    /// a field before it failed (`after` false: nothing written).
    func write(_ value: Value, into json: inout [UInt8], after: Bool) -> Bool {
        guard after else { return false }
        if isAbsent(value) { return true }
        guard check(value) == nil, let coding else { return false }
        json += memberJSON
        return coding.write(value, &json)
    }

    /// Writes `value` as member `name`, unless it is an absent optional; a value its
    /// schema refuses is an `EncodingError` (it would not decode back).
    func encode(_ value: Value, to container: inout KeyedEncodingContainer<EventKey>, type: String,
                codingPath: [any CodingKey]) throws {
        if isAbsent(value) { return }
        let key = EventKey(name)
        if let wrong = check(value) {
            throw EncodingError.invalidValue(value, .init(
                codingPath: codingPath + [key], debugDescription: "\"\(type)\" field \"\(name)\" \(wrong)"))
        }
        try container.encode(value, forKey: key)
    }

    private func problem(_ codingPath: [any CodingKey], _ description: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath + [EventKey(name)], debugDescription: description))
    }
}

/// How many sample events the round-trip check makes per entry.
enum EventFieldSamples {
    static let count = 3
}

/// A field value whose constraints a JSON Schema states: what `EventField.field(_:_:)`
/// checks and makes samples of. Adopted by `Int`, `String`, `Bool`, `Double`, and by
/// optionals and arrays of them.
public protocol EventFieldValue: Codable, Sendable {
    /// The schema of any value of the type: `.integer()` for `Int`.
    static var defaultSchema: JSONSchema { get }
    /// "an integer", "a string", ...
    static var kind: String { get }
    /// What is wrong with a value under `schema`, or nil; built once per field.
    static func checker(for schema: JSONSchema) -> @Sendable (Self) -> String?
    /// Values `schema` allows, different for each `position` where the type allows it.
    static func samples(for schema: JSONSchema, position: Int) -> [Self]
    /// The value of an absent member; nil (the default) when it is required.
    static var absent: Self? { get }
    /// Whether the value is left out of the event object (false by default).
    var isAbsent: Bool { get }
}

extension EventFieldValue {
    public static var absent: Self? { nil }
    public var isAbsent: Bool { false }
}

extension Int: EventFieldValue {
    public static var defaultSchema: JSONSchema { .integer() }
    public static var kind: String { "an integer" }

    /// `minimum` and `maximum`: "must be an integer from -5 to 5, got 9", "must be 0 or
    /// more, got -1", "must be 9 or less, got 10".
    public static func checker(for schema: JSONSchema) -> @Sendable (Int) -> String? {
        let (lower, upper) = bounds(schema)
        switch (lower, upper) {
        case (.min, .max): return { _ in nil }
        case (_, .max): return { $0 >= lower ? nil : "must be \(lower) or more, got \($0)" }
        case (.min, _): return { $0 <= upper ? nil : "must be \(upper) or less, got \($0)" }
        default: return { (lower...upper).contains($0) ? nil : "must be an integer from \(lower) to \(upper), got \($0)" }
        }
    }

    public static func samples(for schema: JSONSchema, position: Int) -> [Int] {
        let (lower, upper) = bounds(schema)
        guard lower <= upper else { return [lower] }
        let offset = position % 100
        /// Whether `from + offset` is still at most `upper`.
        func fits(from: Int) -> Bool {
            let (room, overflow) = upper.subtractingReportingOverflow(from)
            return overflow || room >= offset
        }
        let middle = lower / 2 + upper / 2
        guard fits(from: lower) else { return [lower, upper] }
        return [lower + offset, upper - offset, fits(from: middle) ? middle + offset : middle]
    }

    private static func bounds(_ schema: JSONSchema) -> (Int, Int) {
        var lower = Int.min, upper = Int.max
        if case .integer(let value)? = schema["minimum"] { lower = value }
        if case .integer(let value)? = schema["maximum"] { upper = value }
        return (lower, upper)
    }
}

extension String: EventFieldValue {
    public static var defaultSchema: JSONSchema { .string() }
    public static var kind: String { "a string" }

    /// `minLength` (in Unicode scalars, as JSON Schema counts) and `enum`.
    public static func checker(for schema: JSONSchema) -> @Sendable (String) -> String? {
        let minLength = minLength(schema)
        let allowed = allowedValues(schema)
        return { value in
            if let allowed, !allowed.contains(value) {
                return "must be one of " + allowed.map { "\"\($0)\"" }.joined(separator: ", ") + ", got \"\(value)\""
            }
            guard minLength > 0, value.unicodeScalars.count < minLength else { return nil }
            return minLength == 1 ? "must not be empty" : "must be at least \(minLength) characters long, got \(value.unicodeScalars.count)"
        }
    }

    public static func samples(for schema: JSONSchema, position: Int) -> [String] {
        if let allowed = allowedValues(schema), !allowed.isEmpty {
            return (0..<EventFieldSamples.count).map { allowed[(position + $0) % allowed.count] }
        }
        let minLength = minLength(schema)
        func padded(_ text: String) -> String {
            text + String(repeating: "x", count: Swift.max(0, minLength - text.unicodeScalars.count))
        }
        return [padded("field \(position)"), padded("é \"\(position)\"\n"), padded("\(position)")]
    }

    private static func minLength(_ schema: JSONSchema) -> Int {
        if case .integer(let value)? = schema["minLength"] { value } else { 0 }
    }

    private static func allowedValues(_ schema: JSONSchema) -> [String]? {
        guard case .array(let values)? = schema["enum"] else { return nil }
        return values.compactMap { if case .string(let value) = $0 { value } else { nil } }
    }
}

extension Bool: EventFieldValue {
    public static var defaultSchema: JSONSchema { .boolean }
    public static var kind: String { "a boolean" }
    public static func checker(for schema: JSONSchema) -> @Sendable (Bool) -> String? { { _ in nil } }
    public static func samples(for schema: JSONSchema, position: Int) -> [Bool] {
        position.isMultiple(of: 2) ? [true, false] : [false, true]
    }
}

extension Double: EventFieldValue {
    public static var defaultSchema: JSONSchema { .number }
    public static var kind: String { "a number" }

    /// Finite (JSON has no NaN nor infinity), and `minimum` / `maximum`.
    public static func checker(for schema: JSONSchema) -> @Sendable (Double) -> String? {
        let (lower, upper) = bounds(schema)
        return { value in
            guard value.isFinite else { return "must be a finite number, got \(value)" }
            if let lower, value < lower { return "must be \(lower) or more, got \(value)" }
            if let upper, value > upper { return "must be \(upper) or less, got \(value)" }
            return nil
        }
    }

    public static func samples(for schema: JSONSchema, position: Int) -> [Double] {
        let (lower, upper) = bounds(schema)
        let low = lower ?? -1e6, high = upper ?? 1e6
        let middle = low / 2 + high / 2
        return [middle + Double(position % 10) / 8 * (high - middle) / 2, low, high]
    }

    private static func bounds(_ schema: JSONSchema) -> (Double?, Double?) {
        func number(_ json: JSONSchema.JSON?) -> Double? {
            switch json {
            case .integer(let value)?: Double(value)
            case .double(let value)?: value
            default: nil
            }
        }
        return (number(schema["minimum"]), number(schema["maximum"]))
    }
}

extension Optional: EventFieldValue where Wrapped: EventFieldValue {
    /// The wrapped type's schema: the member may also be absent (or null).
    public static var defaultSchema: JSONSchema { Wrapped.defaultSchema }
    public static var kind: String { Wrapped.kind }
    public static func checker(for schema: JSONSchema) -> @Sendable (Wrapped?) -> String? {
        let wrapped = Wrapped.checker(for: schema)
        return { $0.flatMap(wrapped) }
    }
    public static func samples(for schema: JSONSchema, position: Int) -> [Wrapped?] {
        Wrapped.samples(for: schema, position: position).dropLast().map { Optional($0) } + [nil]
    }
    public static var absent: Wrapped?? { .some(nil) }
    public var isAbsent: Bool { self == nil }
}

extension Array: EventFieldValue where Element: EventFieldValue {
    public static var defaultSchema: JSONSchema { .array(of: Element.defaultSchema) }
    public static var kind: String { "an array" }

    /// Each item against `items`: "item 2 must be 0 or more, got -1".
    public static func checker(for schema: JSONSchema) -> @Sendable ([Element]) -> String? {
        let item = Element.checker(for: JSONSchema(json: schema["items"] ?? .object([])))
        return { items in
            for (index, element) in items.enumerated() {
                if let wrong = item(element) { return "item \(index) \(wrong)" }
            }
            return nil
        }
    }

    public static func samples(for schema: JSONSchema, position: Int) -> [[Element]] {
        let items = Element.samples(for: JSONSchema(json: schema["items"] ?? .object([])), position: position)
        return [items, [], Array(items.prefix(1))]
    }
}
