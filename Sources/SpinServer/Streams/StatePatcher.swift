import SpinWire

/// Makes the patch form of state messages for streams opened with `?delta=json-patch`
/// (docs/PROTOCOL.md, State deltas): `{"type":"state",..,"patch":[..]}` with the RFC 6902
/// patch from the state at sequence N-1 to the state at N.
///
/// It keeps the newest state it saw parsed, so that a run of transitions parses each state
/// once. The feed holds one for all its subscribers (one patch per transition, however
/// many streams want it); a stream replaying retained history holds its own.
///
/// No patch (nil: send the whole state) when
/// - the previous state is not sequence N-1 (there is nothing to patch from),
/// - N is a multiple of `fullStateInterval`, or
/// - the patch's bytes are not fewer than the state's (a state replaced wholesale).
struct StatePatcher: Sendable {
    /// Every 1000th sequence carries the whole state, the same for every stream since it
    /// depends on the sequence only. It bounds how long a client whose state went wrong
    /// (a bug on either side that no check caught) shows a wrong state, while costing a
    /// stream of small patches on a large state about 0.1% of a whole state per message
    /// (1/1000 of it), well inside the 1% that deltas aim at.
    static let fullStateInterval: UInt64 = 1000

    /// The newest state seen, parsed.
    private var newest: (sequence: UInt64, state: JSONValue)?

    init() {}

    /// The patch message of `transition` after the state `previous` (at `previous.sequence`;
    /// nil: the client has no state to patch), or nil when the whole state is to be sent;
    /// remembers `transition`'s state either way.
    mutating func message(for transition: HostedTransition, after previous: (sequence: UInt64, state: JSONValue)?,
                          epoch: String) -> [UInt8]? {
        let sequence = transition.sequence
        let parsedNew = try? transition.state.parsed()
        defer { newest = parsedNew.map { (sequence, $0) } }
        guard let parsedNew, let previous, sequence == previous.sequence &+ 1, sequence % Self.fullStateInterval != 0 else {
            return nil
        }
        let old: JSONValue
        if let newest, newest.sequence == previous.sequence {
            old = newest.state
        } else if let parsed = try? previous.state.parsed() {
            old = parsed
        } else {
            return nil
        }
        let patch = JSONPatch.diff(from: old, to: parsedNew).bytes
        guard patch.count < Self.byteCount(of: transition.state) else { return nil }
        return StreamMessage.patch(transition, epoch: epoch, patch: patch)
    }

    /// Forgets the state it kept (no stream wants patches any more).
    mutating func reset() {
        newest = nil
    }

    private static func byteCount(of value: JSONValue) -> Int {
        if case .raw(let bytes) = value { return bytes.count }
        return value.bytes.count
    }
}
