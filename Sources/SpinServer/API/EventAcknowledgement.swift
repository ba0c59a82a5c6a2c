import SpinCore
import SpinConcurrency
import SpinWire
import Tracing

/// Events in, acknowledgements out: a batch decoded, submitted to its Spin all or
/// nothing, and acknowledged once it is applied and durable (`POST .../events`,
/// `POST .../resume` and client events on a stream). The router finds the Spin and admits
/// the caller; this service takes it from there.
package struct EventAcknowledgement: Sendable {
    /// Where apply latency is observed.
    let metrics: Metrics
    /// Where acknowledgements wait for the journal.
    let feeds: SpinFeeds
    /// How many events a Spin's inbox holds and how long a refused client waits.
    let limits: APIRouter.Limits

    /// `POST /v1/spins/{name}/events`: accept, apply, then acknowledge.
    /// `origin`: the caller's subject, journaled with the events.
    func post(_ request: HTTPRequest, to spin: any HostedSpin, from origin: String?, trace: RequestTrace?,
              respond: @escaping @Sendable (APIResponse) -> Void) {
        let wait: Bool
        switch request.target.queryParameter("wait") {
        case nil, "false", "0": wait = false
        case "true", "1", "": wait = true
        case let other?:
            return respond(.error(.badRequest("query parameter wait must be true or false, not \"\(other)\"")))
        }
        guard let batch = Self.decodeEvents(request, for: spin, from: origin, refusing: respond) else { return }
        submit(batch, to: spin, withState: wait, trace: trace,
               completion: .post(count: batch.count, wait: wait, respond: respond))
    }

    /// The request's events, as `spin` decodes them, from `origin`; nil once `respond`
    /// refused them: 415 unless JSON, 400/422 as `decodeEvents` says.
    private static func decodeEvents(_ request: HTTPRequest, for spin: any HostedSpin, from origin: String?,
                                     refusing respond: @Sendable (APIResponse) -> Void) -> EventBatch? {
        let contentType = request.headers["Content-Type"]
        guard MediaType.isJSON(contentType) else {
            respond(.error(.unsupportedMediaType(contentType)))
            return nil
        }
        do {
            var batch = try spin.decodeEvents(json: request.body)
            batch.origin = origin
            return batch
        } catch {
            respond(.error(error))
            return nil
        }
    }

    /// `POST /v1/spins/{name}/resume`: runs a suspended Spin again. A body (one event or
    /// an array, as for `.../events`) is applied first, before the feedbacks run again, so
    /// that the correction of a runaway cannot lose the race against it; the answer then
    /// waits until those events are applied and durable. A running Spin stays running
    /// (and takes the body's events as a POST of them would).
    func resume(_ request: HTTPRequest, _ spin: any HostedSpin, from origin: String?,
                respond: @escaping @Sendable (APIResponse) -> Void) {
        let resumed: @Sendable () -> APIResponse = {
            .json(200, .object([("name", .string(spin.name)), ("status", .string(spin.status.rawValue))]))
        }
        guard !request.body.isEmpty else {
            spin.resume(applying: nil) { _ in }
            return respond(resumed())
        }
        guard let batch = Self.decodeEvents(request, for: spin, from: origin, refusing: respond) else { return }
        guard batch.count <= limits.inbox else {
            return respond(.error(.batchTooLarge(count: batch.count, limit: limits.inbox)))
        }
        let done: @Sendable (Result<AppliedEvent, APIError>) -> Void = { result in
            switch result {
            case .success: respond(resumed())
            case .failure(let error): respond(.error(error))
            }
        }
        if !spin.resume(applying: batch, onApplied: whenApplied(spin, feeds.feed(spin.name), done: done)) {
            submit(batch, to: spin, done: done)
        }
    }

    /// Enqueues a decoded batch, all or nothing, and calls `done` once its last event is
    /// applied and durable, or with the reason it was refused. Used by `POST .../events`
    /// and by client events on a stream; `trace` gets the `apply` and `durable` spans and
    /// starts `acknowledge`.
    package func submit(_ batch: EventBatch, to spin: any HostedSpin, withState: Bool = false, trace: RequestTrace? = nil,
                        done: @escaping @Sendable (Result<AppliedEvent, APIError>) -> Void) {
        submit(batch, to: spin, withState: withState, trace: trace, completion: .done(done))
    }

    private func submit(_ batch: EventBatch, to spin: any HostedSpin, withState: Bool, trace: RequestTrace?,
                        completion: PendingAcknowledgement.Completion) {
        guard batch.count <= limits.inbox else {
            return completion.finish(.failure(.batchTooLarge(count: batch.count, limit: limits.inbox)))
        }
        let feed = feeds.feed(spin.name)
        if let refusal = Self.refusal(of: feed, spin.name, retryAfter: limits.retryAfterSeconds) {
            return completion.finish(.failure(refusal))
        }
        // Applied events wait in the feed until the disk has them. A disk that stalls
        // must not let clients that do not wait for acknowledgements (a WebSocket sending
        // event after event) pile them up without bound: past four inboxes' worth, wait.
        guard feed.pendingCount + batch.count <= limits.inbox * 4 else {
            return completion.finish(.failure(.inboxFull(spin: spin.name, retryAfter: limits.retryAfterSeconds)))
        }
        let apply = trace?.child("apply", spin: spin.name)
        let pending = PendingAcknowledgement(spin: spin, feed: feed, metrics: metrics, trace: trace, apply: apply,
                                             completion: completion)
        let outcome = spin.submit(batch, inboxLimit: limits.inbox, withState: withState, onApplied: pending.applied)
        if outcome != .accepted { apply?.end() }
        switch outcome {
        case .accepted: break
        case .inboxFull: completion.finish(.failure(.inboxFull(spin: spin.name, retryAfter: limits.retryAfterSeconds)))
        case .stopped: completion.finish(.failure(.spinStopped(spin.name, applying: false)))
        case .suspended: completion.finish(.failure(Self.suspended(spin)))
        }
    }

    /// Why a suspended Spin refuses events: held while its storage fails (503
    /// `storage_unavailable`: the feed's failure is cleared a moment before the Spin is
    /// let go, and a request in between is told to retry, as during the failure), or
    /// suspended by its runaway guard or a client (409 `spin_suspended`).
    static func suspended(_ spin: any HostedSpin) -> APIError {
        spin.isHeldForStorage ? .storageUnavailable(spin: spin.name, "writes fail", retryAfter: 1) : .spinSuspended(spin.name)
    }

    /// Why a failing feed refuses events: its storage fails (503 `storage_unavailable`),
    /// or its Spin goes back from a transition that did not encode (500
    /// `encoding_failed`); nil while it does not fail. A feed that ended (this cluster
    /// node stopped serving the Spin, `SpinFeeds.retire`) refuses them as stopped
    /// (`spinStopped`, reroutable): they follow the Spin to its owner.
    static func refusal(of feed: SpinFeed, _ spin: String, retryAfter: Int) -> APIError? {
        guard let failure = feed.failure else { return nil }
        if feed.hasEnded { return .spinStopped(spin, applying: false) }
        if case .unencodable = failure { return APIError(failure) }
        return .storageUnavailable(spin: spin, "writes fail", retryAfter: retryAfter)
    }

    /// What happens once a batch's last event is applied (or not): the apply latency is
    /// observed, and `done` is called once the event is durable, or with why it was not
    /// applied (the Spin suspended or stopped first).
    func whenApplied(_ spin: any HostedSpin, _ feed: SpinFeed,
                     done: @escaping @Sendable (Result<AppliedEvent, APIError>) -> Void)
        -> @Sendable (AppliedEvent?) -> Void {
        PendingAcknowledgement(spin: spin, feed: feed, metrics: metrics, trace: nil, apply: nil,
                               completion: .done(done)).applied
    }

    /// 202 `{"accepted":k,"sequence":N}` (k counts every event of the batch, ignored ones
    /// too, and `"ignored":m` is added when the reducer declined m > 0 of them), or with
    /// `?wait=true` 200 `{"sequence":N,"state":..,"replies":[..]}`, one reply per event.
    fileprivate static func acknowledge(_ applied: AppliedEvent, count: Int, wait: Bool,
                                        respond: @Sendable (APIResponse) -> Void) {
        if wait {
            var response = APIResponse.json(200, .object([("sequence", .number(String(applied.sequence))),
                                                           ("state", applied.state ?? .null), ("replies", applied.replies)]))
            response.stages = applied.stages
            respond(response)
        } else {
            // Written as text: every POST answers it, and a `JSONValue` tree boxes each value.
            var body: [UInt8] = []
            body.reserveCapacity(64)  // room for every member: one allocation
            body += #"{"accepted":"#.utf8
            body += String(count).utf8
            body += #","sequence":"#.utf8
            body += String(applied.sequence).utf8
            if !applied.ignored.isEmpty {
                body += #","ignored":"#.utf8
                body += String(applied.ignored.count).utf8
            }
            body.append(UInt8(ascii: "}"))
            var response = APIResponse.json(202, .raw(body))
            response.stages = applied.stages
            respond(response)
        }
    }
}

