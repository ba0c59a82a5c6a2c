import Dispatch
import OpenCombine
import SpinCore
import SpinConcurrency

/// A Spin for code that binds to observable state, as Spin.Swift's `UISpin` and
/// `SwiftUISpin`: an `ObservableObject` whose `@Published state` follows the loop, on the
/// main actor, and whose `emit` sends events into it.
///
/// ```swift
/// let uiSpin = UISpin(spin: counterSpin)
/// uiSpin.render(on: self, using: { $0.render(state:) })
/// uiSpin.start()
/// uiSpin.emit(.startCounter)
/// ```
///
/// The loop runs from `start()` until `stop()` or until the `UISpin` is released (its
/// lifetime is the view's, as Spin.Swift binds it). States reach `state` on the main
/// queue, every one and in order; `objectWillChange` fires before each.
@MainActor
public final class UISpin<State: Sendable, Event: Sendable>: ObservableObject {
    /// The loop's latest state as the main actor has seen it (the initial state before
    /// `start()`).
    @Published public private(set) var state: State

    private let spin: Spin<State, Event>
    /// The running loop and its observation; nonisolated so that `deinit` can stop it.
    private let running = Protected<(loop: SpinLoop<State, Event>, observation: SpinSubscription)?>(nil)
    private var renderers: [(State) -> Void] = []

    public init(spin: Spin<State, Event>) {
        self.spin = spin
        self.state = spin.initialState
    }

    /// Starts the loop (once; later calls do nothing while it runs).
    public func start() {
        guard running.withLock({ $0 == nil }) else { return }
        let loop = spin.makeLoop()
        let observation = loop.observe(startingWith: { [weak self] _, state in self?.publish(state) },
                                       { [weak self] transition in self?.publish(transition.state) })
        running.withLock { $0 = (loop, observation) }
        loop.start()
    }

    /// Sends `event` into the running loop; before `start()` and after `stop()` it is
    /// dropped (there is no loop to apply it).
    public func emit(_ event: Event) {
        _ = running.withLock { $0?.loop }?.emit(event)
    }

    /// Stops the loop: every effect is cancelled, `state` keeps the last state published.
    public func stop() {
        Self.stop(running)
    }

    /// Calls `render` with every state `state` takes from now on (the current one first),
    /// on the main actor, as long as `container` lives: Spin.Swift's
    /// `uiSpin.render(on: self, using: { $0.render(state:) })`.
    public func render<Container: AnyObject>(on container: Container,
                                             using render: @escaping (Container) -> (State) -> Void) {
        renderers.append { [weak container] state in
            guard let container else { return }
            render(container)(state)
        }
        renderers.last?(state)
    }

    /// Hops to the main queue, in order (a serial queue keeps the loop's order), and
    /// publishes there.
    nonisolated private func publish(_ state: State) {
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated {
                guard let self else { return }
                self.state = state
                for render in self.renderers { render(state) }
            }
        }
    }

    private nonisolated static func stop(_ running: Protected<(loop: SpinLoop<State, Event>, observation: SpinSubscription)?>) {
        guard let (loop, observation) = running.withLock({ running in
            defer { running = nil }
            return running
        }) else { return }
        observation.cancel()
        loop.stop()
    }

    deinit {
        Self.stop(running)
    }
}

/// Spin.Swift's name for the SwiftUI flavour: the same `ObservableObject`.
public typealias SwiftUISpin<State: Sendable, Event: Sendable> = UISpin<State, Event>
