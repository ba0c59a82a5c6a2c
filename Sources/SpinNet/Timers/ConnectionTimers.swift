/// Which timeout ended a connection. The HTTP layer hears it in
/// `ConnectionHandler.didTimeOut(_:on:)` before the connection closes, and may write a
/// last response (408 for `.requestHead` and `.bodyTooSlow`, RFC 9110 §15.5.9) or a
/// WebSocket close frame (1001 for `.streamIdle`, RFC 6455 §7.4.1) in that callback.
package enum TimeoutKind: Sendable, Hashable {
    /// Not a byte of a request arrived: within `requestHeadTimeout` of the connection
    /// opening (this covers the TLS handshake), or within `keepAliveTimeout` of the
    /// previous response. Nothing was asked, so nothing is answered; unless the handler
    /// writes a last word, the connection closes without lingering (no response is in
    /// flight for a reset to destroy) and its slot is free at once.
    case idle
    /// A request head was not complete within `requestHeadTimeout`: of the connection
    /// opening for the first request, of its first byte for a later one (slowloris).
    case requestHead
    /// A request body arrived slower than `minimumBodyRate` after the grace period.
    case bodyTooSlow
    /// Output stayed pending without any progress for `writeStallTimeout` (a peer that
    /// stopped reading).
    case writeStalled
    /// No byte in either direction for `streamIdleTimeout` in streaming mode
    /// (WebSocket, SSE, raw byte streams).
    case streamIdle
    /// A closing connection (`closeAfterFlush`, lingering close) did not finish within
    /// `lingerTimeout`; it is force-closed.
    case closing
}

/// Whether a connection may serve another request after the one whose head just
/// completed. The HTTP layer answers `.closeAfterResponse` with `Connection: close`.
package enum KeepAliveDecision: Sendable, Hashable {
    case keepAlive
    /// `maxRequestsPerConnection` reached (RFC 9112 §9.6: the server signals close).
    case closeAfterResponse
}

/// What the timer state machine asks its driver to do when checked.
package enum TimerAction: Sendable, Hashable {
    case none
    case timedOut(TimeoutKind)
}

