@testable import SpinServer
import SpinCore
import SpinWire
import Testing
@testable import SpinJSON
@testable import SpinConcurrency

/// A state of `count` items, item `changed` renamed: large enough that a patch is smaller.
private func state(_ sequence: UInt64, count: Int = 20) -> JSONValue {
    let items = (0..<count).map { index in
        JSONValue.object([("id", .number(String(index))),
                          ("name", .string(index == Int(sequence) % count ? "item \(index) v\(sequence)" : "item \(index)"))])
    }
    return .raw(JSONValue.object([("items", .array(items)), ("sequence", .number(String(sequence)))]).bytes)
}

private func transition(_ sequence: UInt64) -> HostedTransition {
    HostedTransition(sequence: sequence, event: .object([("type", .string("rename"))]), state: state(sequence))
}

private func full(_ sequence: UInt64) -> [UInt8] { StreamMessage.state(transition(sequence), epoch: "e") }

private func patch(_ sequence: UInt64) -> [UInt8] {
    StreamMessage.patch(transition(sequence), epoch: "e",
                        patch: JSONPatch.diff(from: state(sequence - 1), to: state(sequence)).bytes)
}

/// What the feed hands a delta stream: the state message and the patch message.
private func live(_ sequence: UInt64) -> StreamMachine.Message {
    .state(transition(sequence), message: full(sequence), patch: patch(sequence))
}

private func frame(_ text: [UInt8]) -> [UInt8] { WebSocketFrameEncoder.encode(opcode: .text, payload: text) }

private func makeMachine(deltas: Bool = true, limit: Int = 4) -> StreamMachine {
    StreamMachine(kind: .state(clientMayWrite: false), transport: .webSocket(WebSocketSession(role: .server)),
                  outboxLimit: limit, deltas: deltas)
}

@Suite struct StreamDeltaTests {
    // MARK: StatePatcher

    @Test func patcher_PatchesFromTheStateBefore() throws {
        let patcher = StatePatcher.self
        let first = patcher.message(for: transition(1), after: nil, epoch: "e")
        #expect(first == nil)
        let second = patcher.message(for: transition(2), after: (1, state(1)), epoch: "e")
        let message = try #require(second)
        #expect(message == patch(2))
        #expect(String(decoding: message, as: UTF8.self).contains(#""patch":[{"op":"replace","path":"/items/1/name""#))
    }

    @Test func patcher_SendsTheWholeState_AfterAGap_EveryThousandth_AndWhenThePatchIsNotSmaller() {
        let patcher = StatePatcher.self
        // A gap: nothing to patch from.
        let afterGap = patcher.message(for: transition(5), after: (3, state(3)), epoch: "e")
        #expect(afterGap == nil)
        // Every 1000th sequence, whatever the patch.
        let thousandth = patcher.message(for: transition(1000), after: (999, state(999)), epoch: "e")
        #expect(thousandth == nil)
        let next = patcher.message(for: transition(1001), after: (1000, state(1000)), epoch: "e")
        #expect(next != nil)
        // A small state replaced: the patch is larger than the state.
        let small = HostedTransition(sequence: 7, event: .null, state: .raw(Array("[2]".utf8)))
        let replaced = patcher.message(for: small, after: (6, .raw(Array("[1]".utf8))), epoch: "e")
        #expect(replaced == nil)
    }

    // MARK: StreamMachine

    @Test func deltaStream_SendsPatchesAfterItsSnapshot() {
        var machine = makeMachine()
        _ = machine.deliver([.started(.snapshot(sequence: 3, state: state(3)), epoch: "e")], room: .max)
        #expect(machine.deliver([live(4), live(5)], room: .max) == [.write(frame(patch(4)) + frame(patch(5)))])
    }

    @Test func streamWithoutDeltas_SendsWholeStates() {
        var machine = makeMachine(deltas: false)
        _ = machine.deliver([.started(.snapshot(sequence: 3, state: state(3)), epoch: "e")], room: .max)
        #expect(machine.deliver([live(4)], room: .max) == [.write(frame(full(4)))])
    }

