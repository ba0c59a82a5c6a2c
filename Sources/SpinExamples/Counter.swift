import SpinCore

/// The counter of Spin.Swift's README: a feedback asks to increase while
/// `0 <= value < 10`, so a started counter counts to 10 and stops.
public enum Counter {
    /// State JSON: `{"value":n}`.
    public struct State: Codable, Equatable, Sendable {
        public var value: Int

        public init(value: Int) { self.value = value }
    }

    /// Event JSON: `{"type":"increase"}`, `{"type":"decrease"}`, `{"type":"reset"}`.
    public enum Event: String, TypeTaggedEvent, CaseIterable, Equatable, Sendable {
        case increase
        case decrease
        /// Sets the value to 0, so that the counter counts again.
        case reset
    }

    /// `increase` and `decrease` saturate at `Int.max` and `Int.min` (no event traps;
    /// a client needs 2^63 of them to get there).
    public static func reduce(state: State, event: Event) -> State {
        switch event {
        case .increase: State(value: state.value.addingSaturated(1))
        case .decrease: State(value: state.value.addingSaturated(-1))
        case .reset: State(value: 0)
        }
    }

    /// The regulation: ask to increase while `0 <= value < 10`.
    /// The states the regulation acts on: it counts up from below 10.
    @Sendable static func isRegulated(_ state: State) -> Bool { (0..<10).contains(state.value) }

    public static func countUp(state: State) -> Event? {
        (0..<10).contains(state.value) ? .increase : nil
    }

    /// The same regulation, one step per `tick` of `clock` (a dashboard can watch it count).
    public static func countUp(clock: any Clock<Duration>, tick: Duration, state: State) async -> Event? {
        guard (0..<10).contains(state.value) else { return nil }
        do {
            try await clock.sleep(for: tick)
        } catch {
            return nil
        }
        return .increase
    }

    /// The counter Spin, starting at 0.
    ///
    /// The regulation applies `.latestStateOnly`: a client batch of two `decrease`
    /// (10 → 9 → 8) makes a request to increase for 9 and one for 8, and under the default
    /// `cancelOnNewState` the one for 9 is applied too when it was handed over before 8
    /// reached the feedback, so the counter could end at 11. With `latestStateOnly` a
    /// request is applied only while its state is the feedback's latest, and the counter
    /// always stops at 10.
    /// - Parameters:
    ///   - tick: the pause before each step; zero counts at once.
    ///   - clock: the clock the pause is measured on (a test passes a manual clock).
    public static func spin(
        initialState: State = State(value: 0),
        tick: Duration = .zero,
        clock: any Clock<Duration> = ContinuousClock()
    ) -> Spin<State, Event> {
        Spin(initialState: initialState) {
            // States outside 0..<10 run no effect at all (no task per event at
            // 10 and above), and cancel the step in flight, as a newer state does.
            if tick == .zero {
                Feedback(effect: { (state: State) async -> Event? in countUp(state: state) }, filteredBy: isRegulated,
                         applying: .latestStateOnly)
            } else {
                Feedback(effect: countUp, dep1: clock, dep2: tick, filteredBy: isRegulated, applying: .latestStateOnly)
            }
            Reducer(reduce)
        }
    }
}

extension Counter.State: JSONSchemaDescribable {
    /// `{"value":n}`.
    public static var jsonSchema: JSONSchema { .object(["value": .integer()]) }
}
