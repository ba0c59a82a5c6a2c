import OpenCombine
import SpinCore
import SpinConcurrency

/// What a Combine subscription made for an effect needs to be cancelled from wherever
/// the effect ends: the `AsyncStream` it feeds calls `onTermination` on the thread of the
/// task that was cancelled, the subscription is made on the effect's own thread.
final class CancelBox: Sendable {
    private let contents = Protected<(cancellables: [any Cancellable], cancelled: Bool)>(([], false))

    /// Keeps `cancellable` until `cancel()`; cancels it at once when that already happened
    /// (the stream ended while the subscription was being made).
    func keep(_ cancellable: any Cancellable) {
        let late = contents.withLock { contents -> Bool in
            if contents.cancelled { return true }
            contents.cancellables.append(cancellable)
            return false
        }
        if late { cancellable.cancel() }
    }

    func cancel() {
        let all = contents.withLock { contents -> [any Cancellable] in
            contents.cancelled = true
            defer { contents.cancellables = [] }
            return contents.cancellables
        }
        for cancellable in all { cancellable.cancel() }
    }
}

extension Publisher where Failure == Never {
    /// The publisher's values as an `AsyncStream`, subscribed at once (so a synchronous
    /// publisher such as `Just` has handed its values over by the time this returns).
    /// Cancelling the task that iterates the stream, or dropping the stream, cancels the
    /// subscription (and whatever else `box` keeps): this is how SpinCore's cancellation
    /// (a newer state, `stop()`) reaches a Combine effect. A completion ends the stream.
    /// Unlimited demand: an effect's events all go to the loop, which bounds what waits
    /// (its feedback budget).
    func spinEvents(cancelling box: CancelBox = CancelBox()) -> AsyncStream<Output> where Output: Sendable {
        AsyncStream { continuation in
            continuation.onTermination = { _ in box.cancel() }
            box.keep(sink(receiveCompletion: { _ in continuation.finish() },
                          receiveValue: { continuation.yield($0) }))
        }
    }
}

/// The raw form's bridge: `effect` gets a publisher of the elements of `states` and its
/// publisher's values come back as a stream. The effect's publisher is subscribed before
/// the first state is sent; a task sends the states in order (and completes the publisher
/// if `states` ends first). Ending the returned stream (the loop stopped) cancels both.
func publisherDriven<Element: Sendable, Events: Publisher>(
    by effect: @Sendable (AnyPublisher<Element, Never>) -> Events, states: AsyncStream<Element>
) -> AsyncStream<Events.Output> where Events.Failure == Never, Events.Output: Sendable {
    let subject = UncheckedBox(value: PassthroughSubject<Element, Never>())
    let box = CancelBox()
    let events = effect(subject.value.eraseToAnyPublisher()).spinEvents(cancelling: box)
    let feeder = Task {
        for await state in states { subject.value.send(state) }
        subject.value.send(completion: .finished)
    }
    box.keep(AnyCancellable { feeder.cancel() })
    return events
}

/// Lets a non-Sendable value (a Combine subject, thread-safe by its own locks) cross into
/// the task that feeds it. `@unchecked Sendable`: only for values whose own API is
/// thread-safe.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
}
