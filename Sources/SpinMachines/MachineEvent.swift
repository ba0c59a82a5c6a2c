import SpinJSON

/// An event of a declarative machine: a JSON object with a string `type` (what the
/// machine's `on` tables are keyed by); every other member is payload that guards and
/// actions read as `event.<path>`.
///
/// JSON: `{"type":"UNLOCK","code":"1234"}`. Decoding fails, naming `type`, when it is
/// missing or not a string.
public struct MachineEvent: Sendable, Hashable, Codable {
    /// Delays of `after` transitions arrive as an event of this type (see `MachineEvent.after`).
    public static let afterType = "xstate.after"
    /// A delayed `raise` arrives as an event of this type when its delay is over (see
    /// `MachineEvent.scheduled(_:)`).
    public static let scheduledType = "xstate.raise"
    /// The prefix of the event types the interpreter makes itself (timers, delayed
    /// raises, completion, start): a client does not send them (a server refuses them),
    /// and no `on` key nor raised event has one (`onDone` and `after` are where a machine
    /// takes them).
    public static let reservedPrefix = "xstate."
    /// The `on` key whose transitions any event may take (XState's wildcard `"*"`), after
    /// the transitions for its own type in the same state.
    public static let wildcardType = "*"
    /// Whether an `on` key that ends in `.*` (a partial descriptor, XState v5's
    /// `"mouse.*"`) takes events of `type`: those whose dot-separated names begin with the
    /// descriptor's (`mouse`, `mouse.click`, `mouse.click.left`), as v5 matches them.
    static func partialDescriptor(_ descriptor: String, matches type: String) -> Bool {
        let prefix = descriptor.dropLast(2)
        return type == prefix || (type.hasPrefix(prefix) && type.dropFirst(prefix.count).hasPrefix("."))
    }

    /// What the event an `onDone` transition sees is called: this, then the compound
    /// state's path (`xstate.done.state.a.b`), as XState names it by the state's id.
    public static let doneStatePrefix = "xstate.done.state."
    /// The event the `always` transitions taken as the machine starts see, as in XState.
    public static let initType = "xstate.init"

    /// The event type: the key of the `on` tables.
    public var type: String {
        get { fields.type }
        set { fields = Fields(type: newValue, payload: fields.payload) }
    }
    /// The members other than `type`.
    public var payload: [String: MachineValue] {
        get { fields.payload }
        set { fields = Fields(type: fields.type, payload: newValue) }
    }

    /// Type and payload behind one reference: a loop copies each event several times
    /// (inbox, batch, transition), and one reference is retained at each copy, not two.
    private var fields: Fields

    private final class Fields: Sendable {
        let type: String
        let payload: [String: MachineValue]

        init(type: String, payload: [String: MachineValue]) {
            self.type = type
            self.payload = payload
        }
    }

    /// An event of `type` with `payload` as its other members (a `type` key in it is ignored).
    public init(type: String, payload: [String: MachineValue] = [:]) {
        fields = Fields(type: type, payload: payload)
    }

    /// Same type and payload.
    public static func == (lhs: MachineEvent, rhs: MachineEvent) -> Bool {
        lhs.fields === rhs.fields || (lhs.type == rhs.type && lhs.payload == rhs.payload)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(type)
        hasher.combine(payload)
    }

    /// The event the timer of an `after` entry emits when `delay` milliseconds have passed
    /// in the state at `state` (its path from the root, dots between levels):
    /// `{"type":"xstate.after","state":"opened","delay":300}`. It is journaled like any
    /// event, and applied only while that state is still active, so a late one is ignored.
    public static func after(state: [String], delay: Int) -> MachineEvent {
        MachineEvent(type: afterType, payload: ["state": .string(state.joined(separator: ".")),
                                                "delay": .number(Double(delay))])
    }

    /// The event a delayed `raise` is sent as when its delay is over:
    /// `{"type":"xstate.raise","key":1,"event":{"type":"TIMEOUT"}}`. It is journaled like
    /// any event; applying it takes the scheduled event out of the state's `scheduled`
    /// and gives the machine the event it carries (what guards and actions see). It
    /// changes nothing unless the state still holds that event under that key.
    public static func scheduled(_ scheduled: MachineScheduledEvent) -> MachineEvent {
        MachineEvent(type: scheduledType, payload: ["key": .number(Double(scheduled.key)), "event": scheduled.event.value])
    }

    /// The whole event as one JSON object, `type` included: what `event.<path>` reads.
    public var value: MachineValue {
        var members = payload
        members["type"] = .string(type)
        return .object(members)
    }

    public init(from decoder: any Decoder) throws {
        guard case .object(var members) = try MachineValue(from: decoder) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "a machine event is a JSON object"))
        }
        guard case .string(let type) = members.removeValue(forKey: "type") else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath + [MachineKey("type")],
                                                    debugDescription: "a machine event needs a string \"type\""))
        }
        self.init(type: type, payload: members)
    }

    public func encode(to encoder: any Encoder) throws {
        var object = encoder.container(keyedBy: MachineKey.self)
        try object.encode(type, forKey: MachineKey("type"))
        for key in payload.keys.sorted() where key != "type" {
            try object.encode(payload[key]!, forKey: MachineKey(key))
        }
    }
}

extension MachineEvent {
    /// An event from JSON text that was taken as an event before (a journal's record, a
    /// history segment's): parsed into a `JSONValue` tree, without a `Decoder`, into what
    /// `init(from:)` makes of it (numbers as doubles, members unordered). About four
    /// times quicker, which is what a replay of thousands of events spends most of its
    /// time on. Nil when the text is not such an event: `JSONDecoder` then says why.
    package static func stored(_ json: ArraySlice<UInt8>) -> MachineEvent? {
        guard let value = try? JSONValue(parsing: Array(json)), let machine = try? MachineValue(value),
              case .object(var members) = machine, case .string(let type) = members.removeValue(forKey: "type") else {
            return nil
        }
        return MachineEvent(type: type, payload: members)
    }
}
