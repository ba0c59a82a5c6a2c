import SpinWire
import SpinJSON

/// Makes the patch form of state messages for streams opened with `?delta=json-patch`
/// (docs/PROTOCOL.md, The stream protocol: deltas): `{"type":"state",..,"patch":[..]}` with the RFC 6902
/// patch from the state at sequence N-1 to the state at N.
///
/// The feed calls it once per transition for all its subscribers that asked for deltas (one
/// patch however many streams want it); a stream replaying retained history calls it for
/// each state of that history after the first. `JSONPatch.diff` walks the two states' JSON
/// text without parsing what is equal, so a large state with a small change costs a few
/// scans of its bytes.
///
/// No patch (nil: send the whole state) when
/// - the previous state is not sequence N-1 (there is nothing to patch from),
/// - N is a multiple of `fullStateInterval`, or
/// - the patch's bytes are not fewer than the state's (a state replaced wholesale).
enum StatePatcher {
    /// Every 1000th sequence carries the whole state, the same for every stream since it
    /// depends on the sequence only. It bounds how long a client whose state went wrong
    /// (a bug on either side that no check caught) shows a wrong state, while costing a
    /// stream of small patches on a large state about 0.1% of a whole state per message
    /// (1/1000 of it), well inside the 1% that deltas aim at.
    static let fullStateInterval: UInt64 = 1000

    /// The patch message of `transition` after the state `previous` (at `previous.sequence`;
    /// nil: the client has no state to patch), or nil when the whole state is to be sent.
    static func message(for transition: HostedTransition, after previous: (sequence: UInt64, state: JSONValue)?,
                        epoch: String) -> [UInt8]? {
        let sequence = transition.sequence
        guard let previous, sequence == previous.sequence &+ 1, sequence % fullStateInterval != 0,
              let patch = patch(from: previous.state, to: transition.state) else { return nil }
        return StreamMessage.patch(transition, epoch: epoch, patch: patch)
    }

    /// The RFC 6902 patch from `previous` to `state`, when its bytes are fewer than the
    /// state's (nil: a state replaced wholesale is sent whole). Streams and history pages
    /// (`HistoryEntries`) send patches by this one rule.
    static func patch(from previous: JSONValue, to state: JSONValue) -> [UInt8]? {
        let whole = state.bytes
        let patch = JSONPatch.diff(from: previous, to: .raw(whole)).bytes
        return patch.count < whole.count ? patch : nil
    }
}
