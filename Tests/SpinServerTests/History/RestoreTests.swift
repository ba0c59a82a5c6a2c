import Foundation
@testable import SpinServer
import SpinCore
import SpinStorage
import SpinWire
import SpinJSON
import SpinConcurrency
import Testing

/// Restores and forks without sockets: a state put back as a transition of its own
/// (`HostedSpin.replaceState`), journaled with that state and replayed from it, streamed
/// as a snapshot of a new epoch, and the bodies of the two routes.
@Suite struct RestoreTests {
    static func text(_ json: JSONValue) -> String { String(decoding: json.bytes, as: UTF8.self) }

    static func restore(_ sequence: UInt64, at: UInt64, state: JSONValue, epoch: String = "e2") -> HostedTransition {
        let event = JSONValue.object([("type", .string("spin.restored")), ("at", .number(String(at)))])
        var transition = HostedTransition(sequence: sequence, event: event, state: state, origin: "admin")
        transition.replacement = StateReplacement(epoch: epoch)
        transition.time = 1_764_492_000_000
        return transition
    }

    @Test func aRestore_IsJournaledWithTheStateItPutBack_AndRecoveryAndHistoryGoOnFromIt() throws {
        let spin = try DefinitionVersionsTests.spin(DefinitionVersionsTests.v1)
        // green → red → green (cycles 1) → red → green (cycles 2), then back to sequence 1.
        let lived = try HistoryTests.lived(spin, count: 4)
        let restore = Self.restore(5, at: 1, state: lived[0].state)
        let record = JournalPayload.records([restore])[0]
        let (metadata, event) = JournalPayload.read(record.payload)
        #expect(metadata.restored == true && metadata.sub == "admin")
        #expect(String(decoding: event, as: UTF8.self) == #"{"type":"spin.restored","at":1}"#)
        #expect(JournalPayload.replacedState(in: record.payload).map(Self.text) == Self.text(lived[0].state))
        // Its event is not one of the Spin's: recovery takes the state from the record, and
        // the next event applies to it.
        let records = JournalPayload.records(lived) + [record, DefinitionVersionsTests.record(6, "NEXT")]
        let fresh = try DefinitionVersionsTests.spin(DefinitionVersionsTests.v1)
        let recovered = try fresh.recover(snapshot: nil, records: records, keep: 10)
        #expect(recovered.sequence == 6)
        #expect(Self.text(recovered.state) == #"{"value":"green","context":{"cycles":1}}"#)
        let replayed = try #require(recovered.history.first { $0.sequence == 5 })
        #expect(replayed.replacement != nil && replayed.origin == "admin" && replayed.time == restore.time)
        #expect(Self.text(replayed.state) == Self.text(lived[0].state))
        // A history segment holding it replays the same, from anywhere.
        let page = try fresh.replay(snapshot: nil, records: records, keeping: 5...6)
        #expect(page.map { Self.text($0.state) } == [Self.text(lived[0].state), #"{"value":"green","context":{"cycles":1}}"#])
        // A record that says it restores and holds no state names itself.
        var broken = record
        broken.payload = [0x1E] + Array(#"{"restored":true}"#.utf8) + [0x0A] + Array(event)
        #expect(throws: RecoveryError.self) {
            try DefinitionVersionsTests.spin(DefinitionVersionsTests.v1).recover(snapshot: nil, records: [broken], keep: 1)
        }
    }

