import Foundation
import SpinWire

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

    /// Decodes one message. Throws `SpinClientError.undecodable` when it is not the
    /// protocol's JSON or its state is not a `State`.
    static func decode(_ bytes: [UInt8]) throws(SpinClientError) -> StreamMessage {
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
        guard let sequence = head.sequence, let stateJSON = member("state") else {
            throw .undecodable("\(head.type) message without sequence or state: \(text())")
        }
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
