import Testing
@testable import SpinNet

/// A manual clock's instant: tests say exactly when "now" is.
struct ManualInstant: InstantProtocol {
    var offset: Duration
    static let zero = ManualInstant(offset: .zero)
    func advanced(by duration: Duration) -> ManualInstant { ManualInstant(offset: offset + duration) }
    func duration(to other: ManualInstant) -> Duration { other.offset - offset }
    static func < (lhs: ManualInstant, rhs: ManualInstant) -> Bool { lhs.offset < rhs.offset }
}

private func at(_ seconds: Double) -> ManualInstant { ManualInstant(offset: .seconds(seconds)) }

private func makeTimers(
    keepAlive: Duration = .seconds(15), head: Duration = .seconds(10),
    bodyRate: Int = 240, grace: Duration = .seconds(5), maxRequests: Int = 1000,
    writeStall: Duration = .seconds(30), stream: Duration = .seconds(120), linger: Duration = .seconds(2)
) -> ConnectionTimers<ManualInstant> {
    ConnectionTimers(
        limits: ConnectionLimits(
            keepAliveTimeout: keepAlive, requestHeadTimeout: head,
            minimumBodyRate: bodyRate, bodyRateGracePeriod: grace, maxRequestsPerConnection: maxRequests,
            writeStallTimeout: writeStall, streamIdleTimeout: stream, lingerTimeout: linger),
        now: .zero)
}

@Suite struct ConnectionTimersTests {
    @Test func newConnection_WithoutAnyByte_TimesOutIdleAtRequestHeadTimeout() {
        let timers = makeTimers(keepAlive: .seconds(15), head: .seconds(10))
        #expect(timers.nextDeadline == at(10))
        #expect(timers.check(now: at(9.999)) == .none)
        #expect(timers.check(now: at(10)) == .timedOut(.idle))
    }

    @Test func firstRequestHead_IsDueRequestHeadTimeoutAfterAccept_NotAfterItsFirstByte() {
        var timers = makeTimers(head: .seconds(10))
        timers.bytesReceived(5, now: at(3))
        #expect(timers.phase == .readingHead(since: at(0)))
        #expect(timers.nextDeadline == at(10))
        timers.bytesReceived(5, now: at(9))  // more head bytes do not extend the deadline
        #expect(timers.check(now: at(9.9)) == .none)
        #expect(timers.check(now: at(10)) == .timedOut(.requestHead))
    }

    @Test func firstRequestHead_ExplicitStart_KeepsTheAcceptDeadline() {
        var timers = makeTimers(head: .seconds(10))
        timers.requestHeadStarted(now: at(7))
        #expect(timers.nextDeadline == at(10))
    }

    @Test func firstHeadComplete_InTime_ThenLaterHeadGetsItsOwnClockFromItsFirstByte() {
        var timers = makeTimers(keepAlive: .seconds(15), head: .seconds(10))
        timers.bytesReceived(20, now: at(9))
        #expect(timers.requestHeadCompleted(expectsBody: false, now: at(9.5)) == .keepAlive)
        timers.responseCompleted(now: at(10))
        #expect(timers.nextDeadline == at(25))  // keep-alive wait for the next request
        timers.bytesReceived(5, now: at(20))
        #expect(timers.phase == .readingHead(since: at(20)))
        #expect(timers.check(now: at(29.9)) == .none)
        #expect(timers.check(now: at(30)) == .timedOut(.requestHead))
    }

    @Test func completeHeadWithoutBody_WhileProcessing_HasNoDeadline() {
        var timers = makeTimers()
        timers.bytesReceived(20, now: at(1))
        #expect(timers.requestHeadCompleted(expectsBody: false, now: at(1)) == .keepAlive)
        #expect(timers.phase == .processing)
        #expect(timers.nextDeadline == nil)
        #expect(timers.check(now: at(10_000)) == .none)
    }

    @Test func responseCompleted_StartsKeepAliveTimeout() {
        var timers = makeTimers(keepAlive: .seconds(15))
        timers.bytesReceived(20, now: at(1))
        _ = timers.requestHeadCompleted(expectsBody: false, now: at(1))
        timers.responseCompleted(now: at(4))
        #expect(timers.phase == .idle(since: at(4), servedRequests: true))
        #expect(timers.check(now: at(18.9)) == .none)
        #expect(timers.check(now: at(19)) == .timedOut(.idle))
    }

    @Test func explicitHeadStart_WhileIdleAfterAResponse_StartsHeadClock() {
        var timers = makeTimers(head: .seconds(10))
        _ = timers.requestHeadCompleted(expectsBody: false, now: at(0))
        timers.responseCompleted(now: at(1))
        timers.requestHeadStarted(now: at(2))
        #expect(timers.nextDeadline == at(12))
    }

    @Test func body_AtMinimumRate_StaysAlive_BelowIt_TimesOutAfterGrace() {
        var timers = makeTimers(bodyRate: 100, grace: .seconds(5))
        timers.bytesReceived(10, now: at(0))
        _ = timers.requestHeadCompleted(expectsBody: true, now: at(0))
        // Nothing received yet: the grace period is all it gets.
        #expect(timers.nextDeadline == at(5))
        timers.bytesReceived(800, now: at(4))  // 800 B earn 8 s at 100 B/s
        #expect(timers.nextDeadline == at(8))
        #expect(timers.check(now: at(7.9)) == .none)
        #expect(timers.check(now: at(8)) == .timedOut(.bodyTooSlow))
    }

    @Test func bodyCompleted_StopsBodyRateClock() {
        var timers = makeTimers(bodyRate: 100, grace: .seconds(5))
        timers.bytesReceived(10, now: at(0))
        _ = timers.requestHeadCompleted(expectsBody: true, now: at(0))
        timers.requestBodyCompleted(now: at(1))
        #expect(timers.phase == .processing)
        #expect(timers.check(now: at(100)) == .none)
    }

