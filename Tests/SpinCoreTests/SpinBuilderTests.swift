import SpinCore
import Testing

@Suite(.timeLimit(.minutes(1)))
struct SpinBuilderTests {
    static func upTo(_ limit: Int) -> Feedback<Int, Step> {
        Feedback(effect: { (state: Int) -> Step? in state < limit ? .add(1) : nil })
    }

    @Test func theReducer_MayStandAnywhereInTheBlock() async {
        let first = Spin(initialState: 0) {
            Reducer(sum)
            Self.upTo(3)
        }
        let middle = Spin(initialState: 0) {
            Self.upTo(3)
            Reducer(sum)
            Feedback<Int, Step>(effect: { (state: Int) -> Step? in nil })
        }
        let last = Spin(initialState: 0) {
            Feedback<Int, Step>(effect: { (state: Int) -> Step? in nil })
            Self.upTo(3)
            Reducer(sum)
        }
        #expect(first.feedbacks.count == 1)
        #expect(middle.feedbacks.count == 2)
        #expect(last.feedbacks.count == 2)
        for spin in [first, middle, last] {
            let loop = spin.start()
            #expect(await loop.firstState { $0 == 3 } == 3)
            loop.stop()
        }
    }

    @Test func conditionalsAndLoops_MakeFeedbacks() {
        let extra = true
        let spin = Spin(initialState: 0) {
            if extra { Self.upTo(1) }
            for limit in 1...3 { Self.upTo(limit) }
            Reducer(sum)
        }
        #expect(spin.feedbacks.count == 4)
    }

    @Test func spinnerBuilder_MakesTheSameSpinAsTheDSL() async {
        let built = Spinner
            .initialState(0)
            .feedback(Self.upTo(2))
            .feedback(Self.upTo(4))
            .reducer(Reducer(sum))
        #expect(built.feedbacks.count == 2)
        #expect(built.initialState == 0)
        let loop = built.start()
        #expect(await loop.firstState { $0 >= 4 } != nil)
        loop.stop()
    }

    @Test func reducer_ReplaysEventsPurely() {
        let reducer = Reducer<Int, Step>(sum)
        #expect(reducer.replay([.add(1), .add(2), .marker, .add(3)], from: 10) == 16)
        let mutating = Reducer<[Int], Int>(mutating: { $0.append($1) })
        #expect(mutating.replay([1, 2], from: [0]) == [0, 1, 2])
    }

    @Test func startingFrom_KeepsFeedbacksAndReducer() async {
        let spin = Spin(initialState: 0) {
            Self.upTo(5)
            Reducer(sum)
        }.startingFrom(3)
        let loop = spin.start()
        #expect(await loop.firstState { $0 == 5 } == 5)
        #expect(loop.sequence == 2)
        loop.stop()
    }
}