    @Test func replaceState_MovesTheRunningSpinOneSequenceOn_AndRefusesAStateItCannotTake() async throws {
        let spin = try DefinitionVersionsTests.spin(DefinitionVersionsTests.v1)
        let lived = try HistoryTests.lived(spin, count: 3)
        _ = try spin.recover(snapshot: nil, records: JournalPayload.records(lived), keep: 10)
        let seen = Protected<[HostedTransition]>([])
        let subscription = spin.observe { transition in seen.withLock { $0.append(transition) } }
        spin.prepare(feedbackBudget: 100)
        spin.start()
        defer {
            subscription.cancel()
            spin.stop()
        }
        let event = JSONValue.object([("type", .string("spin.restored")), ("at", .number("1"))])
        let done = Protected<Result<UInt64, StateRefusal>??>(nil)
        spin.replaceState(with: lived[0].state, event: event, origin: "admin", replacement: StateReplacement(epoch: "e2")) { result in
            done.withLock { $0 = .some(result) }
        }
        for _ in 0..<1000 where done.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        guard case .success(let sequence)?? = done.withLock({ $0 }) else {
            Issue.record("not replaced: \(String(describing: done.withLock { $0 }))")
            return
        }
        #expect(sequence == 4)
        let observed = try #require(seen.withLock { $0.last })
        #expect(observed.sequence == 4 && observed.origin == "admin" && observed.replacement?.epoch == "e2")
        #expect(Self.text(observed.event) == #"{"type":"spin.restored","at":1}"#)
        #expect(spin.snapshot().sequence == 4 && Self.text(spin.snapshot().state) == Self.text(lived[0].state))
        // A state the definition does not have: refused, nothing changed.
        let refused = Protected<Result<UInt64, StateRefusal>??>(nil)
        spin.replaceState(with: try JSONValue(parsing: Array(#"{"value":"purple","context":{"cycles":0}}"#.utf8)),
                          event: event, origin: nil, replacement: StateReplacement(epoch: "e3")) { result in
            refused.withLock { $0 = .some(result) }
        }
        guard case .failure(let refusal)?? = refused.withLock({ $0 }) else {
            Issue.record("not refused: \(String(describing: refused.withLock { $0 }))")
            return
        }
        #expect(refusal.reason.contains("purple"), "\(refusal.reason)")
        #expect(spin.snapshot().sequence == 4 && seen.withLock { $0.count } == 1)
    }

    @Test func aReplacement_ChangesTheFeedsEpoch_StreamsGetASnapshot_AndNoResumeCrossesIt() {
        let feed = SpinFeed(name: "l", retain: 10, immediate: false)
        feed.begin(sequence: 0, state: .number("0"), history: [], epoch: "e1")
        let messages = Protected<[String]>([])
        let subscription = feed.subscribe(since: nil, epoch: nil, deltas: true, start: { _, _ in }, live: { _, message, patch in
            messages.withLock { $0.append(String(decoding: patch ?? message, as: UTF8.self)) }
        })
        defer { subscription.cancel() }
        var first = HostedTransition(sequence: 1, event: .raw(Array(#"{"type":"add"}"#.utf8)), state: .number("5"))
        first.time = 1
        feed.applied(first)
        feed.applied(Self.restore(2, at: 0, state: .number("0")))
        feed.durable(through: 2)
        #expect(feed.epoch == "e2")
        #expect(messages.withLock { $0 } == [
            #"{"type":"state","sequence":1,"epoch":"e1","event":{"type":"add"},"state":5}"#,
            #"{"type":"snapshot","sequence":2,"epoch":"e2","state":0}"#,
        ])
        // From before the restore: a snapshot, whatever epoch the client names.
        for epoch in [nil, "e1", "e2"] {
            let start = Protected<SpinFeed.Start?>(nil)
            feed.subscribe(since: 1, epoch: epoch, deltas: false, start: { begun, _ in start.withLock { $0 = begun } },
                           live: { _, _, _ in }).cancel()
            guard case .snapshot(let sequence, _)? = start.withLock({ $0 }) else {
                Issue.record("\(String(describing: epoch)): no snapshot")
                continue
            }
            #expect(sequence == 2)
        }
        // From the restore on, in its epoch: resumed.
        let resumed = Protected<SpinFeed.Start?>(nil)
        feed.subscribe(since: 2, epoch: "e2", deltas: false, start: { begun, _ in resumed.withLock { $0 = begun } },
                       live: { _, _, _ in }).cancel()
        guard case .replay(let replay)? = resumed.withLock({ $0 }) else {
            Issue.record("not resumed")
            return
        }
        #expect(replay.isEmpty)
    }

    @Test func theBodies_TakeASequenceAndANewName_AndNameWhatTheyRefuse() {
        func parse(_ body: String, naming: Bool, type: String = "application/json") -> Result<(at: UInt64, name: String?), APIError> {
            APIRouter.stateRequest(makeRequest("POST", "/v1/spins/a/restore", headers: [("Content-Type", type)],
                                               body: Array(body.utf8)), naming: naming)
        }
        #expect((try? parse(#"{"at":0}"#, naming: false).get())?.at == 0)
        // JSON Schema's integers: a number with no fraction, however written.
        #expect((try? parse(#"{"at":30.0}"#, naming: false).get())?.at == 30)
        #expect((try? parse(#"{"at":3e1}"#, naming: false).get())?.at == 30)
        let fork = try? parse(#"{"name":"b","at":12}"#, naming: true).get()
        #expect(fork?.at == 12 && fork?.name == "b")
        let refused: [(String, Bool, String)] = [
            (#"{"at":-1}"#, false, #""at" must be a sequence, a whole number from 0, not -1"#),
            (#"{"at":1.5}"#, false, "not 1.5"),
            (#"{"at":1e40}"#, false, "not 1e40"),
            (#"{"at":"3"}"#, false, #"not "3""#),
            (#"{}"#, false, "the body must name the sequence"),
            (#"{"at":1,"name":"b"}"#, false, #"unknown member "name""#),
            (#"[1]"#, false, "the body must be a JSON object"),
            (#"{"at":1}"#, true, "the body must name the new Spin"),
            (#"{"at":1,"name":"a b"}"#, true, #""a b" is not a valid Spin name"#),
            (#"{"at":1,"name":""}"#, true, "is not a valid Spin name"),
        ]
        for (body, naming, message) in refused {
            guard case .failure(let error) = parse(body, naming: naming) else {
                Issue.record("\(body): taken")
                continue
            }
            #expect(error.serverCode == .badRequest && error.message.contains(message), "\(body): \(error.message)")
        }
        guard case .failure(let error) = parse(#"{"at":1"#, naming: false) else {
            Issue.record("taken")
            return
        }
        #expect(error.serverCode == .malformedJSON)
        guard case .failure(let type) = parse(#"{"at":1}"#, naming: false, type: "text/plain") else {
            Issue.record("taken")
            return
        }
        #expect(type.serverCode == .unsupportedMediaType)
        #expect(APIError.stateNotRestorable(spin: "a", at: 3, reason: "why").message
            == #"the state of Spin "a" at sequence 3 cannot be put back: why; nothing changed"#)
        #expect(APIError.stateNotRestorable(spin: "a", at: 3, reason: "why").status == 409)
    }
}
