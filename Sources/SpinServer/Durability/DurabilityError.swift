/// Why a Spin's applied transitions are not acknowledged here, as the durability layer
/// (`Journal`, `SpinFeed`, `SpinFeeds`) knows it: its storage failed, the Spin undid a
/// transition it could not keep, or this node no longer serves the Spin. Told to every
/// acknowledgement that waits (`SpinFeed.whenDurable`) and held by a failing or ended
/// feed (`SpinFeed.failure`, `SpinFeed.endedBy`); the API answers each with its
/// `APIError` (`APIError.init(_:)`, the one place that maps them).
package enum DurabilityError: Error, Equatable, Sendable {
    /// The Spin's storage cannot write, or could not read back what it wrote (`detail`
    /// says why, in the store's words).
    case storageFailed(spin: String, String)
    /// A transition of the Spin does not encode as JSON (`detail`: what); the Spin went
    /// back to its last durable state.
    case unencodable(spin: String, String)
    /// The state a transition made encodes larger than `limit` bytes (`limits.maxStateBytes`);
    /// the Spin went back to its last durable state.
    case stateTooLarge(spin: String, bytes: Int, limit: Int)
    /// This cluster node stopped serving the Spin (another node serves it, or will).
    case moved(spin: String)
    /// The Spin was deleted.
    case deleted(spin: String)
    /// The Spin went to sleep here with nothing watching its feed (a stream that took
    /// the feed before closes, and opens again on the Spin woken).
    case asleep(spin: String)
}

extension DurabilityError: CustomStringConvertible {
    /// What happened, for logs.
    package var description: String {
        switch self {
        case .storageFailed(_, let detail): "storage failed: \(detail)"
        case .unencodable(let spin, let detail): "Spin \"\(spin)\" cannot encode \(detail)"
        case .stateTooLarge(let spin, let bytes, let limit):
            "the state of Spin \"\(spin)\" would be \(bytes) bytes of JSON, over limits.maxStateBytes (\(limit))"
        case .moved(let spin): "this node no longer serves Spin \"\(spin)\""
        case .deleted(let spin): "Spin \"\(spin)\" was deleted"
        case .asleep(let spin): "Spin \"\(spin)\" went to sleep"
        }
    }
}
