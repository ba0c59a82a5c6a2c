import SpinTesting
import Testing
@testable import SpinNet

/// A manual clock's instant: tests say exactly when "now" is.
typealias ManualInstant = ManualClock.Instant

private func at(_ seconds: Double) -> ManualInstant { ManualInstant(offset: .seconds(seconds)) }

private func makeDeadlines(
    writeStall: Duration = .seconds(30), linger: Duration = .seconds(2)
) -> ConnectionDeadlines<ManualInstant> {
    ConnectionDeadlines(writeStallTimeout: writeStall, lingerTimeout: linger, now: .zero)
}

@Suite struct ConnectionDeadlinesTests {
    @Test func newConnection_WithoutAHandlerDeadline_NeverTimesOut() {
        let deadlines = makeDeadlines()
        #expect(deadlines.nextDeadline == nil)
        #expect(deadlines.check(now: at(10_000)) == nil)
    }

    @Test func alarm_GoesOffOnce_WithoutTimingOut_AndNeverWhileClosing() {
        var deadlines = makeDeadlines()
        deadlines.set(.inactivity(.seconds(120)), now: at(0))
        deadlines.setAlarm(at(30))
        #expect(deadlines.nextDeadline == at(30))  // the earlier of alarm and deadline
        let taken1 = deadlines.takeAlarm(now: at(29.999))
        #expect(!taken1)
        #expect(deadlines.check(now: at(30)) == nil)  // an alarm closes nothing
        let taken2 = deadlines.takeAlarm(now: at(30))
        #expect(taken2)
        let taken3 = deadlines.takeAlarm(now: at(31))
        #expect(!taken3)  // once
        #expect(deadlines.nextDeadline == at(120))
        deadlines.setAlarm(at(60))
        deadlines.setAlarm(nil)
        #expect(deadlines.nextDeadline == at(120))
        deadlines.setAlarm(at(60))
        deadlines.closingStarted(now: at(50))
        #expect(deadlines.nextDeadline == at(52))  // the linger only
        let taken4 = deadlines.takeAlarm(now: at(61))
        #expect(!taken4)
    }

    @Test func fixedDeadline_FiresAtItsInstant_AndIsReplacedBySettingAnother() {
        var deadlines = makeDeadlines()
        deadlines.set(.at(at(10)), now: at(0))
        #expect(deadlines.nextDeadline == at(10))
        deadlines.bytesReceived(now: at(9))  // bytes do not move a fixed deadline
        #expect(deadlines.check(now: at(9.999)) == nil)
        #expect(deadlines.check(now: at(10)) == .deadline)
        deadlines.set(.at(at(30)), now: at(9))
        #expect(deadlines.check(now: at(10)) == nil)
        deadlines.set(.none, now: at(9))
        #expect(deadlines.nextDeadline == nil)
    }

    @Test func inactivity_TrafficEitherWay_PushesItBack() {
        var deadlines = makeDeadlines()
        deadlines.set(.inactivity(.seconds(120)), now: at(0))
        #expect(deadlines.tracksInput)
        deadlines.bytesReceived(now: at(100))
        #expect(deadlines.nextDeadline == at(220))
        deadlines.outputChanged(pendingAfter: false, progressed: true, now: at(200))
        #expect(deadlines.check(now: at(319)) == nil)
        #expect(deadlines.check(now: at(320)) == .deadline)
    }

    @Test func inactivity_CountsFromWhenItWasSet() {
        var deadlines = makeDeadlines()
        deadlines.bytesReceived(now: at(1))
        deadlines.set(.inactivity(.seconds(5)), now: at(3))
        #expect(deadlines.nextDeadline == at(8))
    }

    @Test func afterDrain_WhileOutputStillLeaving_StartsWhenDrained() {
        var deadlines = makeDeadlines(writeStall: .seconds(30))
        deadlines.outputChanged(pendingAfter: true, progressed: true, now: at(0))
        deadlines.set(.afterDrain(.seconds(15)), now: at(0))
        #expect(!deadlines.tracksInput)
        #expect(deadlines.check(now: at(20)) == nil)  // a slow download is not "idle"
        deadlines.outputChanged(pendingAfter: false, progressed: true, now: at(40))
        #expect(deadlines.nextDeadline == at(55))
        #expect(deadlines.check(now: at(55)) == .deadline)
    }

