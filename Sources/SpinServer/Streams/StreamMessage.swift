import Foundation
import SpinWire

/// The messages of the state and Gear streams (DESIGN.md §3, contract), as JSON text.
package enum StreamMessage {
    /// `{"type":"snapshot","sequence":N,"epoch":..,"state":..}`: first (unless the
    /// client resumes), and what a slow consumer's queued state messages are conflated into.
    package static func snapshot(sequence: UInt64, epoch: String, state: JSONValue) -> JSONValue {
        .object([("type", .string("snapshot")), ("sequence", .number(String(sequence))), ("epoch", .string(epoch)),
                 ("state", state)])
    }

    /// `{"type":"state","sequence":N,"epoch":..,"event":..,"state":..}`: one per applied
    /// event, once it is durable.
    package static func state(_ transition: HostedTransition, epoch: String) -> JSONValue {
        .object([("type", .string("state")), ("sequence", .number(String(transition.sequence))), ("epoch", .string(epoch)),
                 ("event", transition.event), ("state", transition.state)])
    }

    /// `{"type":"ack","id":..,"sequence":N}`: a client's event is applied.
    package static func ack(id: JSONValue, sequence: UInt64) -> JSONValue {
        .object([("type", .string("ack")), ("id", id), ("sequence", .number(String(sequence)))])
    }

    /// `{"type":"error","id":..,"error":{"code":..,"message":..}}`: a client's message
    /// was refused; nothing changed.
    package static func error(id: JSONValue, _ error: APIError) -> JSONValue {
        .object([("type", .string("error")), ("id", id),
                 ("error", .object([("code", .string(error.code)), ("message", .string(error.message))]))])
    }

    /// `{"type":"gear","gear":..,"from":spin,"event":..}`.
    package static func gear(_ traffic: GearTraffic) -> JSONValue {
        .object([("type", .string("gear")), ("gear", .string(traffic.gear)),
                 ("from", traffic.from.map(JSONValue.string) ?? .null), ("event", traffic.event)])
    }

    /// A client message: `{"type":"event","id":"c1","event":{..}}`. Returns the id and
    /// the event's JSON, or the error to answer (with whatever id could be read).
    package static func parseClientEvent(_ text: [UInt8]) -> Result<(id: JSONValue, event: [UInt8]), ClientMessageError> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text), options: []) as? [String: Any] else {
            return .failure(ClientMessageError(id: .null, error: .malformedJSON("a stream message must be a JSON object")))
        }
        let id = jsonID(object["id"])
        // The event is re-serialized below, which would hide a repeated key from
        // `decodeEvents`: the whole message is checked here.
        if let problem = JSONDuplicateKeys.firstProblem(in: text) {
            return .failure(ClientMessageError(id: id, error: .malformedJSON(problem.description)))
        }
        guard let type = object["type"] as? String else {
            return .failure(ClientMessageError(id: id, error: .badRequest("the message has no \"type\"")))
        }
        guard type == "event" else {
            return .failure(ClientMessageError(id: id, error: .badRequest("unknown message type \"\(type)\"; clients send \"event\"")))
        }
        guard let event = object["event"], event is [String: Any] || event is [Any],
              let bytes = try? JSONSerialization.data(withJSONObject: event, options: [.fragmentsAllowed]) else {
            return .failure(ClientMessageError(id: id, error: .badRequest("the message has no \"event\" object")))
        }
        return .success((id, Array(bytes)))
    }

    /// The id as the client sent it when it is a string or a number; null otherwise.
    private static func jsonID(_ value: Any?) -> JSONValue {
        switch value {
        case let string as String: return .string(string)
        case let number as NSNumber where String(describing: type(of: number)) != "__NSCFBoolean":
            // JSONSerialization gives booleans as a boolean NSNumber subclass.
            return .number(number.stringValue)
        default: return .null
        }
    }
}

package struct ClientMessageError: Error, Sendable {
    package let id: JSONValue
    package let error: APIError
}