/// A batch on its way from submitted to acknowledged: what happens once it is applied,
/// then once it is durable, then the answer. One object per request where each step was a
/// closure with a context of its own (three allocations per POST); `applied` and
/// `durable` are handed on as its methods, whose closures take the object itself as
/// their context.
///
/// `@unchecked Sendable`: `transition`, `appliedAt` and `durableSpan` are written once, in
/// `applied`, before `whenDurable` takes the object under the feed's lock, and read in
/// `durable`, which is called after that lock or on the same thread.
final class PendingAcknowledgement: @unchecked Sendable {
    /// How the outcome is told.
    enum Completion: Sendable {
        /// `POST .../events`: the 202 (or with `wait`, 200) answer, or the error's.
        case post(count: Int, wait: Bool, respond: @Sendable (APIResponse) -> Void)
        /// Anyone else (`resume`, client events on a stream).
        case done(@Sendable (Result<AppliedEvent, APIError>) -> Void)

        func finish(_ result: Result<AppliedEvent, APIError>) {
            switch self {
            case .done(let done): done(result)
            case .post(let count, let wait, let respond):
                switch result {
                case .success(let applied): EventAcknowledgement.acknowledge(applied, count: count, wait: wait, respond: respond)
                case .failure(let error): respond(.error(error))
                }
            }
        }
    }

