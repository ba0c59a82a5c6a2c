import Dispatch
import SpinCore
import SpinTesting
import Testing

/// Files to download: `wanted` for the single-request form, `files` for the Set form.
struct Downloads: Equatable, Sendable {
    var wanted: String?
    var files: Set<String> = []
    var done: [String] = []
    var touches = 0

    enum Event: Equatable, Sendable {
        case want(String?)
        case add(String)
        case remove(String)
        case finished(String)
        /// Changes the state without changing any request.
        case touch
    }

    static func reduce(_ state: Downloads, _ event: Event) -> Downloads {
        var state = state
        switch event {
        case .want(let name): state.wanted = name
        case .add(let name): state.files.insert(name)
        case .remove(let name): state.files.remove(name)
        case .finished(let name):
            state.done.append(name)
            if state.wanted == name { state.wanted = nil }
            state.files.remove(name)
        case .touch: state.touches += 1
        }
        return state
    }
}

/// One element, `element`, after sleeping `delay` on `clock`, in the task that iterates
/// it (so cancelling that task cancels the sleep).
struct Delayed<Element: Sendable>: AsyncSequence, Sendable {
    let element: Element
    let delay: Duration
    let clock: ManualClock

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: Delayed
        var done = false

        mutating func next() async throws -> Element? {
            guard !done else { return nil }
            done = true
            try await sequence.clock.sleep(for: sequence.delay)
            return sequence.element
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self) }
}

