import Dispatch
import OpenCombine
import SpinCombine
import Testing

/// A view that renders what its `UISpin` publishes.
@MainActor
final class CounterView {
    var rendered: [Int] = []
    func render(state: Int) { rendered.append(state) }
}

/// Spin.Swift's `UISpin`/`SwiftUISpin`: an `ObservableObject` following its loop on the
/// main actor.
@Suite(.timeLimit(.minutes(1)))
struct UISpinTests {
    /// Waits (yielding the main actor, so that the main queue runs) until `condition`.
    @MainActor private func mainEventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<2_500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return condition()
    }

    private func counterSpin() -> Spin<Int, Step> {
        Spin(initialState: 0) {
            Feedback(effect: { (state: Int) -> AnyPublisher<Step, Never> in
                state > 0 && state < 3 ? Just(.add(1)).eraseToAnyPublisher() : Empty().eraseToAnyPublisher()
            })
            Reducer(sum)
        }
    }

    @MainActor @Test func state_IsTheInitialState_UntilStart() async {
        let uiSpin = UISpin(spin: counterSpin())
        uiSpin.emit(.add(1))        // no loop yet: dropped
        #expect(uiSpin.state == 0)
        uiSpin.start()
        uiSpin.emit(.add(10))
        #expect(await mainEventually { uiSpin.state == 10 })
        uiSpin.stop()
    }

    @MainActor @Test func emit_ReachesTheLoop_AndPublishedStateFollowsItsFeedbacks() async {
        let uiSpin = UISpin(spin: counterSpin())
        var published: [Int] = []
        let cancellable = uiSpin.$state.sink { published.append($0) }
        uiSpin.start()
        uiSpin.emit(.add(1))
        #expect(await mainEventually { uiSpin.state == 3 })
        // The initial value of `$state`, the loop's snapshot, then every state in order.
        #expect(published == [0, 0, 1, 2, 3])
        cancellable.cancel()
        uiSpin.stop()
    }

    @MainActor @Test func objectWillChange_FiresBeforeEachPublishedState() async {
        let uiSpin = UISpin(spin: counterSpin())
        var changes = 0
        let cancellable = uiSpin.objectWillChange.sink { _ in changes += 1 }
        uiSpin.start()
        uiSpin.emit(.add(1))
        #expect(await mainEventually { uiSpin.state == 3 })
        #expect(changes == 4)       // the snapshot, then 1, 2, 3
        cancellable.cancel()
        uiSpin.stop()
    }

    @MainActor @Test func render_CallsTheContainersFunctionWithEveryState() async {
        let uiSpin = UISpin(spin: counterSpin())
        let view = CounterView()
        uiSpin.render(on: view, using: { $0.render(state:) })
        uiSpin.start()
        uiSpin.emit(.add(1))
        #expect(await mainEventually { view.rendered.last == 3 })
        #expect(view.rendered == [0, 0, 1, 2, 3])
        uiSpin.stop()
    }

    @MainActor @Test func stop_AndRelease_CancelTheLoopsEffects() async {
        let subjects = Subjects()
        let spin = Spin(initialState: 0) {
            Feedback(effect: subjects.publisher(for:))
            Reducer(sum)
        }
        var uiSpin: SwiftUISpin<Int, Step>? = SwiftUISpin(spin: spin)
        uiSpin?.start()
        #expect(await subjects.waitSubscribed(0))
        uiSpin = nil
        #expect(await mainEventually { subjects.cancelled.all == [0] })

        let stopped = UISpin(spin: spin)
        stopped.start()
        #expect(await mainEventually { subjects.subscribed.count == 2 })
        stopped.stop()
        #expect(await mainEventually { subjects.cancelled.count == 2 })
        stopped.emit(.add(1))
        try? await Task.sleep(for: .milliseconds(20))
        #expect(stopped.state == 0)
    }
}
