/// A `TypeTaggedEvent` table that cannot round-trip: what `checkEventTypes` found, naming
/// the Swift type and the entry (`type`) at fault.
public struct EventTypeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The event's Swift type: `Levels.Event`.
    public let eventType: String
    /// The entry's wire `type`: `set`.
    public let type: String
    public let problem: String

    public init(eventType: String, type: String, problem: String) {
        self.eventType = eventType
        self.type = type
        self.problem = problem
    }

    public var description: String { "\(eventType), type \"\(type)\": \(problem)" }
}

extension EventTypes {
    /// The first thing that keeps the table from round-tripping, or nil.
    ///
    /// Checks that no two entries share a `type`, no entry lists a field twice or one
    /// named `type`, and that each entry's sample events (made from its fields' schemas)
    /// are taken apart by that entry, encode (`encode`), decode back (`decode`) and encode
    /// again to the same bytes.
    public func problem(encode: (Event) throws -> [UInt8], decode: ([UInt8]) throws -> Event) -> EventTypeError? {
        func refuse(_ entry: EventType<Event>, _ problem: String) -> EventTypeError {
            EventTypeError(eventType: String(reflecting: Event.self).split(separator: ".").dropFirst().joined(separator: "."),
                           type: entry.name, problem: problem)
        }
        var names: Set<String> = []
        for entry in entries {
            if entry.name.isEmpty { return refuse(entry, "the type's name is empty") }
            guard names.insert(entry.name).inserted else { return refuse(entry, "two entries have this type") }
            var fields: Set<String> = []
            for field in entry.fields {
                if field.name == "type" { return refuse(entry, "a field is named \"type\", the member that names the type") }
                guard fields.insert(field.name).inserted else { return refuse(entry, "field \"\(field.name)\" is listed twice") }
            }
        }
        for (offset, entry) in entries.enumerated() {
            for event in entry.samples() {
                guard let taker = self.offset(encoding: event) else {
                    return refuse(entry, "its extract does not take back the case its embed makes (\(event))")
                }
                guard taker == offset else {
                    return refuse(entry, "its case \(event) is taken apart by the entry of type \"\(entries[taker].name)\" listed before it")
                }
                let first: [UInt8]
                let decoded: Event
                do {
                    first = try encode(event)
                } catch {
                    return refuse(entry, "\(event) does not encode: \(error)")
                }
                let text = String(decoding: first, as: UTF8.self)
                do {
                    decoded = try decode(first)
                } catch {
                    return refuse(entry, "\(event) encodes as \(text), which does not decode: \(error)")
                }
                guard let second = try? encode(decoded), second == first else {
                    return refuse(entry, "\(event) encodes as \(text), which decodes as \(decoded), which does not encode the same")
                }
            }
        }
        return nil
    }
}

extension TypeTaggedEvent {
    /// Throws the first thing that keeps `eventTypes` from round-tripping (see
    /// `EventTypes.problem(encode:decode:)`), with your JSON coders (an encoder that
    /// writes the same bytes for the same value: Foundation's needs `.sortedKeys`):
    ///
    /// ```swift
    /// @Test func levelsEvents_RoundTrip() throws {
    ///     let encoder = JSONEncoder()
    ///     encoder.outputFormatting = .sortedKeys
    ///     try Levels.Event.checkEventTypes(encode: { Array(try encoder.encode($0)) },
    ///                                      decode: { try JSONDecoder().decode(Levels.Event.self, from: Data($0)) })
    /// }
    /// ```
    ///
    /// A server runs it when the Spin is hosted (`SpinHost.checkEvents` does it with the
    /// server's coders, in one call).
    public static func checkEventTypes(encode: (Self) throws -> [UInt8], decode: ([UInt8]) throws -> Self) throws(EventTypeError) {
        if let problem = eventTypes.problem(encode: encode, decode: decode) { throw problem }
    }
}
