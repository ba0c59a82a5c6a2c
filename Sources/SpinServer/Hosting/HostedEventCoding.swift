import Foundation
import SpinCore
import SpinJSON
import SpinMachines

/// How a hosted Spin's events go from and to JSON, chosen once when it is hosted: a
/// `TypeTaggedEvent` straight through its `eventTypes` table (no `Decoder`, no
/// `Encoder`, no copy of the body; a field of a `Codable` type of the user's own alone
/// goes through `JSONDecoder`), any other event through `JSONDecoder` and
/// `OrderedJSONEncoder`. Both give the same events, bytes and errors (for a
/// `TypeTaggedEvent`, the table is what its `Codable` conformance reads and writes).
struct HostedEventCoding<Event: Codable & Sendable>: Sendable {
    /// The events of a body `JSONValidator` accepted, an object or an array (not a scalar);
    /// throws the `DecodingError` of the first event that does not decode.
    let decode: @Sendable (_ document: JSONValidator.Document, _ json: [UInt8]) throws -> [Event]
    /// The event's JSON text, as `OrderedJSONEncoder` writes it.
    let encode: @Sendable (Event) throws -> [UInt8]

    /// The coding for `Event`: its table's when it is a `TypeTaggedEvent` (the one dynamic
    /// check, made here).
    init() {
        if let tagged = Event.self as? any (TypeTaggedEvent & Sendable).Type, let coding = Self.tagged(tagged) {
            self = coding
        } else {
            self.init(decode: { document, json in
                switch document.kind {
                case .array: try JSONDecoder().decode([Event].self, from: Data(json))
                case .object, .scalar: [try JSONDecoder().decode(Event.self, from: Data(json))]
                }
            }, encode: { try OrderedJSONEncoder().encode($0) })
        }
    }

    private init(decode: @escaping @Sendable (JSONValidator.Document, [UInt8]) throws -> [Event],
                 encode: @escaping @Sendable (Event) throws -> [UInt8]) {
        self.decode = decode
        self.encode = encode
    }

    /// The table's coding, typed by `Event` (which `tagged` is).
    private static func tagged(_ tagged: any (TypeTaggedEvent & Sendable).Type) -> HostedEventCoding? {
        func coding<Tagged: TypeTaggedEvent & Sendable>(_: Tagged.Type) -> Any {
            let table = Tagged.eventTypes   // built once (a raw-value enum's is made on each access)
            let fallback: any EventJSONFallback = FoundationEventFallback()
            return HostedEventCoding<Tagged>(decode: { document, json in
                guard document.kind == .array else {
                    let event = EventJSON(bytes: json, range: json.indices, members: document.members[...], index: nil)
                    return [try table.decode(event, fallback: fallback)]
                }
                var events: [Tagged] = []
                events.reserveCapacity(document.elements.count)
                for (index, element) in document.elements.enumerated() {
                    let members = element.kind == .object ? document.members[element.members] : nil
                    let event = EventJSON(bytes: json, range: element.value, members: members, index: index)
                    events.append(try table.decode(event, fallback: fallback))
                }
                return events
            }, encode: { event in
                try table.json(encoding: event) ?? OrderedJSONEncoder().encode(event)
            })
        }
        return coding(tagged) as? HostedEventCoding
    }
}

/// `JSONDecoder`, for what the table's direct path leaves to the Codable one.
private struct FoundationEventFallback: EventJSONFallback {
    func decode<Value: Decodable>(_ type: Value.Type, from json: ArraySlice<UInt8>) throws -> Value {
        try JSONDecoder().decode(type, from: Data(json))
    }
}

/// An event type with a quicker way from JSON text it wrote itself (a journal's records,
/// a history segment's) than a `Decoder`: recovery and history replay through it. Nil
/// from `decodeStored` sends the text through `JSONDecoder`, whose error names what is
/// wrong.
protocol StoredEventDecoding {
    static func decodeStored(_ json: ArraySlice<UInt8>) -> Self?
}

extension MachineEvent: StoredEventDecoding {
    static func decodeStored(_ json: ArraySlice<UInt8>) -> MachineEvent? { stored(json) }
}