    @Test func aPatchFromAStateTheStreamDidNotCarry_GoesAsTheWholeState() {
        var machine = makeMachine()
        _ = machine.deliver([.started(.snapshot(sequence: 3, state: state(3)), epoch: "e")], room: .max)
        // 4 never reached this stream: 5's patch (from 4) is useless to its client.
        #expect(machine.deliver([live(5), live(6)], room: .max) == [.write(frame(full(5)) + frame(patch(6)))])
    }

    @Test func afterAConflation_TheSnapshotIsWhole_AndPatchesGoOnFromIt() {
        var machine = makeMachine(limit: 2)
        _ = machine.deliver([.started(.snapshot(sequence: 0, state: state(0)), epoch: "e")], room: 1)
        #expect(machine.blocked)
        #expect(machine.deliver([live(1), live(2)], room: 0) == [])
        #expect(machine.deliver([live(3)], room: 0) == [.log(.conflated(dropped: 2))])
        // Queued patches are gone; the client gets the newest state whole, then patches from it.
        let snapshot = StreamMessage.snapshot(sequence: 3, epoch: "e", state: state(3))
        #expect(machine.writable(room: .max) == [.write(frame(snapshot))])
        #expect(machine.carried == 3)
        #expect(machine.deliver([live(4)], room: .max) == [.write(frame(patch(4)))])
    }

    @Test func resumedHistory_StartsWhole_ThenPatchesBetweenRetainedStates_ThenLivePatches() {
        var machine = makeMachine()
        let actions = machine.deliver([.started(.replay([transition(6), transition(7), transition(8)]), epoch: "e"), live(9)],
                                      room: .max)
        #expect(actions == [.write(frame(full(6)) + frame(patch(7)) + frame(patch(8)) + frame(patch(9)))])
    }

    @Test func resumeWithNothingMissed_SendsTheNextStateWhole() {
        var machine = makeMachine()
        _ = machine.deliver([.started(.replay([]), epoch: "e")], room: .max)
        #expect(machine.deliver([live(9), live(10)], room: .max) == [.write(frame(full(9)) + frame(patch(10)))])
    }

    @Test func sse_PatchMessagesCarryTheirSequenceAsID() {
        var machine = StreamMachine(kind: .state(clientMayWrite: false), transport: .sse(HTTPBodyEncoder(mode: .closeDelimited)),
                                    outboxLimit: 4, deltas: true)
        _ = machine.deliver([.started(.snapshot(sequence: 3, state: state(3)), epoch: "e")], room: .max)
        #expect(machine.deliver([live(4)], room: .max) == [.write(Array("id: 4\ndata: ".utf8) + patch(4) + Array("\n\n".utf8))])
    }

    // MARK: SpinFeed

    @Test func feed_MakesOnePatchPerTransition_OnlyForSubscribersThatAskedForDeltas() {
        let feed = SpinFeed(name: "list", retain: 10, immediate: true)
        feed.begin(sequence: 0, state: state(0), history: [], epoch: "e")
        let received = Protected<[(deltas: Bool, message: [UInt8], patch: [UInt8]?)]>([])
        let plain = feed.subscribe(since: nil, epoch: nil, deltas: false, start: { _, _ in }, live: { _, message, patch in
            received.withLock { $0.append((false, message, patch)) }
        })
        let delta = feed.subscribe(since: nil, epoch: nil, deltas: true, start: { _, _ in }, live: { _, message, patch in
            received.withLock { $0.append((true, message, patch)) }
        })
        feed.applied(transition(1))
        let first = received.withLock { $0 }
        #expect(first.count == 2)
        #expect(first.allSatisfy { $0.message == full(1) })
        #expect(first.first { !$0.deltas }?.patch == nil)
        #expect(first.first { $0.deltas }?.patch == patch(1))
        // A transition while no stream wants deltas, then a new delta subscriber: its
        // first patch is from the state just before, not from the one last patched.
        delta.cancel()
        feed.applied(transition(2))
        let again = feed.subscribe(since: nil, epoch: nil, deltas: true, start: { _, _ in }, live: { _, message, patch in
            received.withLock { $0.append((true, message, patch)) }
        })
        feed.applied(transition(3))
        #expect(received.withLock { $0.last?.patch } == patch(3))
        plain.cancel()
        again.cancel()
    }
}
