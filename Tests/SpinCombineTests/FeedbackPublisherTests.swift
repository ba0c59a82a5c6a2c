import Dispatch
import OpenCombine
import SpinCombine
import Testing

/// Spin.Swift's Combine feedback tests, re-expressed: each publisher form, each strategy,
/// `filteredBy`, `lensingOn`, dependencies and an executor.
@Suite(.timeLimit(.minutes(1)))
struct FeedbackPublisherTests {
    @Test func aStatePublisher_ItsValuesAreTheFeedbacksEvents() async {
        let feedback = Feedback<Int, Step>(effect: { (state: Int) -> AnyPublisher<Step, Never> in
            state < 3 ? [Step.add(1), .add(1)].publisher.eraseToAnyPublisher() : Empty().eraseToAnyPublisher()
        }, applying: .continueOnNewState)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        // 0 sends two adds, and so do 1 and 2: every value of every publisher is applied.
        #expect(await loop.firstState { $0 >= 6 } == 6)
        loop.stop()
    }

    @Test func cancelOnNewState_ANewerStateCancelsTheSubscription_AndWhatItSendsLaterIsDropped() async {
        let subjects = Subjects()
        let feedback = Feedback<Int, Step>(effect: subjects.publisher(for:))
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await subjects.waitSubscribed(0))
        subjects.send(.add(1), forState: 0)            // handed over before any newer state: applied
        #expect(await loop.firstState { $0 == 1 } == 1)
        #expect(await subjects.waitSubscribed(1))
        #expect(subjects.cancelled.all == [0])
        subjects.send(.add(100), forState: 0)          // the old subscription is gone
        subjects.send(.add(10), forState: 1)
        #expect(await loop.firstState { $0 > 1 } == 11)
        loop.stop()
    }

    @Test func continueOnNewState_AnOlderPublisherKeepsSending() async {
        let subjects = Subjects()
        let feedback = Feedback<Int, Step>(effect: subjects.publisher(for:), applying: .continueOnNewState)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await subjects.waitSubscribed(0))
        #expect(await loop.emitAndWait(.add(1)) == 1)
        #expect(await subjects.waitSubscribed(1))
        subjects.send(.add(100), forState: 0)
        #expect(await loop.firstState { $0 == 101 } == 101)
        #expect(subjects.cancelled.all.isEmpty)
        loop.stop()
    }

    @Test func stop_CancelsEverySubscription() async {
        let subjects = Subjects()
        let feedback = Feedback<Int, Step>(effect: subjects.publisher(for:), applying: .continueOnNewState)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.emitAndWait(.add(1)) == 1)
        #expect(await subjects.waitSubscribed(0))
        #expect(await subjects.waitSubscribed(1))
        loop.stop()
        #expect(await eventually { Set(subjects.cancelled.all) == [0, 1] })
    }

    @Test func filteredBy_ThePublisherIsNotMadeForARejectedState() async {
        let seen = Recorder<Int>()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) -> Empty<Step, Never> in
            seen.append(state)
            return Empty()
        }, filteredBy: { $0 % 2 == 0 })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        for _ in 0..<4 { _ = await loop.emitAndWait(.add(1)) }
        #expect(await eventually { seen.count == 3 })
        #expect(seen.all == [0, 2, 4])
        loop.stop()
    }

    @Test func filteredBy_ARejectedStateCancelsTheRunningSubscription() async {
        let subjects = Subjects()
        let feedback = Feedback<Int, Step>(effect: subjects.publisher(for:), filteredBy: { $0 == 0 })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await subjects.waitSubscribed(0))
        #expect(await loop.emitAndWait(.add(1)) == 1)
        #expect(await eventually { subjects.cancelled.all == [0] })
        subjects.send(.add(100), forState: 0)
        #expect(await loop.emitAndWait(.marker) == 1)
        loop.stop()
    }

    @Test func lensingOn_AKeyPath_TheEffectSeesThePart() async {
        let seen = Recorder<Int>()
        let feedback = Feedback<Pair, Step>(effect: { (right: Int) -> Empty<Step, Never> in
            seen.append(right)
            return Empty()
        }, lensingOn: \.right, filteredBy: { $0 > 0 })
        let loop = Spin(initialState: Pair(left: 0, right: 0), feedbacks: [feedback], reducer: Reducer(Pair.add)).start()
        _ = await loop.emitAndWait(.add(3))
        _ = await loop.emitAndWait(.add(4))
        #expect(await eventually { seen.count == 2 })
        #expect(seen.all == [3, 7])
        loop.stop()
    }

    @Test func lensingOn_AClosure_TheEffectSeesThePart() async {
        let feedback = Feedback<Pair, Step>(effect: { (doubled: Int) -> AnyPublisher<Step, Never> in
            doubled == 6 ? Just(.add(100)).eraseToAnyPublisher() : Empty().eraseToAnyPublisher()
        }, lensingOn: { $0.right * 2 })
        let loop = Spin(initialState: Pair(left: 0, right: 0), feedbacks: [feedback], reducer: Reducer(Pair.add)).start()
        loop.emit(.add(3))
        #expect(await loop.firstState { $0.right == 103 } != nil)
        loop.stop()
    }

    @Test func dependencies_ArePassedBeforeTheState() async {
        let one = Feedback<Int, Step>(effect: { (step: Int, state: Int) -> AnyPublisher<Step, Never> in
            state == 0 ? Just(.add(step)).eraseToAnyPublisher() : Empty().eraseToAnyPublisher()
        }, dep1: 5)
        let two = Feedback<Int, Step>(effect: { (step: Int, limit: Int, state: Int) -> AnyPublisher<Step, Never> in
            state == limit ? Just(.add(step)).eraseToAnyPublisher() : Empty().eraseToAnyPublisher()
        }, dep1: 10, dep2: 5)
        let loop = Spin(initialState: 0, feedbacks: [one, two], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 15 } == 15)
        loop.stop()
    }

    @Test func execute_ThePublisherIsMadeAndSubscribedOnTheFeedbacksQueue() async {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "combine-feedback")
        queue.setSpecific(key: key, value: "combine-feedback")
        let made = Recorder<String?>()
        let subscribed = Recorder<String?>()
        let feedback = Feedback<Int, Step>(effect: { (state: Int) -> AnyPublisher<Step, Never> in
            made.append(DispatchQueue.getSpecific(key: key))
            return Just(.add(1)).filter { _ in state < 3 }
                .handleEvents(receiveSubscription: { _ in subscribed.append(DispatchQueue.getSpecific(key: key)) })
                .eraseToAnyPublisher()
        }, applying: .continueOnNewState).execute(on: queue)
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 3 } == 3)
        #expect(await eventually { made.count == 4 })
        // Every state reached the feedback (it skips nothing on its queue).
        #expect(made.all == Array(repeating: "combine-feedback", count: 4))
        #expect(subscribed.all.allSatisfy { $0 == "combine-feedback" })
        loop.stop()
    }

    @Test func theRawForm_GetsEveryStateInOrder_AndItsSubscriptionEndsOnStop() async {
        let seen = Recorder<Int>()
        let ended = Recorder<Bool>()
        let feedback = Feedback<Int, Step>(effect: { (states: AnyPublisher<Int, Never>) -> AnyPublisher<Step, Never> in
            states
                .handleEvents(receiveOutput: { seen.append($0) }, receiveCompletion: { _ in ended.append(true) },
                              receiveCancel: { ended.append(true) })
                .compactMap { $0 < 3 ? Step.add(1) : nil }
                .eraseToAnyPublisher()
        })
        let loop = Spin(initialState: 0, feedbacks: [feedback], reducer: Reducer(sum)).start()
        #expect(await loop.firstState { $0 == 3 } == 3)
        #expect(await eventually { seen.count == 4 })
        #expect(seen.all == [0, 1, 2, 3])
        loop.stop()
        #expect(await eventually { ended.count == 1 })
    }

    @Test func theRawForm_LensingOnAPart_AndFiltered() async {
        let seen = Recorder<Int>()
        let feedback = Feedback<Pair, Step>(effect: { (rights: AnyPublisher<Int, Never>) -> AnyPublisher<Step, Never> in
            rights.handleEvents(receiveOutput: { seen.append($0) }).flatMap { _ in Empty<Step, Never>() }
                .eraseToAnyPublisher()
        }, lensingOn: \.right, filteredBy: { $0 % 2 == 1 })
        let loop = Spin(initialState: Pair(left: 0, right: 0), feedbacks: [feedback], reducer: Reducer(Pair.add)).start()
        for n in [1, 1, 1] { _ = await loop.emitAndWait(.add(n)) }
        #expect(await eventually { seen.count == 2 })
        #expect(seen.all == [1, 3])
        loop.stop()
    }
}

/// A state with a part to lens on: `add` adds to `right` and counts in `left`.
struct Pair: Equatable, Sendable {
    var left: Int
    var right: Int

    static func add(_ pair: Pair, _ event: Step) -> Pair {
        guard case .add(let n) = event else { return pair }
        return Pair(left: pair.left + 1, right: pair.right + n)
    }
}
