/// RxFeedback's `react`: a feedback whose effects are keyed by a request the state asks
/// for, rather than started for every state.
///
/// ```swift
/// Feedback.react(request: { (state: State) in state.loadingPage }, effects: { page in
///     api.load(page)                      // some AsyncSequence<Event>
/// })
/// ```
///
/// - A state asking for the request already running keeps its effect: equal requests
///   (`==`) do not restart it, however many states ask for it.
/// - A state asking for nothing (`nil`) cancels it.
/// - A state asking for another request cancels the running effect and starts one for
///   the new request.
///
/// The Set form runs one effect per element of the set: an element that leaves the set
/// cancels its effect, one that stays keeps running, a new one starts. A cancelled effect
/// hands over nothing afterwards (what it handed over before is applied); `stop()`
/// cancels every effect. `.execute(on:)` runs the effects on its queue.
extension Feedback {
    /// Runs `effects` for the request `request` derives from the state, as long as the
    /// states ask for that same request.
    @inlinable
    public static func react<Request: Equatable & Sendable, Events: AsyncSequence>(
        request: @escaping @Sendable (State) -> Request?,
        effects: @escaping @Sendable (Request) -> Events
    ) -> Feedback where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        react(request: request) { request in
            { emit in await forward(effects(request), to: emit) }
        }
    }

    /// Runs the async step `effect` once for the request `request` derives from the
    /// state, as long as the states ask for that same request; its event, if any, is
    /// applied unless the request changed first.
    @inlinable
    public static func react<Request: Equatable & Sendable>(
        request: @escaping @Sendable (State) -> Request?,
        effect: @escaping @Sendable (Request) async -> Event?
    ) -> Feedback {
        react(request: request) { request in
            { emit in if let event = await effect(request) { emit(event) } }
        }
    }

    /// Runs `effects` once per request in the set `requests` derives from the state, each
    /// as long as the states' sets keep it.
    public static func react<Request: Hashable & Sendable, Events: AsyncSequence>(
        requests: @escaping @Sendable (State) -> Set<Request>,
        effects: @escaping @Sendable (Request) -> Events
    ) -> Feedback where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        react(wanted: { Array(requests($0)) }) { request, emit in
            await forward(effects(request), to: emit)
        }
    }

    /// Runs the async step `effect` once per request in the set `requests` derives from
    /// the state; an event is applied unless its request left the set first.
    public static func react<Request: Hashable & Sendable>(
        requests: @escaping @Sendable (State) -> Set<Request>,
        effect: @escaping @Sendable (Request) async -> Event?
    ) -> Feedback {
        react(wanted: { Array(requests($0)) }) { request, emit in
            if let event = await effect(request) { emit(event) }
        }
    }

    /// The runner of the single-request forms. Inlined where `Request` is known, so the
    /// per-state comparison is specialised there: the runner itself only sees whether to
    /// keep, cancel, or start an (already bound) effect.
    @inlinable
    static func react<Request: Equatable & Sendable>(
        request: @escaping @Sendable (State) -> Request?,
        bind: @escaping @Sendable (Request) -> ReactChange<Event>.Effect
    ) -> Feedback {
        Feedback { context in
            // One `last` per started loop: each run of the feedback begins asking for nothing.
            let last = ReactLastRequest<Request>()
            return SingleReactRunner(context: context) { (state: State) -> ReactChange<Event> in
                let wanted = request(state)
                if wanted == last.request { return .keep }
                last.request = wanted
                guard let wanted else { return .cancel }
                return .start(bind(wanted))
            }
        }
    }

    /// The runner of the Set forms: `wanted` lists the requests a state asks for.
    private static func react<Request: Equatable & Sendable>(
        wanted: @escaping @Sendable (State) -> [Request],
        effect: @escaping ReactRunner<State, Request, Event>.Effect
    ) -> Feedback {
        Feedback { context in ReactRunner(requests: wanted, effect: effect, context: context) }
    }
}
