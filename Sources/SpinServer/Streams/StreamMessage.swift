import Foundation
import SpinWire
import SpinJSON

/// The messages of the state and Gear streams (docs/PROTOCOL.md: a contract with clients), as JSON text.
package enum StreamMessage {
    /// `{"type":"snapshot","sequence":N,"epoch":..,"state":..}`: first (unless the
    /// client resumes), and what a slow consumer's queued state messages are conflated into.
    package static func snapshot(sequence: UInt64, epoch: String, state: JSONValue) -> [UInt8] {
        var text = header("snapshot", sequence: sequence, epoch: epoch, extra: 16)
        text += #","state":"#.utf8
        state.write(into: &text)
        text.append(UInt8(ascii: "}"))
        return text
    }

    /// `{"type":"state","sequence":N,"epoch":..,"event":..,"state":..}`: one per applied
    /// event, once it is durable; `"sub":..` after the event names who sent it when the
    /// request that did was authenticated with a subject (`HostedTransition.origin`).
    /// Written straight into bytes: a feed makes it once per event for all of its streams.
    package static func state(_ transition: HostedTransition, epoch: String) -> [UInt8] {
        var text = header("state", sequence: transition.sequence, epoch: epoch, extra: 32)
        event(of: transition, into: &text)
        text += #","state":"#.utf8
        transition.state.write(into: &text)
        text.append(UInt8(ascii: "}"))
        return text
    }

    /// `{"type":"state","sequence":N,"epoch":..,"event":..,"patch":[..]}`: a state message
    /// of a stream with `?delta=json-patch`, carrying the RFC 6902 patch (JSON text) from
    /// the previous message's state instead of the state.
    package static func patch(_ transition: HostedTransition, epoch: String, patch: [UInt8]) -> [UInt8] {
        var text = header("state", sequence: transition.sequence, epoch: epoch, extra: 32 + patch.count)
        event(of: transition, into: &text)
        text += #","patch":"#.utf8
        text += patch
        text.append(UInt8(ascii: "}"))
        return text
    }

    /// `,"event":..` and, when the event's sender is known, `,"sub":..`.
    private static func event(of transition: HostedTransition, into text: inout [UInt8]) {
        text += #","event":"#.utf8
        transition.event.write(into: &text)
        if let origin = transition.origin {
            text += #","sub":"#.utf8
            JSONValue.writeString(origin, into: &text)
        }
    }

    /// `{"type":TYPE,"sequence":N,"epoch":E`, with room for `extra` bytes more.
    private static func header(_ type: StaticString, sequence: UInt64, epoch: String, extra: Int) -> [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(64 + epoch.utf8.count + extra)
        text += #"{"type":""#.utf8
        text += UnsafeBufferPointer(start: type.utf8Start, count: type.utf8CodeUnitCount)
        text += #"","sequence":"#.utf8
        text += String(sequence).utf8
        text += #","epoch":"#.utf8
        JSONValue.writeString(epoch, into: &text)
        return text
    }

    /// `{"type":"ack","id":..,"sequence":N}`: a client's event is applied.
    package static func ack(id: JSONValue, sequence: UInt64) -> JSONValue {
        ack(id: id, AppliedEvent(sequence: sequence))
    }

    /// The ack of a client's event or array of events: `{"type":"ack","id":..,
    /// "sequence":N}` when every event applied. An event the Spin ignored (no transition
    /// from its state) adds `"applied":false,"reason":"no_transition"` (`"done"` when the
    /// Spin is a machine that completed; N is then the
    /// unchanged sequence); an array of events of which some were ignored adds
    /// `"replies":[..]`, one per event, as `POST .../events?wait=true` answers.
    package static func ack(id: JSONValue, _ applied: AppliedEvent) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = [("type", .string("ack")), ("id", id),
                                                         ("sequence", .number(String(applied.sequence)))]
        if !applied.ignored.isEmpty {
            if applied.count == 1, case .object(let reply) = applied.reply(ignoredAt: 0) {
                fields += reply
            } else {
                fields.append(("replies", applied.replies))
            }
        }
        return .object(fields)
    }

    /// `{"type":"error","id":..,"error":{"code":..,"message":..}}`: a client's message
    /// was refused; nothing changed.
    package static func error(id: JSONValue, _ error: APIError) -> JSONValue {
        .object([("type", .string("error")), ("id", id),
                 ("error", .object([("code", .string(error.code)), ("message", .string(error.message))]))])
    }

    /// `{"type":"gear","gear":..,"from":spin,"event":..}`, with `"position"` (the event's
    /// place in the sender's outbox) when the server routes the Gear and
    /// `"redelivered":true` when it is sent again; or, for a catching Spin that could not
    /// take it (its Gear event type does not decode it),
    /// `{"type":"skipped","gear":..,"from":..,"position":..,"spin":..,"reason":..,"event":..}`.
    package static func gear(_ traffic: GearTraffic) -> JSONValue {
        var members: [(String, JSONValue)] = [("type", .string(traffic.skipped == nil ? "gear" : "skipped")),
                                              ("gear", .string(traffic.gear)),
                                              ("from", traffic.from.map(JSONValue.string) ?? .null)]
        if let position = traffic.position { members.append(("position", .number(String(position)))) }
        if traffic.redelivered { members.append(("redelivered", .bool(true))) }
        if let skipped = traffic.skipped {
            members.append(("spin", .string(skipped.spin)))
            members.append(("reason", .string(skipped.reason)))
        }
        members.append(("event", traffic.event))
        return .object(members)
    }

    /// What a client may send on a stream.
    package enum ClientMessage: Sendable, Equatable {
        /// `{"type":"event","id":"c1","event":{..}}`: the event's JSON as the client sent it.
        case event(id: JSONValue, event: [UInt8])
        /// `{"type":"refresh","id"?:..,"token":".."}`: new credentials for the stream.
        case refresh(id: JSONValue, token: String)
    }

    /// `{"type":"refreshed","exp":N}` (with the client's `id` when it sent one): the
    /// stream now runs on the new credentials, until `exp` (seconds since 1970; null:
    /// they do not expire).
    package static func refreshed(id: JSONValue, expiresAt: Double?) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = [("type", .string("refreshed"))]
        if id != .null { fields.append(("id", id)) }
        let exp: JSONValue = expiresAt.flatMap { Int64(exactly: $0.rounded(.down)) }.map { .number(String($0)) } ?? .null
        fields.append(("exp", exp))
        return .object(fields)
    }

    /// A client message, or the error to answer (with whatever id could be read). One
    /// pass of `JSONValidator` reads it all.
    package static func parseClientMessage(_ text: [UInt8]) -> Result<ClientMessage, ClientMessageError> {
        let document: JSONValidator.Document
        switch JSONValidator.validate(text) {
        case .success(let valid) where valid.kind == .object: document = valid
        case .success:
            return .failure(ClientMessageError(id: .null, error: .malformedJSON("a stream message must be a JSON object")))
        case .failure(let problem):
            // A repeated key is still readable by a lenient parser: name the id if it can.
            let object = (try? JSONSerialization.jsonObject(with: Data(text))) as? [String: Any]
            let id = object.map { jsonID(any: $0["id"]) } ?? .null
            return .failure(ClientMessageError(id: id, error: .malformedJSON(problem.description)))
        }
        func member(_ key: String) -> ArraySlice<UInt8>? {
            document.members.first { $0.key == key }.map { text[$0.value] }
        }
        let id = member("id").map(jsonID) ?? .null
        guard let type = member("type"), type.first == UInt8(ascii: "\"") else {
            return .failure(ClientMessageError(id: id, error: .badRequest("the message has no \"type\"")))
        }
        // The type unescaped (`"\u0065vent"` is "event"); the usual spelling needs no decoder.
        let name = type.elementsEqual(#""event""#.utf8) ? "event" : decodedString(type) ?? ""
        switch name {
        case "event":
            guard let event = member("event"), event.first == UInt8(ascii: "{") || event.first == UInt8(ascii: "[") else {
                return .failure(ClientMessageError(id: id, error: .badRequest("the message has no \"event\" object")))
            }
            return .success(.event(id: id, event: Array(event)))
        case "refresh":
            guard let value = member("token"), value.first == UInt8(ascii: "\""), let token = decodedString(value),
                  !token.isEmpty else {
                return .failure(ClientMessageError(id: id, error: .badRequest("the refresh message has no \"token\" string")))
            }
            return .success(.refresh(id: id, token: token))
        default:
            return .failure(ClientMessageError(id: id, error: .badRequest(
                "unknown message type \"\(name)\"; clients send \"event\" or \"refresh\"")))
        }
    }

    /// The id as the client sent it when it is a string or a number; null otherwise.
    private static func jsonID(any value: Any?) -> JSONValue {
        switch value {
        case let string as String: return .string(string)
        case let number as NSNumber where String(describing: type(of: number)) != "__NSCFBoolean":
            // JSONSerialization gives booleans as a boolean NSNumber subclass.
            return .number(number.stringValue)
        default: return .null
        }
    }

    /// The text of a JSON string the validator accepted, unescaped by Foundation.
    private static func decodedString(_ json: ArraySlice<UInt8>) -> String? {
        try? JSONDecoder().decode(String.self, from: Data(json))
    }

    /// The id as the client sent it when it is a string or a number; null otherwise.
    private static func jsonID(_ value: ArraySlice<UInt8>) -> JSONValue {
        switch value.first ?? 0 {
        case UInt8(ascii: "\""):
            return decodedString(value).map(JSONValue.string) ?? .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(String(decoding: value, as: UTF8.self))
        default:
            return .null
        }
    }
}

package struct ClientMessageError: Error, Sendable {
    package let id: JSONValue
    package let error: APIError
}
