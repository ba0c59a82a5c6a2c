import SpinCore
import Testing

@Suite(.timeLimit(.minutes(1)))
struct GearTests {
    enum Signal: Equatable, Sendable { case ping, other }

    @Test func propagatingFromState_AndCatchingWithAClosure_LinkTwoSpins() async {
        let gear = Gear<Signal>()
        let sender = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, propagating: { (state: Int) -> Signal? in state == 1 ? .ping : nil }),
        ], reducer: Reducer(sum))
        let receiver = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, propagating: { (signal: Signal) -> Step? in signal == .ping ? .add(10) : nil }),
        ], reducer: Reducer(sum))
        let receiving = receiver.start()
        let sending = sender.start(label: "sender")
        let deliveries = Recorder<String>()
        let observation = gear.observe { deliveries.append("\($0.event) from \($0.source ?? "?")") }
        sending.emit(.add(1))
        #expect(await receiving.firstState { $0 == 10 } == 10)
        // The observer is called after the receiver's feedback, on the sender's thread:
        // the receiver may have taken the event before the observer has seen it.
        #expect(await eventually { deliveries.all == ["ping from sender"] })
        observation.cancel()
        sending.stop()
        receiving.stop()
    }

    @Test func shortForms_CatchAStateAndEmitAnEvent() async {
        let gear = Gear<Signal>()
        let sender = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, catching: 2, propagating: .ping),
        ], reducer: Reducer(sum)).start()
        let receiver = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, catching: .ping, emitting: .add(5)),
        ], reducer: Reducer(sum)).start()
        gear.propagate(.other)
        sender.emit(.add(1))   // 1: nothing
        sender.emit(.add(1))   // 2: ping
        #expect(await receiver.firstState { $0 == 5 } == 5)
        #expect(await receiver.emitAndWait(.marker)?.sequence == 2)
        sender.stop()
        receiver.stop()
    }

    @Test func aHost_MakesEveryLoopBeforeStarting_SoNoInitialGearEventIsLost() async {
        let gear = Gear<Signal>()
        // The sender propagates from its initial state; the receiver is made first.
        let sender = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, catching: 0, propagating: .ping),
        ], reducer: Reducer(sum)).makeLoop()
        let receiver = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, catching: .ping, emitting: .add(1)),
        ], reducer: Reducer(sum)).makeLoop()
        sender.start()
        receiver.start()
        #expect(await receiver.firstState { $0 == 1 } == 1)
        sender.stop()
        receiver.stop()
    }

    @Test func stop_DetachesTheLoopFromItsGears() async {
        let gear = Gear<Signal>()
        let loop = Spin(initialState: 0, feedbacks: [
            Feedback<Int, Step>(attachedTo: gear, catching: .ping, emitting: .add(1)),
        ], reducer: Reducer(sum)).start()
        #expect(gear.attachedCount == 1)
        loop.stop()
        #expect(gear.attachedCount == 0)
        gear.propagate(.ping)
        #expect(loop.state == 0)
    }
}
