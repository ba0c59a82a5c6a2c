
/// The messages a stream still has to send, bounded: what a connection that cannot
/// write yet keeps.
///
/// When more than `limit` messages wait, the queued state messages are conflated into
/// one snapshot of the newest state (docs/PROTOCOL.md): a stuck client never makes the
/// server hold more than `limit` messages for it, and the gap in sequences tells the
/// client it missed some. Acknowledgements and errors are never dropped; if a client
/// piles up more than `limit` of them without reading, `push` says to close it.
package struct StreamOutbox: Sendable {
    package enum Kind: Sendable, Equatable {
        /// A snapshot or a state message: replaceable by a newer snapshot.
        case state
        /// An ack, error or Gear message: kept.
        case control
    }

    package enum PushResult: Sendable, Equatable {
        case queued
        /// Queued state messages were replaced by one snapshot.
        case conflated(dropped: Int)
        /// Too many control messages wait unread: close the stream (1008).
        case overflow
    }

    /// How many messages may wait. 64 covers a burst of events between two writes
    /// while keeping a stuck client's cost to a few kilobytes of JSON.
    package let limit: Int
    /// The epoch state messages carry (the stream's, set when it subscribes).
    package var epoch = ""
    /// Each message with the sequence of the state it carries (SSE sends it as `id:`).
    private(set) package var items: [(kind: Kind, message: [UInt8], sequence: UInt64?)] = []

    package init(limit: Int = 64) {
        precondition(limit >= 2, "an outbox must hold at least a snapshot and one more message")
        self.limit = limit
    }

    package var isEmpty: Bool { items.isEmpty }
    package var count: Int { items.count }

    /// Queues the message of an applied event (`message`, its state message as the feed
    /// wrote it); conflates if the outbox is full.
    package mutating func push(_ transition: HostedTransition, message: [UInt8]) -> PushResult {
        guard items.count >= limit else {
            items.append((.state, message, transition.sequence))
            return .queued
        }
        let before = items.count
        items.removeAll { $0.kind == .state }
        items.append((.state, StreamMessage.snapshot(sequence: transition.sequence, epoch: epoch, state: transition.state),
                      transition.sequence))
        // One message (the new one) took the place of those removed.
        return .conflated(dropped: before - items.count + 1)
    }

    /// Queues a message that must not be dropped.
    package mutating func push(control message: [UInt8]) -> PushResult {
        items.append((.control, message, nil))
        let controls = items.count { $0.kind == .control }
        return controls > limit ? .overflow : .queued
    }

    /// Puts a state-kind message before everything else (the first snapshot, which must
    /// precede any ack or error queued while it was on its way).
    package mutating func pushFront(state message: [UInt8], sequence: UInt64) {
        items.insert((.state, message, sequence), at: 0)
    }

    /// Takes the oldest waiting message, with its state's sequence (nil for control).
    package mutating func pop() -> (message: [UInt8], sequence: UInt64?)? {
        guard !items.isEmpty else { return nil }
        let item = items.removeFirst()
        // An emptied outbox lets its buffer go: idle streams are many, and most hold
        // nothing for long.
        if items.isEmpty { items = [] }
        return (item.message, item.sequence)
    }
}
