import Synchronization
import SpinCore
@testable import SpinServer
import Testing

/// `GearCapture`: which Gear events a sending Spin's transition journals with it, which go
/// on their own after their cause, and which are dropped because their cause is never
/// recorded (a refused state) — without threads or sockets.
struct GearCaptureTests {
    static func output(_ cause: UInt64) -> GearOutput {
        GearOutput(gear: "g", event: Array(#"{"n":\#(cause)}"#.utf8), cause: cause)
    }

    static func fresh(_ sequence: UInt64) -> GearCause { GearCause(sequence: sequence, fresh: true) }

    @Test func anEventOfTheStateBeingGiven_IsKept_AndJournaledWithItsTransition() {
        let capture = GearCapture(spin: "s", recorded: 2)
        capture.begin(3)
        #expect(capture.add(Self.output(3), cause: Self.fresh(3)) == .kept)
        var handed: [GearOutput] = []
        capture.end { outputs, failure in
            #expect(failure == nil)
            handed = outputs
        }
        #expect(handed == [Self.output(3)])
        // Later (an effect of that state): after its cause, on its own.
        #expect(capture.add(Self.output(3), cause: Self.fresh(3)) == .alone)
        #expect(capture.add(Self.output(2), cause: Self.fresh(2)) == .alone)
        #expect(capture.add(Self.output(1), cause: GearCause(sequence: 1, fresh: false)) == .alone)
    }

    @Test func anEventOfARefusedState_IsDropped_AndSoIsOneAfterTheSpinWentBack() {
        let capture = GearCapture(spin: "s", recorded: 4)
        // The state at 5 was refused (too large): never begun, never recorded.
        #expect(capture.add(Self.output(5), cause: Self.fresh(5)) == .dropped)
        #expect(capture.fail("does not encode", cause: Self.fresh(5)) == .dropped)
        // A transition that failed (a Gear event of it did not encode) records nothing.
        capture.begin(5)
        #expect(capture.fail("does not encode", cause: Self.fresh(5)) == .kept)
        capture.end { outputs, failure in #expect(failure != nil) }
        #expect(capture.add(Self.output(5), cause: Self.fresh(5)) == .dropped)
        // Recorded up to 7, then back to 6: 7's events are taken back with it.
        capture.begin(6)
        capture.end { _, _ in }
        capture.begin(7)
        capture.end { _, _ in }
        #expect(capture.add(Self.output(7), cause: Self.fresh(7)) == .alone)
        capture.rolledBack(to: 6)
        #expect(capture.add(Self.output(7), cause: Self.fresh(7)) == .dropped)
        #expect(capture.add(Self.output(6), cause: Self.fresh(6)) == .alone)
    }

    @Test func whileTheSpinIsFaulted_EverythingItPropagatesIsDropped() {
        let faulted = Atomic(false)
        let capture = GearCapture(spin: "s", recorded: 0) { faulted.load(ordering: .relaxed) }
        capture.begin(1)
        faulted.store(true, ordering: .relaxed)
        #expect(capture.add(Self.output(1), cause: Self.fresh(1)) == .dropped)
        #expect(capture.fail("x", cause: Self.fresh(1)) == .dropped)
        #expect(capture.isFaulted)
        faulted.store(false, ordering: .relaxed)
        #expect(capture.add(Self.output(1), cause: Self.fresh(1)) == .kept)
    }
}
