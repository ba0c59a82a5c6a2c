import Foundation
import SpinWire
import SpinJSON

/// A text message of the state stream, decoded: DESIGN's stream protocol, server to client.
enum StreamMessage<State: Decodable> {
    /// A snapshot or a state message.
    case update(StateUpdate<State>)
    /// Anything else (acks and errors for events the client sent, types added later).
    case other(type: String)

    private struct Head: Decodable {
        var type: String
        var sequence: UInt64?
        var epoch: String?
    }

    /// Decodes one message of a stream without deltas.
    static func decode(_ bytes: [UInt8]) throws(SpinClientError) -> StreamMessage {
        var none: StreamReplica?
        return try decode(bytes, replica: &none)
    }

    /// Decodes one message. Throws `SpinClientError.undecodable` when it is not the
    /// protocol's JSON or its state is not a `State`.
    ///
    /// `replica`: for a stream with deltas, the state patches apply to: a whole state resets
    /// it, a `"patch"` is applied to it (`.connectionFailed` when it does not apply: the
    /// caller reconnects). Nil for a stream without deltas.
    static func decode(_ bytes: [UInt8], replica: inout StreamReplica?) throws(SpinClientError) -> StreamMessage {
        let text = { String(decoding: bytes.prefix(256), as: UTF8.self) }
        guard case .success(let document) = JSONValidator.validate(bytes), document.kind == .object,
              let head = try? JSONDecoder().decode(Head.self, from: Data(bytes)) else {
            throw .undecodable("stream message \(text())")
        }
        let kind: StateUpdate<State>.Kind
        switch head.type {
        case "snapshot": kind = .snapshot
        case "state": kind = .state
        default: return .other(type: head.type)
        }
        func member(_ key: String) -> Data? {
            document.members.first { $0.key == key }.map { Data(bytes[$0.value]) }
        }
        let stateJSON: Data
        if let sequence = head.sequence, kind == .state, let patch = member("patch"), replica != nil {
            stateJSON = Data(try replica!.apply(patch: Array(patch), sequence: sequence))
        } else if let sequence = head.sequence, let whole = member("state") {
            try replica?.reset(sequence: sequence, state: Array(whole))
            stateJSON = whole
        } else {
            throw .undecodable("\(head.type) message without sequence or state: \(text())")
        }
        guard let sequence = head.sequence else { throw .undecodable("no sequence: \(text())") }
        let state: State
        do {
            state = try JSONDecoder().decode(State.self, from: stateJSON)
        } catch {
            throw .undecodable("the state of message \(sequence) as \(State.self): \(error)")
        }
        return .update(StateUpdate(kind: kind, sequence: sequence, epoch: head.epoch ?? "", state: state,
                                   event: kind == .state ? member("event") : nil))
    }
}

/// The server's answer to an event the client sent over the stream.
enum StreamReply: Hashable {
    /// `{"type":"ack","id":..,"sequence":N}`: applied and durable at sequence N.
    case ack(sequence: UInt64)
    /// `{"type":"error","id":..,"error":{"code":..,"message":..}}`: refused.
    case refused(code: String, message: String)

    private struct Head: Decodable {
        struct Detail: Decodable {
            var code: String
            var message: String
        }
        var type: String
        var id: String?
        var sequence: UInt64?
        var error: Detail?
    }

    /// The reply in `bytes` to the client's message `id`; nil when `bytes` is another message.
    init?(to id: String, in bytes: [UInt8]) {
        guard let head = try? JSONDecoder().decode(Head.self, from: Data(bytes)), head.id == id else { return nil }
        switch (head.type, head.sequence, head.error) {
        case ("ack", let sequence?, _): self = .ack(sequence: sequence)
        case ("error", _, let error?): self = .refused(code: error.code, message: error.message)
        default: return nil
        }
    }

    /// `{"type":"event","id":ID,"event":EVENT}`, the event as its `Encodable` writes it.
    static func eventMessage(id: String, event: some Encodable) throws(SpinClientError) -> String {
        let encoded: Data
        do {
            encoded = try JSONEncoder().encode(event)
        } catch {
            throw .undecodable("the event does not encode as JSON: \(error)")
        }
        var text: [UInt8] = Array(#"{"type":"event","id":"#.utf8)
        JSONValue.writeString(id, into: &text)
        text += Array(#","event":"#.utf8) + Array(encoded) + [UInt8(ascii: "}")]
        return String(decoding: text, as: UTF8.self)
    }
}