    @Test func afterDrain_WithNothingPending_CountsFromWhenItWasSet() {
        var deadlines = makeDeadlines()
        deadlines.outputChanged(pendingAfter: false, progressed: true, now: at(1))
        deadlines.set(.afterDrain(.seconds(15)), now: at(4))
        #expect(deadlines.nextDeadline == at(19))
        #expect(deadlines.check(now: at(18.9)) == nil)
        #expect(deadlines.check(now: at(19)) == .deadline)
    }

    @Test func pendingOutputWithoutProgress_TimesOutAsWriteStalled_ProgressRestartsClock() {
        var deadlines = makeDeadlines(writeStall: .seconds(30))
        deadlines.outputChanged(pendingAfter: true, progressed: false, now: at(1))
        #expect(deadlines.nextDeadline == at(31))
        deadlines.outputChanged(pendingAfter: true, progressed: false, now: at(20))  // no progress: clock keeps running
        #expect(deadlines.nextDeadline == at(31))
        deadlines.outputChanged(pendingAfter: true, progressed: true, now: at(25))
        #expect(deadlines.check(now: at(54.9)) == nil)
        #expect(deadlines.check(now: at(55)) == .writeStalled)
        deadlines.outputChanged(pendingAfter: false, progressed: true, now: at(56))
        #expect(deadlines.nextDeadline == nil)
    }

    @Test func handlerDeadline_IsReportedBeforeAWriteStall() {
        var deadlines = makeDeadlines(writeStall: .seconds(5))
        deadlines.set(.at(at(3)), now: at(0))
        deadlines.outputChanged(pendingAfter: true, progressed: false, now: at(0))
        #expect(deadlines.nextDeadline == at(3))
        #expect(deadlines.check(now: at(6)) == .deadline)
    }

    @Test func closing_TimesOutAfterLinger_ReplacingTheHandlerDeadline() {
        var deadlines = makeDeadlines(linger: .seconds(2))
        deadlines.set(.at(at(100)), now: at(0))
        deadlines.closingStarted(now: at(5))
        deadlines.closingStarted(now: at(6))  // the first start counts
        deadlines.set(.inactivity(.seconds(1)), now: at(6))
        #expect(deadlines.nextDeadline == at(7))
        #expect(deadlines.check(now: at(6.9)) == nil)
        #expect(deadlines.check(now: at(7)) == .closing)
    }
}

@Suite struct ConnectionDeadlinesPropertyTests {
    /// Random event sequences: `check` never fires before `nextDeadline` and always
    /// fires at it, so one Dispatch timer armed at `nextDeadline` is enough.
    @Test(arguments: [1 as UInt64, 2, 3, 4, 5, 6, 7, 8])
    func randomEvents_CheckFiresExactlyFromNextDeadline(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var deadlines = ConnectionDeadlines<ManualInstant>(
            writeStallTimeout: .seconds(4), lingerTimeout: .milliseconds(500), now: .zero)
        var now = ManualInstant.zero
        for _ in 0..<2000 {
            now = now.advanced(by: .milliseconds(Int.random(in: 0...400, using: &random)))
            if let deadline = deadlines.nextDeadline {
                if now < deadline {
                    #expect(deadlines.check(now: now) == nil)
                }
                #expect(deadlines.check(now: deadline) != nil)
            } else {
                #expect(deadlines.check(now: now.advanced(by: .seconds(3600))) == nil)
            }
            switch Int.random(in: 0..<9, using: &random) {
            case 0: deadlines.bytesReceived(now: now)
            case 1: deadlines.set(.at(now.advanced(by: .milliseconds(Int.random(in: 0...3000, using: &random)))), now: now)
            case 2: deadlines.set(.inactivity(.milliseconds(Int.random(in: 1...3000, using: &random))), now: now)
            case 3: deadlines.set(.afterDrain(.milliseconds(Int.random(in: 1...3000, using: &random))), now: now)
            case 4: deadlines.set(.none, now: now)
            case 5: if Int.random(in: 0..<50, using: &random) == 0 { deadlines.closingStarted(now: now) }
            default:
                deadlines.outputChanged(pendingAfter: Bool.random(using: &random),
                                        progressed: Bool.random(using: &random), now: now)
            }
        }
    }
}
