import SpinConcurrency

/// The states of a loop as an `AsyncSequence`: the state current when it was made, then
/// every new state, until the loop stops. Made by `SpinLoop.states`.
///
/// Iterate it once (a second iterator would compete with the first for states). Its
/// buffer is unbounded: a consumer that cannot keep up should conflate on its side (the
/// server's streams do). Dropping the sequence and its iterator unsubscribes it.
///
/// The loop hands states over in batches and an iterator takes whatever is buffered in
/// one step, so a busy loop costs a consumer one lock per batch, not one per state.
public struct SpinStates<State: Sendable>: AsyncSequence, Sendable {
    public typealias Element = State
    public typealias Failure = Never

    let channel: StateChannel<State>
    let registration: StatesRegistration

    public func makeAsyncIterator() -> Iterator {
        Iterator(channel: channel, registration: registration)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let channel: StateChannel<State>
        let registration: StatesRegistration
        private var buffer: [State] = []
        private var index = 0

        init(channel: StateChannel<State>, registration: StatesRegistration) {
            self.channel = channel
            self.registration = registration
        }

        public mutating func next() async -> State? {
            if index == buffer.count {
                buffer = await channel.take()
                index = 0
                if buffer.isEmpty { return nil }
            }
            defer { index += 1 }
            return buffer[index]
        }
    }
}

/// Unsubscribes a `SpinStates` from its loop when the last copy of the sequence and its
/// iterators is gone.
final class StatesRegistration: Sendable {
    private let onDrop: @Sendable () -> Void

    init(onDrop: @escaping @Sendable () -> Void) {
        self.onDrop = onDrop
    }

    deinit { onDrop() }
}

/// A single-consumer buffer of states between a loop and one `SpinStates` iterator.
final class StateChannel<State: Sendable>: Sendable {
    private struct Buffer {
        var states: [State] = []
        var finished = false
        var waiter: CheckedContinuation<[State], Never>?
    }

    private let buffer = Protected(Buffer())

    /// Adds states for the consumer (ignored once finished).
    func push<States: Collection<State>>(_ states: States) {
        guard !states.isEmpty else { return }
        let waiter = buffer.withLock { buffer -> CheckedContinuation<[State], Never>? in
            guard !buffer.finished else { return nil }
            if let waiter = buffer.waiter {
                buffer.waiter = nil
                return waiter
            }
            buffer.states.append(contentsOf: states)
            return nil
        }
        waiter?.resume(returning: Array(states))
    }

    /// No state will follow: the consumer gets what is buffered, then the end.
    func finish() {
        let waiter = buffer.withLock { buffer -> CheckedContinuation<[State], Never>? in
            buffer.finished = true
            defer { buffer.waiter = nil }
            return buffer.waiter
        }
        waiter?.resume(returning: [])
    }

    /// Everything buffered, waiting for the next push if there is nothing; empty means
    /// the end (the loop stopped, or the consuming task was cancelled).
    func take() async -> [State] {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[State], Never>) in
                let ready = buffer.withLock { buffer -> [State]? in
                    if !buffer.states.isEmpty {
                        defer { buffer.states = [] }
                        return buffer.states
                    }
                    if buffer.finished || Task.isCancelled { return [] }
                    buffer.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }
}
