// The Combine example of Spin.Swift's README, as its users port it: `import SpinCombine`
// and `import OpenCombine` in place of `import Combine`, and nothing else changed.
import OpenCombine
import SpinCombine
import Testing

private struct Levels: Equatable {
    let left: Int
    let right: Int
}

private enum Event {
    case increaseLeft
    case decreaseLeft
    case increaseRight
    case decreaseRight
}

private func leftEffect(inputLevels: Levels) -> AnyPublisher<Event, Never> {
    // this is the stop condition to our Spin
    guard inputLevels.left != inputLevels.right else { return Empty().eraseToAnyPublisher() }

    // this is the regulation for the left level
    if inputLevels.left < inputLevels.right {
        return Just(.increaseLeft).eraseToAnyPublisher()
    } else {
        return Just(.decreaseLeft).eraseToAnyPublisher()
    }
}

private func rightEffect(inputLevels: Levels) -> AnyPublisher<Event, Never> {
    // this is the stop condition to our Spin
    guard inputLevels.left != inputLevels.right else { return Empty().eraseToAnyPublisher() }

    // this is the regulation for the right level
    if inputLevels.right < inputLevels.left {
        return Just(.increaseRight).eraseToAnyPublisher()
    } else {
        return Just(.decreaseRight).eraseToAnyPublisher()
    }
}

private func levelsReducer(currentLevels: Levels, event: Event) -> Levels {
    guard currentLevels.left != currentLevels.right else { return currentLevels }

    switch event {
    case .decreaseLeft:
        return Levels(left: currentLevels.left - 1, right: currentLevels.right)
    case .increaseLeft:
        return Levels(left: currentLevels.left + 1, right: currentLevels.right)
    case .decreaseRight:
        return Levels(left: currentLevels.left, right: currentLevels.right - 1)
    case .increaseRight:
        return Levels(left: currentLevels.left, right: currentLevels.right + 1)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ReadmeCombineTests {
    /// The levels a `stream(from:)` subscription sees when they meet. Where they meet
    /// depends on how the two feedbacks' events interleave (a newer state cancels an
    /// effect's event not yet handed over), as in Spin.Swift: only that they meet is the
    /// example's promise.
    private func convergedLevels(of levelsSpin: Spin<Levels, Event>) async -> Levels? {
        var cancellables = Set<AnyCancellable>()
        let met = AsyncStream<Levels>.makeStream()
        AnyPublisher
            .stream(from: levelsSpin)
            .sink(receiveCompletion: { _ in }, receiveValue: { levels in
                if levels.left == levels.right { met.continuation.yield(levels) }
            })
            .store(in: &cancellables)
        var iterator = met.stream.makeAsyncIterator()
        let levels = await iterator.next()
        cancellables.removeAll()
        return levels
    }

    @Test func theBuilderWay_ConvergesThroughAStreamSubscription() async {
        let levelsSpin = Spinner
            .initialState(Levels(left: 10, right: 20))
            .feedback(Feedback(effect: leftEffect))
            .feedback(Feedback(effect: rightEffect))
            .reducer(Reducer(levelsReducer))

        let met = await convergedLevels(of: levelsSpin)
        #expect(met != nil && met?.left == met?.right && (10...20).contains(met?.left ?? 0))
    }

    @Test func theDeclarativeWay_ConvergesThroughAStreamSubscription() async {
        let levelsSpin = Spin(initialState: Levels(left: 10, right: 20)) {
            Feedback(effect: leftEffect)
            Feedback(effect: rightEffect)
            Reducer(levelsReducer)
        }

        let met = await convergedLevels(of: levelsSpin)
        #expect(met != nil && met?.left == met?.right && (10...20).contains(met?.left ?? 0))
    }

    @Test func start_RunsTheLoopUntilItsCancellableGoes() async {
        let reached = AsyncStream<Void>.makeStream()
        let levelsSpin = Spin(initialState: Levels(left: 10, right: 20)) {
            Feedback(effect: leftEffect)
            Feedback(effect: rightEffect)
            Feedback(effect: { (levels: Levels) -> AnyPublisher<Event, Never> in
                if levels.left == levels.right { reached.continuation.yield() }
                return Empty().eraseToAnyPublisher()
            })
            Reducer(levelsReducer)
        }
        var cancellables = Set<AnyCancellable>()

        AnyPublisher
            .start(spin: levelsSpin)
            .store(in: &cancellables)

        var iterator = reached.stream.makeAsyncIterator()
        #expect(await iterator.next() != nil)
        cancellables.removeAll()
    }
}
