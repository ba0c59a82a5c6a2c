import Foundation

/// The counter's state, as spin-server's counter example encodes it: `{"value":n}`.
struct CounterState: Codable, Sendable {
    var value: Int
}

/// A counter event, as spin-server's counter example encodes it: `{"type":"increase"}`,
/// `{"type":"decrease"}` or `{"type":"reset"}`.
enum CounterEvent: String, Codable, Sendable {
    case increase, decrease, reset

    private enum CodingKeys: String, CodingKey { case type }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        guard let event = CounterEvent(rawValue: type) else {
            throw DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown counter event \"\(type)\"")
        }
        self = event
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rawValue, forKey: .type)
    }

    /// The counter's reducer (spin-server's `Counter.reduce`, saturating).
    func applied(to state: CounterState) -> CounterState {
        switch self {
        case .increase: CounterState(value: state.value == .max ? .max : state.value + 1)
        case .decrease: CounterState(value: state.value == .min ? .min : state.value - 1)
        case .reset: CounterState(value: 0)
        }
    }
}

/// One event or a JSON array of events: the body of `POST /v1/spins/counter/events`
/// and the `event` of a stream's client message.
struct EventBatch: Decodable, Sendable {
    var events: [CounterEvent]

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let events = try? container.decode([CounterEvent].self) {
            self.events = events
        } else {
            self.events = [try container.decode(CounterEvent.self)]
        }
    }
}

/// The counter Spin: an actor holding the state and the sequence, fanning every applied
/// event out to the subscribers' `AsyncStream`s.
///
/// Each state message is encoded once and the same `String` is yielded to every
/// subscriber. A subscriber keeps at most `streamQueue` messages (the newest): one that
/// reads more slowly loses the oldest, as a bounded queue must.
actor CounterSpin {
    private var state = CounterState(value: 0)
    private var sequence: UInt64 = 0
    private var subscribers: [Int: AsyncStream<String>.Continuation] = [:]
    private var nextSubscriber = 0
    private let encoder = JSONEncoder()
    private let epoch = UUID().uuidString
    private let streamQueue: Int

    init(streamQueue: Int) {
        self.streamQueue = streamQueue
    }

    /// Applies `events` in order and returns the sequence of the last one.
    func apply(_ events: [CounterEvent]) -> UInt64 {
        for event in events {
            state = event.applied(to: state)
            sequence += 1
            guard !subscribers.isEmpty else { continue }
            let message = encode(StateMessage(sequence: sequence, epoch: epoch, event: event, state: state))
            for continuation in subscribers.values {
                continuation.yield(message)
            }
        }
        return sequence
    }

    /// A new subscriber: its snapshot message and the stream of the state messages
    /// after it (nothing applied in between is missed: both are taken on the actor).
    func subscribe() -> (id: Int, snapshot: String, messages: AsyncStream<String>) {
        let (messages, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(streamQueue))
        let id = nextSubscriber
        nextSubscriber += 1
        subscribers[id] = continuation
        let snapshot = encode(SnapshotMessage(sequence: sequence, epoch: epoch, state: state))
        return (id, snapshot, messages)
    }

    /// Ends a subscriber's stream.
    func unsubscribe(_ id: Int) {
        subscribers.removeValue(forKey: id)?.finish()
    }

    /// An acknowledgement message: `{"type":"ack","id":..,"sequence":N}`.
    func ack(id: String, sequence: UInt64) -> String {
        encode(AckMessage(id: id, sequence: sequence))
    }

    private func encode(_ message: some Encodable) -> String {
        // Encoding these types cannot fail.
        String(decoding: (try? encoder.encode(message)) ?? Data(), as: UTF8.self)
    }
}

/// `{"type":"snapshot","sequence":N,"epoch":..,"state":..}`.
struct SnapshotMessage: Encodable {
    var type = "snapshot"
    var sequence: UInt64
    var epoch: String
    var state: CounterState
}

/// `{"type":"state","sequence":N,"epoch":..,"event":..,"state":..}`.
struct StateMessage: Encodable {
    var type = "state"
    var sequence: UInt64
    var epoch: String
    var event: CounterEvent
    var state: CounterState
}

/// `{"type":"ack","id":..,"sequence":N}`.
struct AckMessage: Encodable {
    var type = "ack"
    var id: String
    var sequence: UInt64
}

/// `{"type":"error","id":..,"error":{"code":..,"message":..}}`.
struct ErrorMessage: Encodable {
    struct Detail: Encodable {
        var code: String
        var message: String
    }

    var type = "error"
    var id: String?
    var error: Detail
}

/// A client's stream message: `{"type":"event","id":"c1","event":{..}}`.
struct ClientMessage: Decodable {
    var type: String
    var id: String?
    var event: EventBatch
}
