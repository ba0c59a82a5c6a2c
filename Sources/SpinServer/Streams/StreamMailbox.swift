import SpinCore
import SpinConcurrency

/// What reaches one stream from other threads (a feed's transitions, acks, Gear
/// traffic), kept in arrival order until the stream's driver takes it all on the
/// connection's event loop: one hop per batch instead of one per message.
///
/// `post` only appends under a short lock (a feed calls it under its own lock) and says
/// whether the caller must schedule a drain: only when none is pending, so however many
/// messages arrive meanwhile, one `take` on the connection's event loop gets them all. State
/// messages and acks go through the same mailbox, so an ack never overtakes the state
/// message of its event.
final class StreamMailbox: Sendable {
    private struct Box {
        var messages: [StreamMachine.Message] = []
        /// A drain is scheduled and has not taken the messages yet.
        var scheduled = false
    }

    private let box = Protected(Box())

    /// Appends `message`; true when the caller must schedule a drain.
    func post(_ message: StreamMachine.Message) -> Bool {
        box.withLock { box in
            box.messages.append(message)
            guard !box.scheduled else { return false }
            box.scheduled = true
            return true
        }
    }

    /// Everything posted since the last `take`, oldest first; the next `post` schedules
    /// a drain again.
    func take() -> [StreamMachine.Message] {
        box.withLock { box in
            box.scheduled = false
            var messages: [StreamMachine.Message] = []
            swap(&messages, &box.messages)
            return messages
        }
    }
}
