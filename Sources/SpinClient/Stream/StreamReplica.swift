import SpinJSON

/// The state a delta stream's patches apply to (`?delta=json-patch`): the newest message's
/// state as a JSON tree and its sequence. Pure; the stream's iterator holds one per
/// connection.
///
/// A patch applies only to the state of the sequence just before it. One that does not
/// (it names a member that is not there, or a sequence was skipped) is a bug or a gap:
/// `apply` throws `.connectionFailed`, which makes the iterator reconnect and resume after
/// the last state it handed on (the server then sends a whole state first), rather than
/// hand on a wrong state.
struct StreamReplica: Sendable {
    private(set) var sequence: UInt64?
    private var state: JSONValue = .null

    /// A whole state (a snapshot or a state message with `"state"`) at `sequence`.
    mutating func reset(sequence: UInt64, state json: [UInt8]) throws(SpinClientError) {
        do {
            state = try JSONValue(parsing: json)
        } catch {
            throw .undecodable("the state of message \(sequence): \(error)")
        }
        self.sequence = sequence
    }

    /// Applies the RFC 6902 patch `json` of the state message at `sequence`; returns the new
    /// state's JSON text.
    mutating func apply(patch json: [UInt8], sequence: UInt64) throws(SpinClientError) -> [UInt8] {
        guard let previous = self.sequence, previous &+ 1 == sequence else {
            let had = self.sequence.map { "the state of \($0)" } ?? "no state"
            throw .connectionFailed("a patch to state \(sequence) came with \(had) to apply it to")
        }
        do {
            let patch = try JSONPatch(json: JSONValue(parsing: json))
            state = try patch.apply(to: state)
        } catch {
            self.sequence = nil
            throw .connectionFailed("the patch to state \(sequence) does not apply: \(error)")
        }
        self.sequence = sequence
        return state.bytes
    }
}
