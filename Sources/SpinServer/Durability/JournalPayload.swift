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
///   the version the Spin came from (`HostedTransition.migratedFrom`);
/// - `restored` (true) and `state`: on the record of a replacement (a restore, or a fork's
///   first transition, `HostedTransition.replacement`), the state it put in place, which no
///   event of the Spin's own leads to: recovery takes it from here;
/// - `t`: when the event was applied, in milliseconds since 1970 (`HostedTransition.time`),
///   written only when it differs from the time of the record before it in the same
///   journal (`record(_:after:)`): a record without `t` was applied in the same
///   millisecond as the one before. A busy Spin's records mostly carry none; a record
///   that is the first of its journal (after a start, a compaction, a failure) always
///   carries it.
///
/// A JSON text never starts with RS (0x1E), so a payload without metadata, as every
/// journal before it was written, reads as before; and a JSON object written by
/// `JSONValue` never holds a raw LF (strings escape control characters), so the first LF
/// ends the metadata. The storage backends store payloads as opaque bytes and need not
/// know.
package enum JournalPayload {
    static let recordSeparator = UInt8(0x1E)
    static let lineFeed = UInt8(ascii: "\n")

    /// The payload of `transition`, journaled after a record of time `previous` (0:
    /// none, or not known): its event's bytes alone when it has no metadata.
    package static func encode(_ transition: HostedTransition, after previous: Int64 = 0) -> [UInt8] {
        let time = transition.time != previous ? transition.time : 0
        guard transition.origin != nil || !transition.consumed.isEmpty || transition.version != 1
                || transition.replacement != nil else {
            guard time != 0 else { return transition.event.bytes }
            // The common case, without building an object: `RS {"t":N} LF`.
            var payload: [UInt8] = [recordSeparator]
            if case .raw(let bytes) = transition.event { payload.reserveCapacity(24 + bytes.count) }
            payload += timePrefix
            payload += String(time).utf8
            payload.append(UInt8(ascii: "}"))
            payload.append(lineFeed)
            transition.event.write(into: &payload)
            return payload
        }
        var members: [(String, JSONValue)] = []
        if time != 0 { members.append(("t", .number(String(time)))) }
        if transition.version != 1 { members.append(("v", .number(String(transition.version)))) }
        if transition.migratedFrom != 0 { members.append(("migrated", .number(String(transition.migratedFrom)))) }
        if let origin = transition.origin { members.append(("sub", .string(origin))) }
        if !transition.consumed.isEmpty {
            members.append(("consumed", .numbers(transition.consumed)))
        }
        if transition.replacement != nil {
            members.append(("restored", .bool(true)))
            members.append(("state", transition.state))
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
        guard payload.first == recordSeparator, let end = payload.firstIndex(of: lineFeed) else {
            return (Metadata(), payload[...])
        }
        if let time = time(alone: payload[1..<end]) { return (Metadata(t: time), payload[(end + 1)...]) }
        guard let metadata = try? JSONDecoder().decode(Metadata.self, from: Data(payload[1..<end])) else {
            return (Metadata(), payload[...])
        }
        return (metadata, payload[(end + 1)...])
    }

    static let timePrefix = Array(#"{"t":"#.utf8)

    /// The state a replacement's record holds (metadata `state`); nil when the payload's
    /// metadata holds none.
    package static func replacedState(in payload: [UInt8]) -> JSONValue? {
        guard payload.first == recordSeparator, let end = payload.firstIndex(of: lineFeed),
              case .object(let members)? = try? JSONValue(parsing: Array(payload[1..<end])) else { return nil }
        return members.first { $0.key == "state" }?.value
    }

    /// The time of metadata that is `{"t":N}` and nothing else (most records that have
    /// metadata: read without a JSON decoder, as recovery reads every record); nil for
    /// any other metadata.
    static func time(alone metadata: ArraySlice<UInt8>) -> Int64? {
        guard metadata.count > timePrefix.count + 1, metadata.count <= timePrefix.count + 20,
              metadata.starts(with: timePrefix), metadata.last == UInt8(ascii: "}") else { return nil }
        var time: Int64 = 0
        for byte in metadata[(metadata.startIndex + timePrefix.count)..<(metadata.endIndex - 1)] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow) = time.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            time = times10 + Int64(byte - UInt8(ascii: "0"))
        }
        return time
    }

    /// What the metadata holds (keys it does not know are skipped: a later server may
    /// write more).
    package struct Metadata: Decodable, Equatable {
        package var sub: String?
        package var consumed: [String: UInt64]?
        package var v: Int32?
        package var migrated: Int32?
        package var t: Int64?
        /// True on the record of a replacement (its `state` is read by `replacedState`).
        package var restored: Bool?

        package init(sub: String? = nil, consumed: [String: UInt64]? = nil, v: Int32? = nil, migrated: Int32? = nil,
                     t: Int64? = nil) {
            self.sub = sub
            self.consumed = consumed
            self.v = v
            self.migrated = migrated
            self.t = t
        }
    }

    /// A journal record of `transition`, following a record of time `previous` in its
    /// journal (0: the first, or after one whose time is not known), which becomes
    /// `transition`'s time.
    package static func record(_ transition: HostedTransition, after previous: inout Int64) -> JournalRecord.Record {
        defer { if transition.time != 0 { previous = transition.time } }
        return JournalRecord.Record(sequence: transition.sequence, payload: encode(transition, after: previous),
                                    endsBatch: transition.endsBatch)
    }

    /// The records of `transitions`, in order, the first starting a journal (it carries its time).
    package static func records<Transitions: Sequence<HostedTransition>>(_ transitions: Transitions) -> [JournalRecord.Record] {
        var previous: Int64 = 0
        return transitions.map { record($0, after: &previous) }
    }
}
