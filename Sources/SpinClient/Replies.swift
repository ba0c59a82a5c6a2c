import Foundation
import SpinJSON

/// The answer to a POST without `wait`: the events were applied and are durable.
public struct Accepted: Decodable, Sendable, Hashable {
    /// How many events of the POST were accepted (all of them: a batch is all or none).
    public var accepted: Int
    /// How many of them the Spin ignored (no transition from its state: not journaled,
    /// no sequence); 0 when the server sent no `ignored` field.
    public var ignored: Int
    /// The Spin's sequence after the last of them.
    public var sequence: UInt64

    /// An answer with these values (for tests and comparisons).
    public init(accepted: Int, ignored: Int = 0, sequence: UInt64) {
        self.accepted = accepted
        self.ignored = ignored
        self.sequence = sequence
    }

    private enum CodingKeys: String, CodingKey { case accepted, ignored, sequence }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accepted = try container.decode(Int.self, forKey: .accepted)
        ignored = try container.decodeIfPresent(Int.self, forKey: .ignored) ?? 0
        sequence = try container.decode(UInt64.self, forKey: .sequence)
    }
}

/// The answer to a POST that waits (`?wait=true`): the state once the events were applied.
public struct Applied<State: Decodable>: Decodable {
    /// The Spin's sequence after the last event.
    public var sequence: UInt64
    /// The state right after the last event was applied.
    public var state: State
    /// One reply per posted event, in order, when the server sends them (newer servers
    /// do; older ones answer without `replies`, and this is nil).
    public var replies: [PostedEventReply]?
}

extension Applied: Sendable where State: Sendable {}
extension Applied: Equatable where State: Equatable {}

/// What became of one posted event. (Not `EventReply`: that is SpinCore's reply of a
/// loop, and a program importing both modules must be able to name each.)
public struct PostedEventReply: Decodable, Sendable, Hashable {
    /// False when the Spin ignored the event: it was not journaled and did not advance
    /// the sequence.
    public var applied: Bool
    /// Why an event was not applied (`no_transition`); nil when it was.
    public var reason: String?

    /// A reply with these values (for tests and comparisons).
    public init(applied: Bool, reason: String? = nil) {
        self.applied = applied
        self.reason = reason
    }
}

/// Whether a hosted Spin runs or is held by its runaway guard. Values the client does not
/// know are kept as they are.
public struct SpinStatus: RawRepresentable, Decodable, Sendable, Hashable, CustomStringConvertible {
    /// The status as the server writes it.
    public var rawValue: String
    /// The status named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Decodes the JSON string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// The Spin applies events.
    public static let running = SpinStatus(rawValue: "running")
    /// The runaway guard stopped it: events get 409 until it is resumed.
    public static let suspended = SpinStatus(rawValue: "suspended")
    /// Made at run time and idle: listed without its state; any request wakes it.
    public static let asleep = SpinStatus(rawValue: "asleep")
    /// The raw value.
    public var description: String { rawValue }
}

/// A Spin as `GET /v1/spins/{name}` shows it.
public struct SpinSnapshot<State: Decodable>: Decodable {
    /// The Spin's name.
    public var name: String
    /// The number of events the Spin has applied.
    public var sequence: UInt64
    /// Running or suspended.
    public var status: SpinStatus
    /// Its current state.
    public var state: State
}

/// What `SpinClient.create(_:kind:)` and `delete(_:)` answered.
public struct SpinMade: Decodable, Sendable, Hashable {
    /// What happened.
    public enum Outcome: String, Sendable, Hashable {
        /// Made now (201).
        case created
        /// It existed with that kind already (200).
        case existed
        /// Deleted, with its history.
        case deleted
    }

    /// The Spin's name.
    public var name: String
    /// Its configured kind.
    public var kind: String
    /// Its sequence: 0 when made, the last one when deleted.
    public var sequence: UInt64
    /// `running`, or `deleted`.
    public var status: SpinStatus
    /// What happened (set by the client from the answer's status).
    public var outcome: Outcome = .created

    private enum CodingKeys: String, CodingKey { case name, kind, sequence, status }
}

/// One page of `GET /v1/spins`: Spins in name order, and where the next page starts.
public struct SpinPage: Decodable, Sendable, Hashable {
    /// A Spin as the list shows it (the state is not in the list: ask `state(of:as:)`).
    public struct Entry: Decodable, Sendable, Hashable {
        /// The Spin's name.
        public var name: String
        /// What made it: `machine`, `swift` or a registered kind.
        public var kind: String
        /// `running`, `suspended`, `done`, `unrecoverable`, or `remote` (another cluster
        /// node runs it: `node`).
        public var status: SpinStatus
        /// The number of events it applied; nil for a Spin another node runs.
        public var sequence: UInt64?
        /// The node that runs it, for a `remote` Spin.
        public var node: String?
    }

    /// The Spins of this page.
    public var spins: [Entry]
    /// The name to list `after` for the next page; nil on the last page.
    public var next: String?
}

extension SpinSnapshot: Sendable where State: Sendable {}

