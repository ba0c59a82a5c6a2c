import Foundation
import SpinStorage
import SpinJSON

/// The payload of a journal record as the server writes it: the event's JSON, preceded
/// by the record's metadata when it has any.
///
/// Metadata is framed as an RFC 7464 JSON text sequence: `RS {"sub":"alice"} LF` and
/// then the event's JSON. Its members:
/// - `sub`: who sent the event (`HostedTransition.origin`);
/// - `consumed`: what the Spin took of other Spins' Gear outboxes since its previous
///   record, `{"<sender>": <position>}` (`HostedTransition.consumed`);
/// - `v`: the version of the Spin's definition the event was applied under, when not 1
///   (`HostedTransition.version`);
/// - `migrated`: on the record of a migration (its event `{"type":"spin.migrated",..}`),
///   the version the Spin came from (`HostedTransition.migratedFrom`).
///
/// A JSON text never starts with RS (0x1E), so a payload without metadata, as every
/// journal before it was written, reads as before; and a JSON object written by
/// `JSONValue` never holds a raw LF (strings escape control characters), so the first LF
/// ends the metadata. The storage backends store payloads as opaque bytes and need not
/// know.
package enum JournalPayload {
    static let recordSeparator = UInt8(0x1E)
    static let lineFeed = UInt8(ascii: "\n")

    /// The payload of `transition`: its event's bytes alone when it has no metadata.
    package static func encode(_ transition: HostedTransition) -> [UInt8] {
        guard transition.origin != nil || !transition.consumed.isEmpty || transition.version != 1 else {
            return transition.event.bytes
        }
        var members: [(String, JSONValue)] = []
        if transition.version != 1 { members.append(("v", .number(String(transition.version)))) }
        if transition.migratedFrom != 0 { members.append(("migrated", .number(String(transition.migratedFrom)))) }
        if let origin = transition.origin { members.append(("sub", .string(origin))) }
        if !transition.consumed.isEmpty {
            members.append(("consumed", .numbers(transition.consumed)))
        }
        var payload: [UInt8] = [recordSeparator]
        JSONValue.object(members).write(into: &payload)
        payload.append(lineFeed)
        transition.event.write(into: &payload)
        return payload
    }

    /// What a stored payload holds: the event's JSON and the metadata's members. A
    /// payload that starts with RS but has no LF, or whose metadata is not an object, is
    /// returned whole as the event, so that decoding the event fails and names the record.
    package static func decode(_ payload: [UInt8]) -> (origin: String?, event: ArraySlice<UInt8>) {
        let (metadata, event) = read(payload)
        return (metadata.sub, event)
    }

    /// The metadata (empty when there is none) and the event's JSON of a stored payload.
    package static func read(_ payload: [UInt8]) -> (metadata: Metadata, event: ArraySlice<UInt8>) {
        guard payload.first == recordSeparator, let end = payload.firstIndex(of: lineFeed),
              let metadata = try? JSONDecoder().decode(Metadata.self, from: Data(payload[1..<end])) else {
            return (Metadata(), payload[...])
        }
        return (metadata, payload[(end + 1)...])
    }

    /// What the metadata holds (keys it does not know are skipped: a later server may
    /// write more).
    package struct Metadata: Decodable, Equatable {
        package var sub: String?
        package var consumed: [String: UInt64]?
        package var v: Int32?
        package var migrated: Int32?

        package init(sub: String? = nil, consumed: [String: UInt64]? = nil, v: Int32? = nil, migrated: Int32? = nil) {
            self.sub = sub
            self.consumed = consumed
            self.v = v
            self.migrated = migrated
        }
    }

    /// A journal record of `transition`.
    package static func record(_ transition: HostedTransition) -> JournalRecord.Record {
        JournalRecord.Record(sequence: transition.sequence, payload: encode(transition), endsBatch: transition.endsBatch)
    }
}