    private let spin: any HostedSpin
    private let feed: SpinFeed
    private let metrics: Metrics
    private let trace: RequestTrace?
    private let apply: (any Span)?
    private let completion: Completion
    /// When the batch was accepted (`Monotonic`).
    private let accepted: UInt64
    private var transition: AppliedEvent?
    private var appliedAt: UInt64 = 0
    private var durableSpan: (any Span)?

    init(spin: any HostedSpin, feed: SpinFeed, metrics: Metrics, trace: RequestTrace?, apply: (any Span)?,
         completion: Completion) {
        self.spin = spin
        self.feed = feed
        self.metrics = metrics
        self.trace = trace
        self.apply = apply
        self.completion = completion
        self.accepted = Monotonic.nanoseconds
    }

    /// The batch's last event was applied (`transition`), or the batch was not (nil: the
    /// Spin suspended or stopped first, or its storage failed).
    func applied(_ transition: AppliedEvent?) {
        apply?.end()
        guard let transition else {
            if let refusal = EventAcknowledgement.refusal(of: feed, spin.name, retryAfter: 1) {
                return completion.finish(.failure(refusal))
            }
            if spin.status == .suspended { return completion.finish(.failure(EventAcknowledgement.suspended(spin))) }
            return completion.finish(.failure(.spinStopped(spin.name, applying: true)))
        }
        let applied = Monotonic.nanoseconds
        metrics.observeApplyLatency(seconds: Double(Monotonic.elapsed(from: accepted, to: applied)) / 1e9)
        self.transition = transition
        self.appliedAt = applied
        if let trace {
            let durable = trace.child("durable", spin: spin.name)
            durable.attributes[RequestTrace.Attribute.sequence] = Int(clamping: transition.sequence)
            durableSpan = durable
        }
        feed.whenDurable(transition.sequence, durable)
    }

    /// The applied event is durable, or will not be (`error`).
    private func durable(_ error: DurabilityError?) {
        durableSpan?.end()
        if let error { return completion.finish(.failure(APIError(error))) }
        guard var transition else { return }
        trace?.acknowledging(spin: spin.name)
        transition.stages = EventStages(accepted: accepted, applied: appliedAt, durable: Monotonic.nanoseconds)
        completion.finish(.success(transition))
    }
}