/// The per-connection timeout logic as a pure state machine over an instant type, in
/// the Hummingbird `HTTPConnectionStateHandler.StateMachine` manner: the connection
/// feeds it events with the current instant and arms one Dispatch timer at
/// `nextDeadline`; tests drive it with a manual clock and no socket.
///
/// Phases: `idle` (waiting for a request) → `readingHead` (first byte seen, or
/// `requestHeadStarted`) → `readingBody` (head complete with a body) → `processing`
/// (request read, the application answers: no read deadline, a long poll is fine) →
/// `idle` again on `responseCompleted`. `streaming` replaces all of them after an
/// upgrade; `closing` is terminal (it starts when a closing connection has flushed, or
/// at a timeout). While idle with output still leaving, the idle clock waits for the
/// output to drain.
///
/// The first request head is due `requestHeadTimeout` after the connection opened,
/// whether or not a byte came before: a connection that never sends anything holds
/// its slot no longer than a slow one (1,024 silent sockets must not lock every
/// client out for minutes). Later heads are due `requestHeadTimeout` after their first
/// byte, and the wait for that byte is `keepAliveTimeout`. Independently of the phase, output that makes no
/// progress for `writeStallTimeout` times out.
package struct ConnectionTimers<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    /// The phase of the request cycle, with the instants its deadline depends on.
    package enum Phase: Sendable, Equatable {
        case idle(since: Instant, servedRequests: Bool)
        case readingHead(since: Instant)
        case readingBody(since: Instant, received: Int)
        case processing
        case streaming(lastActivity: Instant)
        case closing(since: Instant)
    }

    package private(set) var phase: Phase
    /// Request heads completed on this connection.
    package private(set) var requestCount = 0
    /// When pending output last made progress (or first became pending); nil when drained.
    package private(set) var outputStalledSince: Instant?
    package let limits: ConnectionLimits

    /// A machine for a connection opened at `now`.
    package init(limits: ConnectionLimits, now: Instant) {
        self.limits = limits
        self.phase = .idle(since: now, servedRequests: false)
    }

    /// Bytes of application data (plaintext, after TLS) arrived. The first byte while
    /// idle between requests starts the request-head clock; the first request's clock
    /// has run since the connection opened.
    package mutating func bytesReceived(_ count: Int, now: Instant) {
        guard count > 0 else { return }
        switch phase {
        case .idle:
            startHead(now: now)
        case .readingBody(let since, let received):
            phase = .readingBody(since: since, received: received + count)
        case .streaming:
            phase = .streaming(lastActivity: now)
        case .readingHead, .processing, .closing:
            break
        }
    }

    /// The HTTP layer started a request head explicitly (for example with bytes of a
    /// pipelined request already buffered). No effect unless idle.
    package mutating func requestHeadStarted(now: Instant) {
        startHead(now: now)
    }

    private mutating func startHead(now: Instant) {
        guard case .idle(let since, let served) = phase else { return }
        phase = .readingHead(since: served ? now : since)
    }

    /// A request head is complete. Returns whether the connection may be kept alive
    /// after this request (`maxRequestsPerConnection`).
    package mutating func requestHeadCompleted(expectsBody: Bool, now: Instant) -> KeepAliveDecision {
        if case .closing = phase { return .closeAfterResponse }
        requestCount += 1
        phase = expectsBody ? .readingBody(since: now, received: 0) : .processing
        return requestCount >= limits.maxRequestsPerConnection ? .closeAfterResponse : .keepAlive
    }

    /// The request body is complete: the body-rate clock stops.
    package mutating func requestBodyCompleted(now: Instant) {
        if case .readingBody = phase { phase = .processing }
    }

    /// The response is written: the connection waits for the next request with the
    /// keep-alive timeout.
    package mutating func responseCompleted(now: Instant) {
        switch phase {
        case .closing, .streaming: break
        default: phase = .idle(since: now, servedRequests: true)
        }
    }

    /// The connection became a stream (WebSocket, SSE): only `streamIdleTimeout` applies.
    package mutating func streamingStarted(now: Instant) {
        if case .closing = phase { return }
        phase = .streaming(lastActivity: now)
    }

    /// The connection is closing (flush then close, or lingering): it gets
    /// `lingerTimeout` to finish before it is force-closed.
    package mutating func closingStarted(now: Instant) {
        if case .closing = phase { return }
        phase = .closing(since: now)
    }

    /// Output was queued (`pendingAfter` true) or flushed. `progressed` says whether
    /// any byte left; progress restarts the stall clock and counts as stream activity.
    package mutating func outputChanged(pendingAfter: Bool, progressed: Bool, now: Instant) {
        if pendingAfter {
            if progressed || outputStalledSince == nil { outputStalledSince = now }
        } else {
            if outputStalledSince != nil, case .idle(_, let served) = phase, served {
                // The keep-alive wait starts when the last response has left (the first
                // request's deadline runs from the accept and is never pushed back).
                phase = .idle(since: now, servedRequests: served)
            }
            outputStalledSince = nil
        }
        if progressed, case .streaming = phase { phase = .streaming(lastActivity: now) }
    }

    /// The earliest instant at which `check` can time out, or nil when no deadline
    /// applies (processing with nothing pending).
    package var nextDeadline: Instant? {
        var deadline: Instant?
        switch phase {
        case .idle(let since, let served):
            // While a response is still leaving, only the write-stall timeout applies.
            deadline = outputStalledSince != nil ? nil : idleDeadline(since: since, served: served)
        case .readingHead(let since):
            deadline = since.advanced(by: limits.requestHeadTimeout)
        case .readingBody(let since, let received):
            deadline = bodyDeadline(since: since, received: received)
        case .processing:
            deadline = nil
        case .streaming(let last):
            deadline = last.advanced(by: limits.streamIdleTimeout)
        case .closing(let since):
            deadline = since.advanced(by: limits.lingerTimeout)
        }
        if let stalled = outputStalledSince {
            let stall = stalled.advanced(by: limits.writeStallTimeout)
            deadline = deadline.map { min($0, stall) } ?? stall
        }
        return deadline
    }

    /// Checks the deadlines at `now`. The first timeout that has passed wins; the
    /// phase's own timeout is reported before a write stall.
    package func check(now: Instant) -> TimerAction {
        switch phase {
        case .idle(let since, let served):
            if outputStalledSince == nil, now >= idleDeadline(since: since, served: served) {
                return .timedOut(.idle)
            }
        case .readingHead(let since):
            if now >= since.advanced(by: limits.requestHeadTimeout) { return .timedOut(.requestHead) }
        case .readingBody(let since, let received):
            if let deadline = bodyDeadline(since: since, received: received), now >= deadline {
                return .timedOut(.bodyTooSlow)
            }
        case .processing:
            break
        case .streaming(let last):
            if now >= last.advanced(by: limits.streamIdleTimeout) { return .timedOut(.streamIdle) }
        case .closing(let since):
            if now >= since.advanced(by: limits.lingerTimeout) { return .timedOut(.closing) }
        }
        if let stalled = outputStalledSince, now >= stalled.advanced(by: limits.writeStallTimeout) {
            return .timedOut(.writeStalled)
        }
        return .none
    }

    /// When an idle connection times out: `keepAliveTimeout` after a response, the
    /// first request head's own deadline on a connection that has served nothing.
    private func idleDeadline(since: Instant, served: Bool) -> Instant {
        since.advanced(by: served ? limits.keepAliveTimeout : limits.requestHeadTimeout)
    }

    /// The instant by which `received` bytes fall under the minimum rate: after the
    /// grace period, a body must average at least `minimumBodyRate` bytes/s since its
    /// head completed (Kestrel's MinRequestBodyDataRate rule).
    private func bodyDeadline(since: Instant, received: Int) -> Instant? {
        guard limits.minimumBodyRate > 0 else { return nil }
        let earned = Duration.seconds(Double(received) / Double(limits.minimumBodyRate))
        return since.advanced(by: max(limits.bodyRateGracePeriod, earned))
    }
}
