/// One event of a request body, as JSON text a validator has already accepted: what
/// `EventTypes.decode(_:fallback:)` reads without a `Decoder`.
package struct EventJSON {
    /// The whole body.
    package let bytes: [UInt8]
    /// The event's text in `bytes`: all of it, or one element of an array.
    package let range: Range<Int>
    /// Its members' keys (unescaped) and value ranges, when it is an object.
    package let members: ArraySlice<(key: String, value: Range<Int>)>?
    /// Its offset in the array, nil for a lone event: error paths start with `[index]`.
    package let index: Int?

    package init(bytes: [UInt8], range: Range<Int>, members: ArraySlice<(key: String, value: Range<Int>)>?, index: Int?) {
        self.bytes = bytes
        self.range = range
        self.members = members
        self.index = index
    }

    /// The value range of member `key`.
    func value(of key: String) -> Range<Int>? {
        members?.first { $0.key == key }?.value
    }

    /// Where errors are: `[index]` or nothing (made only for an error).
    var codingPath: [any CodingKey] {
        index.map { [EventIndexKey(intValue: $0)] } ?? []
    }
}

/// How a value the direct path does not read is decoded from its JSON text (the server's
/// `JSONDecoder`): a field of a `Codable` type of the user's own, or a value of the wrong
/// kind, so that its error says what the Codable path says. Errors are at the value's own
/// coding path (empty at its top).
package protocol EventJSONFallback: Sendable {
    func decode<Value: Decodable>(_ type: Value.Type, from json: ArraySlice<UInt8>) throws -> Value
}

extension EventTypes where Event: Decodable {
    /// The event in `json`, read through its entry with no `Decoder`: the same event, and
    /// the same `DecodingError`s, as `Decodable` decoding gives (`init(from:)` of a
    /// `TypeTaggedEvent`). What the direct path does not read goes through `fallback`.
    package func decode(_ json: EventJSON, fallback: any EventJSONFallback) throws -> Event {
        guard json.members != nil else {
            // Not an object: the Codable path says what it expected.
            do {
                return try fallback.decode(Event.self, from: json.bytes[json.range])
            } catch let error as DecodingError {
                throw error.prefixed(by: json.codingPath)
            }
        }
        guard let typeRange = json.value(of: "type") else {
            throw EventKey.typeProblem(json.codingPath, "missing: expected \"type\" to be one of \(quotedNames)")
        }
        var reader = EventJSONReader(json.bytes, typeRange)
        guard let name = reader.whole({ $0.string() }) else {
            throw EventKey.typeProblem(json.codingPath, "not a string: expected \"type\" to be one of \(quotedNames)")
        }
        guard let offset = offset(named: name) else {
            throw EventKey.typeProblem(json.codingPath, "unknown type \"\(name)\": expected \"type\" to be one of \(quotedNames)")
        }
        return try entries[offset].decodeJSON(json, fallback)
    }
}

extension EventTypes {
    /// The event's JSON, `{"type":..,fields..}`, as the server's `OrderedJSONEncoder`
    /// writes it through `encode(to:)`; nil when that path would say more: no entry takes
    /// the event apart, a field's schema refuses its value, or a field is of a type the
    /// direct path does not write (then encode it the Codable way, for the bytes or the
    /// error).
    package func json(encoding event: Event) -> [UInt8]? {
        var json: [UInt8] = []
        json.reserveCapacity(64)
        for offset in entries.indices {   // each entry's closure read in place, not the entry copied
            switch entries[offset].encodeJSON(event, &json) {
            case .notThisEntry: continue
            case .written: return json
            case .notWritten: return nil
            }
        }
        return nil
    }
}

/// What an entry made of an event it was asked to write as JSON.
enum EventJSONWriting {
    /// Another entry's case: nothing written.
    case notThisEntry
    case written
    /// Its case, but a field that does not write directly (see `EventTypes.json(encoding:)`).
    case notWritten
}

/// An element of an array of events, on a coding path.
struct EventIndexKey: CodingKey, Sendable {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

extension DecodingError {
    /// The same error with `prefix` before its coding path: what a value decoded alone
    /// says when it is a member of something else. Not `JSONDecoder`'s error about the
    /// text itself (a number no Swift type holds, `2.5` for an `Int`): Foundation reports
    /// it at the document, with an empty path, however deep the number is.
    func prefixed(by prefix: [any CodingKey]) -> DecodingError {
        guard !prefix.isEmpty else { return self }
        if case .dataCorrupted(let context) = self, context.codingPath.isEmpty,
           context.debugDescription == "The given data was not valid JSON." { return self }
        func moved(_ context: Context) -> Context {
            Context(codingPath: prefix + context.codingPath, debugDescription: context.debugDescription,
                    underlyingError: context.underlyingError)
        }
        switch self {
        case .typeMismatch(let type, let context): return .typeMismatch(type, moved(context))
        case .valueNotFound(let type, let context): return .valueNotFound(type, moved(context))
        case .keyNotFound(let key, let context): return .keyNotFound(key, moved(context))
        case .dataCorrupted(let context): return .dataCorrupted(moved(context))
        @unknown default: return self
        }
    }
}