/// A download takes a second of `clock` and records its start in `starts`.
func download(on clock: ManualClock, starts: Recorder<String>) -> @Sendable (String) -> Delayed<Downloads.Event> {
    { name in
        starts.append(name)
        return Delayed(element: .finished(name), delay: .seconds(1), clock: clock)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ReactTests {
    let clock = ManualClock()
    let starts = Recorder<String>()

    func tester(_ feedback: Feedback<Downloads, Downloads.Event>) -> SpinTester<Downloads, Downloads.Event> {
        SpinTester(Spin(initialState: Downloads()) {
            feedback
            Reducer(Downloads.reduce)
        }, clock: clock, timeout: .seconds(2))
    }

    var single: Feedback<Downloads, Downloads.Event> {
        .react(request: { (state: Downloads) in state.wanted }, effects: download(on: clock, starts: starts))
    }

    var set: Feedback<Downloads, Downloads.Event> {
        .react(requests: { (state: Downloads) in state.files }, effects: download(on: clock, starts: starts))
    }

    @Test func anEqualRequest_KeepsTheRunningEffect() async {
        let tester = tester(single)
        await tester.send(.want("a")) { $0.wanted = "a" }
        await tester.advance(by: .milliseconds(500))
        await tester.send(.touch) { $0.touches = 1 }
        await tester.send(.want("a"))
        // Restarted, it would end at 1.5 s or later.
        await tester.advance(by: .milliseconds(500))
        await tester.receive(.finished("a")) {
            $0.wanted = nil
            $0.done = ["a"]
        }
        await tester.finish()
        #expect(starts.all == ["a"])
    }

    @Test func oneFeedback_InTwoLoops_StartsItsEffectInEach() async {
        let starts = self.starts
        let feedback = Feedback<Downloads, Downloads.Event>.react(request: { (state: Downloads) in state.wanted }) {
            (name: String) async -> Downloads.Event? in
            starts.append(name)
            return .touch
        }
        // Each loop's initial state asks for what the other one ran: it is new there.
        for _ in 0..<2 {
            let tester = SpinTester(Spin(initialState: Downloads(wanted: "a")) {
                feedback
                Reducer(Downloads.reduce)
            }, clock: clock, timeout: .seconds(2))
            await tester.receive(.touch) { $0.touches = 1 }
            await tester.finish()
        }
        #expect(starts.all == ["a", "a"])
    }

    @Test func aNilRequest_CancelsTheEffect() async {
        let tester = tester(single)
        await tester.send(.want("a")) { $0.wanted = "a" }
        await tester.advance(by: .milliseconds(500))
        await tester.send(.want(nil)) { $0.wanted = nil }
        await tester.advance(by: .seconds(1))
        await tester.finish()
        #expect(clock.sleepers == 0)
    }

    @Test func aNewRequest_CancelsTheOldEffectAndStartsOne() async {
        let tester = tester(single)
        await tester.send(.want("a")) { $0.wanted = "a" }
        await tester.advance(by: .milliseconds(500))
        await tester.send(.want("b")) { $0.wanted = "b" }
        await tester.advance(by: .milliseconds(500))   // "a" would end here
        await tester.advance(by: .milliseconds(500))
        await tester.receive(.finished("b")) {
            $0.wanted = nil
            $0.done = ["b"]
        }
        await tester.finish()
        #expect(starts.all == ["a", "b"])
    }

    @Test func theAsyncStepForm_FollowsTheRequestToo() async {
        let clock = self.clock
        let tester = tester(.react(request: { (state: Downloads) in state.wanted }, effect: { name in
            do { try await clock.sleep(for: .seconds(1)) } catch { return nil }
            return .finished(name)
        }))
        await tester.send(.want("a")) { $0.wanted = "a" }
        await tester.advance(by: .milliseconds(500))
        await tester.send(.touch) { $0.touches = 1 }
        await tester.send(.want("b")) { $0.wanted = "b" }
        await tester.advance(by: .seconds(1))
        await tester.receive(.finished("b")) {
            $0.wanted = nil
            $0.done = ["b"]
        }
        await tester.send(.want("c")) { $0.wanted = "c" }
        await tester.send(.want(nil)) { $0.wanted = nil }
        await tester.advance(by: .seconds(1))
        await tester.finish()
    }

    @Test func theSetForm_RunsOneEffectPerElement_KeepsThoseThatStay_CancelsThoseThatLeave() async {
        let tester = tester(set)
        await tester.send(.add("a")) { $0.files = ["a"] }
        await tester.advance(by: .milliseconds(500))
        await tester.send(.add("b")) { $0.files = ["a", "b"] }
        await tester.send(.remove("a")) { $0.files = ["b"] }
        await tester.advance(by: .milliseconds(500))   // "a" would end here
        await tester.send(.touch) { $0.touches = 1 }   // "b" stays: not restarted
        await tester.send(.add("c")) { $0.files = ["b", "c"] }
        await tester.advance(by: .milliseconds(500))
        await tester.receive(.finished("b")) {
            $0.files = ["c"]
            $0.done = ["b"]
        }
        await tester.advance(by: .milliseconds(500))
        await tester.receive(.finished("c")) {
            $0.files = []
            $0.done = ["b", "c"]
        }
        await tester.finish()
        #expect(starts.all == ["a", "b", "c"])
    }

    @Test func theSetForm_WithTheAsyncStep_StartsOnePerElement() async {
        let tester = tester(.react(requests: { (state: Downloads) in state.files }, effect: { name in .finished(name) }))
        await tester.send(.add("a")) { $0.files = ["a"] }
        await tester.receive(.finished("a")) {
            $0.files = []
            $0.done = ["a"]
        }
        await tester.finish()
    }

    @Test func stop_CancelsEveryReactEffect() async {
        let loop = Spin(initialState: Downloads(), feedbacks: [single, set], reducer: Reducer(Downloads.reduce)).start()
        loop.emit(.want("a"))
        loop.emit(.add("b"))
        loop.emit(.add("c"))
        #expect(await eventually { clock.sleepers == 3 })
        loop.stop()
        #expect(await eventually { clock.sleepers == 0 })
        await clock.advance(by: .seconds(1))
        #expect(loop.state.done.isEmpty)
        #expect(starts.all.sorted() == ["a", "b", "c"])
    }

    @Test func executeOn_RunsTheReactEffectsOnThatQueue() async {
        let queue = DispatchQueue(label: "test.react")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "react queue")
        let places = Recorder<String?>()
        let feedback = Feedback<Downloads, Downloads.Event>.react(requests: { (state: Downloads) in state.files },
                                                                 effect: { name in
            places.append(DispatchQueue.getSpecific(key: key))
            return .finished(name)
        }).execute(on: queue)
        let loop = Spin(initialState: Downloads(files: ["a", "b"]), feedbacks: [feedback],
                        reducer: Reducer(Downloads.reduce)).start()
        #expect(await loop.firstState { $0.files.isEmpty }?.done.sorted() == ["a", "b"])
        #expect(places.all == ["react queue", "react queue"])
        loop.stop()
    }

    @Test func eventsHandedOverBeforeTheRequestChanged_AreApplied() async {
        let state = await stateAfterEventsHandedOverBeforeANewState { handOver in
            .react(request: { (state: Int) in state == 0 ? "zero" : nil }, effects: { _ in
                addingOneTwoThree(after: handOver)
            })
        }
        #expect(state == 7)
    }
}
