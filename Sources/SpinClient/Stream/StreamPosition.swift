/// Where a state stream has got to, so that a new connection resumes there: the last
/// sequence and epoch seen. Pure; the stream's iterator holds one.
struct StreamPosition: Sendable, Hashable {
    /// The last sequence handed to the consumer (or the one the caller resumes after).
    private(set) var sequence: UInt64?
    /// The epoch of that sequence; nil when the caller gave only a sequence.
    private(set) var epoch: String?

    init(since: UInt64? = nil) {
        sequence = since
    }

    /// The query of the next connection: `since` and `epoch`, so that the server sends
    /// the missed state messages when its history is the same and a snapshot otherwise.
    var resumeQuery: [(name: String, value: String)] {
        guard let sequence else { return [] }
        return [("since", String(sequence))] + (epoch.map { [("epoch", $0)] } ?? [])
    }

    /// Records `update` and says whether to hand it on. A snapshot always is (it replaces
    /// what the consumer knew); a state message at or before the last sequence of the
    /// same epoch is a duplicate and is not.
    mutating func admit(isSnapshot: Bool, sequence: UInt64, epoch: String) -> Bool {
        if !isSnapshot, let last = self.sequence, sequence <= last, self.epoch == nil || self.epoch == epoch {
            return false
        }
        self.sequence = sequence
        self.epoch = epoch
        return true
    }
}
