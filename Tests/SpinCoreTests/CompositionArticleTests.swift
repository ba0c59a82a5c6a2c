import SpinCore
import Testing

/// The worked example of SpinCore.docc, Composition, as written there (inside a namespace,
/// so that its names do not meet the other tests').
private enum Article {
    struct Counter: Equatable, Sendable, Identifiable {
        var id = 0
        var count = 0
    }
    enum CounterEvent: Equatable, Sendable { case increment, decrement, tick }

    static let counterReducer = Reducer<Counter, CounterEvent>(mutating: { counter, event in
        switch event {
        case .increment, .tick: counter.count += 1
        case .decrement: counter.count -= 1
        }
    })

    /// While a counter is above zero it ticks (every 100 ms here, every second in the article).
    static let ticking = Feedback<Counter, CounterEvent>(effect: { (counter: Counter) async -> CounterEvent? in
        guard counter.count > 0 else { return nil }
        try? await Task.sleep(for: .milliseconds(100))
        return Task.isCancelled ? nil : .tick
    })

    struct Screen: Equatable, Sendable {
        var counter = Counter()
        var detail: Counter?
        var rows: [Counter] = []
    }

    enum ScreenEvent: Equatable, Sendable {
        case counter(CounterEvent)
        case detail(CounterEvent)
        case row(id: Int, event: CounterEvent)
        case showDetail, hideDetail
        case addRow(Int), removeRow(Int)
    }

    static let counterPath = EventPath<ScreenEvent, CounterEvent>(embed: ScreenEvent.counter, extract: {
        if case .counter(let event) = $0 { event } else { nil }
    })
    static let detailPath = EventPath.case(ScreenEvent.detail)
    static let rowPath = EventPath<ScreenEvent, (Int, CounterEvent)>(
        embed: { ScreenEvent.row(id: $0.0, event: $0.1) },
        extract: { if case .row(let id, let event) = $0 { (id, event) } else { nil } })

    static let screenOwn = Reducer<Screen, ScreenEvent>.partial { screen, event in
        var screen = screen
        switch event {
        case .showDetail: screen.detail = Counter()
        case .hideDetail: screen.detail = nil
        case .addRow(let id): screen.rows.append(Counter(id: id))
        case .removeRow(let id): screen.rows.removeAll { $0.id == id }
        default: return nil
        }
        return screen
    }

    static let screen = Spin(initialState: Screen()) {
        ticking.pullback(state: \Screen.counter, event: counterPath)
        ticking.optional().pullback(state: \Screen.detail, event: detailPath)
        ticking.forEach(state: \Screen.rows, event: rowPath)
        Reducer.combine(
            counterReducer.pullback(state: \Screen.counter, event: counterPath),
            counterReducer.optional().pullback(state: \Screen.detail, event: detailPath),
            counterReducer.forEach(state: \Screen.rows, event: rowPath),
            screenOwn)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct CompositionArticleTests {
    @Test func theArticlesScreen_TicksARowWhileItIsThere_AndNotAfter() async {
        let loop = Article.screen.start()
        loop.emit(.addRow(7))
        loop.emit(.row(id: 7, event: .increment))
        #expect(await loop.firstState { $0.rows.first?.count == 2 } != nil)     // it ticked
        let removed = await loop.emitAndWait(.removeRow(7))
        try? await Task.sleep(for: .milliseconds(250))
        #expect(loop.sequence == removed?.sequence)                            // its tick went with it
        #expect(loop.state == Article.Screen())
        loop.stop()
    }
}
