import SpinCore
import Testing

// The SpinCore DocC articles' examples (GettingStarted.md, the levels; Feedbacks.md, react), verbatim,
// so that they cannot drift from the API (Tests/e2e/test_readme.py checks that their lines are here).
private struct Levels: Sendable, Equatable { var left: Int; var right: Int }
private enum Event: Sendable { case increaseLeft, decreaseLeft, increaseRight, decreaseRight }

private func leftEffect(state: Levels) -> Event? {
    guard state.left != state.right else { return nil }
    return state.left < state.right ? .increaseLeft : .decreaseLeft
}

private func rightEffect(state: Levels) -> Event? {
    guard state.left != state.right else { return nil }
    return state.right < state.left ? .increaseRight : .decreaseRight
}

private func levelsReducer(state: Levels, event: Event) -> Levels {
    guard state.left != state.right else { return state }
    switch event {
    case .increaseLeft: return Levels(left: state.left + 1, right: state.right)
    case .decreaseLeft: return Levels(left: state.left - 1, right: state.right)
    case .increaseRight: return Levels(left: state.left, right: state.right + 1)
    case .decreaseRight: return Levels(left: state.left, right: state.right - 1)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ReadmeTests {
    @Test func theReadmeExample_Converges() async {
        // The builder form ...
        let spin = Spinner
            .initialState(Levels(left: 10, right: 20))
            .feedback(Feedback(effect: leftEffect))
            .feedback(Feedback(effect: rightEffect))
            .reducer(Reducer(levelsReducer))

        // ... or the DSL form (any number of feedbacks, exactly one reducer, in any order).
        let same = Spin(initialState: Levels(left: 10, right: 20)) {
            Feedback(effect: leftEffect)
            Feedback(effect: rightEffect)
            Reducer(levelsReducer)
        }

        let loop = spin.start()                 // runs until stop()
        loop.emit(.increaseLeft)                // events from outside, from any thread
        for await state in loop.states {        // the current state first, then every new one
            if state.left == state.right { break }
        }
        loop.stop()                             // cancels effects, ends `states`, frees the loop

        #expect(loop.state.left == loop.state.right)
        #expect(same.feedbacks.count == spin.feedbacks.count)
    }
}

// The `react` example of the same section, verbatim, with stand-ins for its services.
private struct Search: Sendable { var query: String?; var downloads: Set<String> = [] }
private enum SearchEvent: Sendable { case found([String]), downloaded(String) }

private func searchResults(for query: String) -> AsyncStream<SearchEvent> {
    AsyncStream { continuation in
        continuation.yield(.found([query]))
        continuation.finish()
    }
}

private func download(_ file: String) async -> SearchEvent? { .downloaded(file) }

private func searchReducer(state: Search, event: SearchEvent) -> Search {
    var state = state
    switch event {
    case .found: state.query = nil
    case .downloaded(let file): state.downloads.remove(file)
    }
    return state
}

@Suite(.timeLimit(.minutes(1)))
struct ReadmeReactTests {
    @Test func theReactExample_SearchesAndDownloads() async {
        let search = Spin(initialState: Search()) {
            // One search per query, restarted only when the query changes.
            Feedback.react(request: { (state: Search) in state.query }, effects: { query in
                searchResults(for: query)              // some AsyncSequence<SearchEvent>
            })
            // One download per file in the set.
            Feedback.react(requests: { (state: Search) in state.downloads }, effect: { file in
                await download(file)                   // (String) async -> SearchEvent?
            })
            Reducer(searchReducer)
        }

        let loop = search.startingFrom(Search(query: "spin", downloads: ["a.txt", "b.txt"])).start()
        for await state in loop.states where state.query == nil && state.downloads.isEmpty { break }
        loop.stop()
        #expect(loop.state.query == nil)
        #expect(loop.state.downloads.isEmpty)
    }
}
