import Foundation
import SpinStorage
import SpinWire

/// The payload of a journal record as the server writes it: the event's JSON, preceded
/// by the record's metadata when it has any.
///
/// Metadata (today only `sub`, who sent the event: `HostedTransition.origin`) is framed as
/// an RFC 7464 JSON text sequence: `RS {"sub":"alice"} LF` and then the event's JSON.
/// A JSON text never starts with RS (0x1E), so a payload without metadata, as every
/// journal before it was written, reads as before; and a JSON object written by
/// `JSONValue` never holds a raw LF (strings escape control characters), so the first LF
/// ends the metadata. The storage backends store payloads as opaque bytes and need not
/// know.
package enum JournalPayload {
    static let recordSeparator = UInt8(0x1E)
    static let lineFeed = UInt8(ascii: "\n")

    /// The payload of `transition`: its event's bytes alone when it has no origin.
    package static func encode(_ transition: HostedTransition) -> [UInt8] {
        guard let origin = transition.origin else { return transition.event.bytes }
        var payload: [UInt8] = [recordSeparator]
        JSONValue.object([("sub", .string(origin))]).write(into: &payload)
        payload.append(lineFeed)
        transition.event.write(into: &payload)
        return payload
    }

    /// The event's JSON and the metadata's `sub` of a stored payload. A payload that
    /// starts with RS but has no LF, or whose metadata is not an object, is returned
    /// whole as the event, so that decoding the event fails and names the record.
    package static func decode(_ payload: [UInt8]) -> (origin: String?, event: ArraySlice<UInt8>) {
        guard payload.first == recordSeparator, let end = payload.firstIndex(of: lineFeed),
              let metadata = try? JSONDecoder().decode(Metadata.self, from: Data(payload[1..<end])) else {
            return (nil, payload[...])
        }
        return (metadata.sub, payload[(end + 1)...])
    }

    /// What the metadata holds (keys it does not know are skipped: a later server may
    /// write more).
    private struct Metadata: Decodable {
        var sub: String?
    }

    /// A journal record of `transition`.
    package static func record(_ transition: HostedTransition) -> JournalRecord.Record {
        JournalRecord.Record(sequence: transition.sequence, payload: encode(transition), endsBatch: transition.endsBatch)
    }
}
