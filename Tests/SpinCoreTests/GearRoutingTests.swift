@testable import SpinCore
import Testing

/// What a host that makes Gear delivery durable needs of SpinCore (`Gear.route(through:)`,
/// `Gear.deliver`, `GearCause`, `GearReceipt`, `SpinLoop.observeAfterFeedbacks`): the
/// routed fan-out, where each propagated event comes from, and what a catching loop did
/// with each delivery.
@Suite(.timeLimit(.minutes(1)))
struct GearRoutingTests {
    enum Signal: Equatable, Sendable { case ping(Int), other }

    /// A sender that propagates `ping(n)` for each state n > 0, and a receiver that adds n.
    static func pair(_ gear: Gear<Signal>, receiver label: String = "receiver")
        -> (sender: SpinLoop<Int, Step>, receiver: SpinLoop<Int, Step>) {
        let sender = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, propagating: { (state: Int) -> Signal? in state > 0 ? .ping(state) : nil }),
        ], reducer: Reducer(sum)).makeLoop(label: "sender")
        let receiver = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, propagating: { (signal: Signal) -> Step? in
                if case .ping(let n) = signal { return .add(n) }
                return nil
            }),
        ], reducer: Reducer(sum)).makeLoop(label: label)
        return (sender, receiver)
    }

    @Test func aRoutedGear_HandsEachPropagationToTheRouter_WithItsSourceAndCause_AndDeliversNothingItself() async {
        let gear = Gear<Signal>()
        let routed = Recorder<String>()
        gear.route { event, source, cause in
            routed.append("\(event) from \(source ?? "?") at \(cause.map { "\($0.sequence)\($0.fresh ? "" : " again")" } ?? "none")")
        }
        let observed = Recorder<String>()
        let observation = gear.observe { observed.append("\($0.event)") }
        let (sender, receiver) = Self.pair(gear)
        sender.start()
        receiver.start()
        #expect(gear.isRouted)
        #expect(gear.catchingOwners == ["receiver"])
        #expect(gear.isCaught(by: "receiver") && !gear.isCaught(by: "sender"))
        _ = await sender.emitAndWait(.add(2))
        _ = await sender.emitAndWait(.add(3))
        // Suspended and resumed: the feedbacks get the state again, which is not new.
        sender.suspend(reason: "test")
        sender.resume()
        _ = await sender.emitAndWait(.marker)
        // `emitAndWait` returns once the event is applied; feedbacks (the propagation) see
        // the state after that, on the loop's executor.
        #expect(await eventually { routed.all.count == 4 })
        gear.propagate(.other, from: "outside")
        #expect(routed.all == ["ping(2) from sender at 1", "ping(5) from sender at 2", "ping(5) from sender at 2 again",
                               "ping(5) from sender at 3", "other from outside at none"])
        #expect(observed.all.isEmpty, "a routed Gear fans out nothing itself")
        #expect(await receiver.emitAndWait(.marker)?.state == 0)
        observation.cancel()
        sender.stop()
        receiver.stop()
    }

    /// A Gear scans its handlers while few loops share it (a Gear per user or device keeps
    /// no index) and indexes them by loop past eight: either way a delivery reaches only
    /// its loop, and a loop that stopped is no longer among the catchers.
    @Test func deliver_ReachesOnlyItsLoop_WhetherTheGearScansOrIndexesItsCatchers() async {
        for loops in [2, 12] {
            let gear = Gear<Signal>()
            gear.route { _, _, _ in }
            let receivers = (0..<loops).map { Self.pair(gear, receiver: "r\($0)").receiver }
            for receiver in receivers { receiver.start() }
            #expect(gear.catchingOwners == Set((0..<loops).map { "r\($0)" }))
            #expect(gear.deliver(.ping(4), from: "s", to: "r1", receipt: nil) == .enqueued)
            #expect(gear.deliver(.ping(4), from: "s", to: "nobody", receipt: nil) == .ignored)
            #expect(await receivers[1].emitAndWait(.marker)?.state == 4, "\(loops) loops")
            #expect(await receivers[0].emitAndWait(.marker)?.state == 0, "\(loops) loops")
            receivers[1].stop()
            #expect(!gear.isCaught(by: "r1") && gear.isCaught(by: "r0"), "\(loops) loops")
            #expect(gear.deliver(.ping(4), from: "s", to: "r1", receipt: nil) == .ignored)
            for receiver in receivers { receiver.stop() }
            #expect(gear.catchingOwners.isEmpty && gear.attachedCount == 0)
        }
    }

    @Test func deliver_ReachesOnlyTheOwnersCatchingFeedbacks_AndItsReceiptHearsApplyAndDecline() async {
        let gear = Gear<Signal>()
        gear.route { _, _, _ in }
        // A partial reducer: it declines add(0).
        let receiver = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, propagating: { (signal: Signal) -> Step? in
                if case .ping(let n) = signal { return .add(n) }
                return nil
            }),
        ], reducer: Reducer(decliningInPlace: { (state: inout Int, event: Step) -> Bool in
            guard case .add(let n) = event, n != 0 else { return false }
            state += n
            return true
        })).makeLoop(label: "receiver")
        let other = Self.pair(gear, receiver: "other").receiver
        let observed = Recorder<String>()
        let observation = receiver.observe { transition in
            observed.append("\(transition.sequence): \(transition.gearReceipt.map { "\($0.source)@\($0.position)" } ?? "-")")
        }
        receiver.start()
        other.start()
        let outcomes = Recorder<GearReceiptOutcome>()
        func receipt(_ position: UInt64) -> GearReceipt {
            GearReceipt(gear: "g", source: "s", position: position) { outcomes.append($0) }
        }
        #expect(gear.deliver(.ping(4), from: "s", to: "receiver", receipt: receipt(1)) == .enqueued)
        #expect(gear.deliver(.ping(0), from: "s", to: "receiver", receipt: receipt(2)) == .enqueued)
        #expect(gear.deliver(.other, from: "s", to: "receiver", receipt: receipt(3)) == .ignored)
        #expect(gear.deliver(.ping(1), from: "s", to: "nobody", receipt: receipt(4)) == .ignored)
        #expect(await receiver.emitAndWait(.add(10))?.state == 14)
        #expect(outcomes.all == [.applied(sequence: 1), .declined(sequence: 1)])
        #expect(observed.all == ["1: s@1", "2: -"])
        #expect(other.state == 0, "only the owner's feedbacks got it")
        // A suspended loop refuses; a stopped one has no catching feedback left.
        receiver.suspend(reason: "test")
        #expect(gear.deliver(.ping(1), from: "s", to: "receiver", receipt: receipt(5)) == .refused)
        receiver.stop()
        #expect(gear.deliver(.ping(1), from: "s", to: "receiver", receipt: receipt(6)) == .ignored)
        observation.cancel()
        other.stop()
    }

    @Test func aCollectingReceipt_EnqueuesWhatEveryCatchingFeedbackMade_AsOneBatch_AllOrNone() async {
        let gear = Gear<Signal>()
        gear.route { _, _, _ in }
        // Two catching feedbacks: one delivery makes two events.
        let catcher = Feedback<Int, Step>(attachedTo: gear, propagating: { (signal: Signal) -> Step? in
            if case .ping(let n) = signal { return .add(n) }
            return nil
        })
        let receiver = Spin(initialState: 0, feedbacks: [catcher, catcher], reducer: Reducer(sum)).makeLoop(label: "receiver")
        let observed = Recorder<String>()
        let observation = receiver.observe { transition in
            observed.append("\(transition.sequence)\(transition.endsBatch ? "." : "…") \(transition.gearReceipt?.position ?? 0)")
        }
        receiver.start()
        let outcomes = Recorder<GearReceiptOutcome>()
        let first = GearReceipt(gear: "g", source: "s", position: 1, collecting: true) { outcomes.append($0) }
        #expect(gear.deliver(.ping(3), from: "s", to: "receiver", receipt: first) == GearCatch(enqueued: 2))
        #expect(receiver.state == 0, "nothing is enqueued before the commit")
        #expect(first.commit())
        #expect(await receiver.emitAndWait(.marker)?.state == 6)
        #expect(observed.all == ["1… 1", "2. 1", "3. 0"], "one batch: the first does not end it")
        #expect(outcomes.all == [.applied(sequence: 1), .applied(sequence: 2)])
        // Suspended: the commit is refused and neither event is taken.
        receiver.suspend(reason: "test")
        let second = GearReceipt(gear: "g", source: "s", position: 2, collecting: true) { outcomes.append($0) }
        #expect(gear.deliver(.ping(5), from: "s", to: "receiver", receipt: second) == GearCatch(enqueued: 2))
        #expect(!second.commit())
        receiver.resume()
        #expect(await receiver.emitAndWait(.marker)?.state == 6)
        #expect(outcomes.all.count == 2)
        observation.cancel()
        receiver.stop()
    }

    @Test func observeAfterFeedbacks_SeesEachTransition_AfterItsStatesPropagation() async {
        let gear = Gear<Signal>()
        let order = Recorder<String>()
        gear.route { event, _, cause in order.append("propagated \(event) at \(cause?.sequence ?? 0)") }
        let sender = Self.pair(gear).sender
        let first = sender.observe { order.append("observed \($0.sequence)") }
        let late = sender.observeAfterFeedbacks { order.append("after feedbacks \($0.sequence)") }
        sender.start()
        _ = await sender.emitAndWait(.add(1))
        _ = await sender.emitAndWait(.add(1))
        // Applied is told before the feedbacks run: wait for the second one's to finish.
        #expect(await eventually { order.all.count == 6 })
        #expect(order.all == ["observed 1", "propagated ping(1) at 1", "after feedbacks 1",
                              "observed 2", "propagated ping(2) at 2", "after feedbacks 2"])
        late.cancel()
        _ = await sender.emitAndWait(.add(1))
        #expect(await eventually { order.all.count == 8 })
        #expect(order.all.last == "propagated ping(3) at 3")
        first.cancel()
        sender.stop()
    }

    @Test func aLiftedChild_PropagatesWithItsParentsCause_AndCatchesWithReceipts() async {
        struct Parent: Equatable, Sendable { var child = 0 }
        enum ParentEvent: Equatable, Sendable { case child(Step) }
        let gear = Gear<Signal>()
        let routed = Recorder<GearCause?>()
        gear.route { _, _, cause in routed.append(cause) }
        let childFeedback = Feedback<Int, Step>(attachedTo: gear, propagating: { (state: Int) -> Signal? in
            state > 0 ? .ping(state) : nil
        })
        let catching = Feedback<Int, Step>(attachedTo: gear, propagating: { (signal: Signal) -> Step? in
            if case .ping(let n) = signal { return .add(n * 100) }
            return nil
        })
        let path = EventPath<ParentEvent, Step>(embed: ParentEvent.child, extract: {
            if case .child(let step) = $0 { return step }
            return nil
        })
        let loop = Spin(initialState: Parent(), feedbacks: [
            childFeedback.pullback(state: \Parent.child, event: path),
            catching.pullback(state: \Parent.child, event: path),
        ], reducer: Reducer { (parent: Parent, event: ParentEvent) in
            guard case .child(let step) = event else { return parent }
            return Parent(child: sum(parent.child, step))
        }).makeLoop(label: "parent")
        loop.start()
        _ = await loop.emitAndWait(.child(.add(1)))
        #expect(await eventually { !routed.all.isEmpty })
        #expect(routed.all == [GearCause(sequence: 1, fresh: true)])
        let outcome = Recorder<GearReceiptOutcome>()
        #expect(gear.deliver(.ping(2), from: "s", to: "parent", receipt: GearReceipt(gear: "g", source: "s", position: 9) {
            outcome.append($0)
        }) == .enqueued)
        #expect(await loop.firstState { $0.child == 201 } != nil)
        #expect(outcome.all == [.applied(sequence: 2)])
        loop.stop()
    }
}