    @Test func zeroBodyRate_DisablesBodyDeadline() {
        var timers = makeTimers(bodyRate: 0)
        _ = timers.requestHeadCompleted(expectsBody: true, now: at(0))
        #expect(timers.nextDeadline == nil)
    }

    @Test func lastAllowedRequest_AnswersCloseAfterResponse() {
        var timers = makeTimers(maxRequests: 2)
        #expect(timers.requestHeadCompleted(expectsBody: false, now: at(0)) == .keepAlive)
        timers.responseCompleted(now: at(1))
        #expect(timers.requestHeadCompleted(expectsBody: false, now: at(2)) == .closeAfterResponse)
        #expect(timers.requestCount == 2)
    }

    @Test func pendingOutputWithoutProgress_TimesOutAsWriteStalled_ProgressRestartsClock() {
        var timers = makeTimers(writeStall: .seconds(30))
        _ = timers.requestHeadCompleted(expectsBody: false, now: at(0))
        timers.outputChanged(pendingAfter: true, progressed: false, now: at(1))
        #expect(timers.nextDeadline == at(31))
        timers.outputChanged(pendingAfter: true, progressed: false, now: at(20))  // no progress: clock keeps running
        #expect(timers.nextDeadline == at(31))
        timers.outputChanged(pendingAfter: true, progressed: true, now: at(25))
        #expect(timers.check(now: at(54.9)) == .none)
        #expect(timers.check(now: at(55)) == .timedOut(.writeStalled))
        timers.outputChanged(pendingAfter: false, progressed: true, now: at(56))
        #expect(timers.nextDeadline == nil)
    }

    @Test func keepAliveWait_WhileResponseStillLeaving_StartsWhenDrained() {
        var timers = makeTimers(keepAlive: .seconds(15), writeStall: .seconds(30))
        _ = timers.requestHeadCompleted(expectsBody: false, now: at(0))
        timers.outputChanged(pendingAfter: true, progressed: true, now: at(0))
        timers.responseCompleted(now: at(0))
        #expect(timers.check(now: at(20)) == .none)  // a slow download is not "idle"
        timers.outputChanged(pendingAfter: false, progressed: true, now: at(40))
        #expect(timers.nextDeadline == at(55))
        #expect(timers.check(now: at(55)) == .timedOut(.idle))
    }

    @Test func streaming_TrafficEitherWay_ResetsStreamIdle() {
        var timers = makeTimers(stream: .seconds(120))
        timers.streamingStarted(now: at(0))
        timers.bytesReceived(10, now: at(100))
        #expect(timers.nextDeadline == at(220))
        timers.outputChanged(pendingAfter: false, progressed: true, now: at(200))
        #expect(timers.check(now: at(319)) == .none)
        #expect(timers.check(now: at(320)) == .timedOut(.streamIdle))
        // A request-cycle call does not leave streaming mode.
        timers.responseCompleted(now: at(321))
        #expect(timers.phase == .streaming(lastActivity: at(200)))
    }

    @Test func closing_TimesOutAfterLinger_AndIsTerminal() {
        var timers = makeTimers(linger: .seconds(2))
        timers.closingStarted(now: at(5))
        timers.streamingStarted(now: at(6))
        timers.bytesReceived(1, now: at(6))
        #expect(timers.phase == .closing(since: at(5)))
        #expect(timers.requestHeadCompleted(expectsBody: false, now: at(6)) == .closeAfterResponse)
        #expect(timers.check(now: at(7)) == .timedOut(.closing))
    }
}

@Suite struct ConnectionTimersPropertyTests {
    /// Random event sequences: `check` never fires before `nextDeadline` and always
    /// fires at it, so one Dispatch timer armed at `nextDeadline` is enough.
    @Test(arguments: [1 as UInt64, 2, 3, 4, 5, 6, 7, 8])
    func randomEvents_CheckFiresExactlyFromNextDeadline(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var timers = ConnectionTimers<ManualInstant>(
            limits: ConnectionLimits(
                keepAliveTimeout: .seconds(2), requestHeadTimeout: .seconds(1),
                minimumBodyRate: 100, bodyRateGracePeriod: .seconds(1), maxRequestsPerConnection: 50,
                writeStallTimeout: .seconds(4), streamIdleTimeout: .seconds(5), lingerTimeout: .milliseconds(500)),
            now: .zero)
        var now = ManualInstant.zero
        for _ in 0..<2000 {
            now = now.advanced(by: .milliseconds(Int.random(in: 0...400, using: &random)))
            if let deadline = timers.nextDeadline {
                if now < deadline {
                    #expect(timers.check(now: now) == .none)
                }
                #expect(timers.check(now: deadline) != .none)
            } else {
                #expect(timers.check(now: now.advanced(by: .seconds(3600))) == .none)
            }
            switch Int.random(in: 0..<9, using: &random) {
            case 0: timers.bytesReceived(Int.random(in: 0...300, using: &random), now: now)
            case 1: timers.requestHeadStarted(now: now)
            case 2: _ = timers.requestHeadCompleted(expectsBody: Bool.random(using: &random), now: now)
            case 3: timers.requestBodyCompleted(now: now)
            case 4: timers.responseCompleted(now: now)
            case 5: if Int.random(in: 0..<20, using: &random) == 0 { timers.streamingStarted(now: now) }
            case 6: if Int.random(in: 0..<50, using: &random) == 0 { timers.closingStarted(now: now) }
            default:
                timers.outputChanged(pendingAfter: Bool.random(using: &random),
                                     progressed: Bool.random(using: &random), now: now)
            }
        }
    }
}
