/// Which timeout ended a connection (`CloseReason.timedOut`).
package enum TimeoutKind: Sendable, Hashable {
    /// The handler's own deadline (`Connection.setDeadline`) passed. The handler heard
    /// `didReachDeadline` first and may have written a last word there (an HTTP 408, a
    /// WebSocket close). When it wrote nothing and no output was pending, the connection
    /// closed without lingering: there is no response a reset could destroy, and its slot
    /// is free at once (1,024 silent sockets must not lock every client out).
    case deadline
    /// Output stayed pending without any progress for `writeStallTimeout` (a peer that
    /// stopped reading).
    case writeStalled
    /// A closing connection (`closeAfterFlush`, lingering close) did not finish within
    /// `lingerTimeout`; it is force-closed.
    case closing
}

/// A deadline a handler arms on its connection (`Connection.setDeadline`) for its
/// protocol's own timeouts. SpinNet knows only these byte-level notions; what they mean
/// (a request head due, a keep-alive wait, an idle stream) is the handler's business.
package enum ConnectionDeadline<Instant: InstantProtocol>: Sendable, Hashable where Instant.Duration == Duration {
    /// No deadline: the connection may stay silent (an answer being prepared, a long poll).
    case none
    /// At this instant.
    case at(Instant)
    /// After this long without a byte in either direction, counted from when it was set,
    /// the last byte received and the last byte that left (an idle stream).
    case inactivity(Duration)
    /// This long after output last drained, counted from when it was set at the
    /// earliest; never while output is pending, where only `writeStallTimeout` applies
    /// (a wait that starts once the last answer has left, however slowly it leaves).
    case afterDrain(Duration)
}

/// The per-connection deadlines as a pure state machine over an instant type: the
/// handler's deadline (`ConnectionDeadline`), the write stall, the closing linger, and
/// the handler's alarm (a wake-up that closes nothing: a stream's next ping).
/// The connection feeds it byte-level facts with the current instant and arms one
/// deadline in its event loop at `nextDeadline`; tests drive it with a manual clock and no socket.
///
/// While closing, the linger deadline replaces the handler's. Independently, output that
/// makes no progress for `writeStallTimeout` times out; the handler's deadline (or the
/// linger) is reported before a write stall when both have passed.
package struct ConnectionDeadlines<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// The handler's deadline, as last set.
    package private(set) var deadline: ConnectionDeadline<Instant> = .none
    /// When `deadline` was set.
    private var setAt: Instant
    /// The last byte in or out (kept only while `deadline` is `.inactivity`).
    private var lastActivity: Instant
    /// When output last left with nothing pending after it.
    private var lastDrained: Instant
    /// When pending output last made progress (or first became pending); nil when drained.
    package private(set) var outputStalledSince: Instant?
    /// When the connection started closing (flushed and lingering, or timed out).
    package private(set) var closingSince: Instant?
    package let writeStallTimeout: Duration
    package let lingerTimeout: Duration
    /// The handler's alarm (`Connection.setAlarm`), if armed; never while closing.
    package private(set) var alarm: Instant?

    /// Deadlines for a connection opened at `now`, with no handler deadline yet.
    package init(writeStallTimeout: Duration, lingerTimeout: Duration, now: Instant) {
        self.writeStallTimeout = writeStallTimeout
        self.lingerTimeout = lingerTimeout
        self.setAt = now
        self.lastActivity = now
        self.lastDrained = now
    }

    /// Replaces the handler's deadline.
    package mutating func set(_ deadline: ConnectionDeadline<Instant>, now: Instant) {
        self.deadline = deadline
        setAt = now
    }

    /// Arms the handler's alarm at `instant`, replacing the previous one; nil disarms it.
    package mutating func setAlarm(_ instant: Instant?) {
        alarm = instant
    }

    /// True, once, when the alarm has passed at `now` (and the connection is not
    /// closing): it is disarmed then.
    package mutating func takeAlarm(now: Instant) -> Bool {
        guard closingSince == nil, let alarm, now >= alarm else { return false }
        self.alarm = nil
        return true
    }

    /// Whether received bytes matter (`bytesReceived`): the caller skips reading the
    /// clock for each read otherwise.
    package var tracksInput: Bool {
        if case .inactivity = deadline { true } else { false }
    }

    /// Bytes of application data (plaintext, after TLS) arrived.
    package mutating func bytesReceived(now: Instant) {
        lastActivity = now
    }

    /// Output was queued (`pendingAfter` true) or flushed. `progressed` says whether
    /// any byte left; progress restarts the stall clock and counts as activity.
    package mutating func outputChanged(pendingAfter: Bool, progressed: Bool, now: Instant) {
        if pendingAfter {
            if progressed || outputStalledSince == nil { outputStalledSince = now }
        } else {
            if progressed || outputStalledSince != nil { lastDrained = now }
            outputStalledSince = nil
        }
        if progressed { lastActivity = now }
    }

    /// The connection is closing: it gets `lingerTimeout` to finish before it is
    /// force-closed, and the handler's deadline no longer applies.
    package mutating func closingStarted(now: Instant) {
        if closingSince == nil { closingSince = now }
    }

    /// The earliest instant at which `check` can time out or the alarm goes off, or nil
    /// when neither can.
    package var nextDeadline: Instant? {
        var result = ownDeadline
        if closingSince == nil, let alarm {
            result = result.map { min($0, alarm) } ?? alarm
        }
        if let stalled = outputStalledSince {
            let stall = stalled.advanced(by: writeStallTimeout)
            result = result.map { min($0, stall) } ?? stall
        }
        return result
    }

    /// Checks the deadlines at `now`: the timeout that has passed, or nil.
    package func check(now: Instant) -> TimeoutKind? {
        if let own = ownDeadline, now >= own { return closingSince == nil ? .deadline : .closing }
        if let stalled = outputStalledSince, now >= stalled.advanced(by: writeStallTimeout) { return .writeStalled }
        return nil
    }

    /// The linger deadline while closing, the handler's otherwise.
    private var ownDeadline: Instant? {
        if let closingSince { return closingSince.advanced(by: lingerTimeout) }
        switch deadline {
        case .none:
            return nil
        case .at(let instant):
            return instant
        case .inactivity(let limit):
            return max(setAt, lastActivity).advanced(by: limit)
        case .afterDrain(let limit):
            return outputStalledSince == nil ? max(setAt, lastDrained).advanced(by: limit) : nil
        }
    }
}