/// A Spin's state right after one sequence (`SpinClient.state(of:at:as:)`).
public struct SpinStateAt<State: Decodable>: Decodable {
    /// The Spin's name.
    public var name: String
    /// The sequence asked for.
    public var sequence: UInt64
    /// Its state right after that sequence.
    public var state: State
}

extension SpinStateAt: Sendable where State: Sendable {}

/// A Spin after `SpinClient.restore(_:at:as:)`.
public struct SpinRestored<State: Decodable>: Decodable {
    /// The Spin's name.
    public var name: String
    /// The restore's own sequence (its event `{"type":"spin.restored","at":N}`).
    public var sequence: UInt64
    /// The sequence whose state was put back.
    public var at: UInt64
    /// That state, the Spin's now.
    public var state: State
}

extension SpinRestored: Sendable where State: Sendable {}

/// The Spin `SpinClient.fork(_:at:as:)` made.
public struct SpinForked: Decodable, Sendable, Hashable {
    /// Its name.
    public var name: String
    /// Its kind, the one of the Spin it came from.
    public var kind: String
    /// Its sequence: 1, the fork's own (`{"type":"spin.forked","from":..,"at":N}`).
    public var sequence: UInt64
    /// The Spin it came from.
    public var from: String
    /// The sequence of that Spin whose state it began in.
    public var at: UInt64
}

/// A page of a Spin's history (`SpinClient.history(of:from:limit:as:)`).
public struct HistoryPage<State: Decodable> {
    /// One applied event.
    public struct Entry {
        /// Its sequence.
        public var sequence: UInt64
        /// The event's JSON, as the server sent it (decode it with `event(as:)`: a Spin's
        /// history also holds the server's own events, such as `{"type":"spin.migrated",..}`).
        public var event: Data
        /// The state right after it.
        public var state: State
        /// Who sent it (a token's subject, a JWT's `sub`); nil for events of feedbacks,
        /// Gears and timers.
        public var sub: String?
        /// When it was applied; nil for events journaled before the server kept times.
        public var at: Date?

        /// The event decoded as `Event`.
        public func event<Event: Decodable>(as eventType: Event.Type) throws -> Event {
            try JSONDecoder().decode(Event.self, from: event)
        }
    }

    /// Its entries, oldest first.
    public var entries: [Entry]
    /// The `from` of the next page; nil when this one reaches the Spin's newest sequence.
    public var next: UInt64?

    /// The page the server answered: each entry's fields decoded, its event kept as the
    /// bytes it came as (the entries' objects found as `StreamMessage` finds a message's
    /// members). Throws `SpinClientError.undecodable` naming what does not fit.
    static func decode(_ bytes: [UInt8]) throws(SpinClientError) -> HistoryPage {
        let text = { String(decoding: bytes.prefix(256), as: UTF8.self) }
        guard case .success(let page) = JSONValidator.validate(bytes), page.kind == .object,
              let listed = page.members.first(where: { $0.key == "entries" })?.value else {
            throw .undecodable("a history page: \(text())")
        }
        let list = Array(bytes[listed])
        guard case .success(let array) = JSONValidator.validate(list), array.kind == .array else {
            throw .undecodable("a history page's entries: \(text())")
        }
        var entries: [Entry] = []
        entries.reserveCapacity(array.elements.count)
        for element in array.elements {
            guard element.kind == .object, let event = array.members[element.members].first(where: { $0.key == "event" }) else {
                throw .undecodable("a history entry without its event: \(text())")
            }
            let fields: Fields
            do {
                fields = try JSONDecoder().decode(Fields.self, from: Data(list[element.value]))
            } catch {
                throw .undecodable("a history entry with its state as \(State.self): \(error)")
            }
            entries.append(Entry(sequence: fields.sequence, event: Data(list[event.value]), state: fields.state,
                                 sub: fields.sub, at: fields.at))
        }
        let next: UInt64?
        do {
            next = try JSONDecoder().decode(Next.self, from: Data(bytes)).next
        } catch {
            throw .undecodable("a history page's next: \(error)")
        }
        return HistoryPage(entries: entries, next: next)
    }

    /// An entry's members but its event.
    private struct Fields: Decodable {
        var sequence: UInt64
        var state: State
        var sub: String?
        var at: Date?

        private enum CodingKeys: String, CodingKey { case sequence, state, sub, at }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            sequence = try container.decode(UInt64.self, forKey: .sequence)
            state = try container.decode(State.self, forKey: .state)
            sub = try container.decodeIfPresent(String.self, forKey: .sub)
            if let text = try container.decodeIfPresent(String.self, forKey: .at) {
                guard let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) else {
                    throw DecodingError.dataCorruptedError(forKey: .at, in: container, debugDescription: "not an RFC 3339 time: \(text)")
                }
                at = date
            }
        }
    }

    private struct Next: Decodable {
        var next: UInt64?
    }
}

extension HistoryPage: Sendable where State: Sendable {}
extension HistoryPage.Entry: Sendable where State: Sendable {}
