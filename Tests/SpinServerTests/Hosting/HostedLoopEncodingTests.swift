import Foundation
import Logging
import SpinCore
@testable import SpinServer
import Testing

/// A Codable event of the user's own (no `TypeTaggedEvent`) whose `encode(to:)` throws for
/// `poison`: it decodes, so only encoding it can tell.
enum Fragile: Codable, Equatable, Sendable {
    case step, poison

    private enum Key: String, CodingKey { case type }

    init(from decoder: any Decoder) throws {
        let type = try decoder.container(keyedBy: Key.self).decode(String.self, forKey: .type)
        self = type == "poison" ? .poison : .step
    }

    func encode(to encoder: any Encoder) throws {
        guard self == .step else {
            throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath, debugDescription: "poison is not for writing"))
        }
        var container = encoder.container(keyedBy: Key.self)
        try container.encode("step", forKey: .type)
    }
}

/// State JSON: `{"value":n}`.
struct Tally: Codable, Equatable, Sendable {
    var value = 0
}

/// A state that `divide` makes unencodable (NaN), with the events clients send.
struct Gauge: Codable, Equatable, Sendable {
    var ratio = 1.0
    var steps = 0
}

enum Dial: String, TypeTaggedEvent, CaseIterable, Sendable {
    case step, divide
}

/// `TypeTaggedEvent`s, one that round-trips with an unlabeled case and one whose entry
/// takes apart another case than the one it makes.
enum Heater: TypeTaggedEvent, Equatable, Sendable {
    case setTarget(Int)
    case off

    static let eventTypes: EventTypes<Heater> = [
        .type("setTarget", Heater.setTarget, .field("degrees", .integer(in: 5...30))) {
            if case .setTarget(let degrees) = $0 { degrees } else { nil }
        },
        .type(.off),
    ]
}

enum Miswired: TypeTaggedEvent, Equatable, Sendable {
    case setTarget(Int)
    case boost(Int)

    static let eventTypes: EventTypes<Miswired> = [
        .type("setTarget", Miswired.setTarget, .field("degrees")) { if case .boost(let degrees) = $0 { degrees } else { nil } },
        .type("boost", Miswired.boost, .field("degrees")) { if case .boost(let degrees) = $0 { degrees } else { nil } },
    ]
}

/// Nothing is acknowledged, journaled or streamed that does not encode (`HostedLoop`).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct HostedLoopEncodingTests {
    /// Counts every event; at 2 its feedback sends `poison`.
    static func fragileSpin() -> Spin<Tally, Fragile> {
        Spin(initialState: Tally()) {
            Feedback(effect: { (state: Tally) -> Fragile? in state.value == 2 ? .poison : nil })
            Reducer({ (state: Tally, _: Fragile) in Tally(value: state.value + 1) })
        }
    }

    static func start(storage: String? = nil) throws -> (LoopServer, Int) {
        var configuration = SpinServerConfiguration(port: 0)
        if let storage { configuration.storage = .init(directory: storage, fsync: .batch, persists: true) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let host = SpinHost()
        try host.host(fragileSpin(), named: "fragile")
        try host.host(Spin(initialState: Gauge()) {
            Reducer({ (state: Gauge, event: Dial) in
                event == .step ? Gauge(ratio: state.ratio, steps: state.steps + 1) : Gauge(ratio: .nan, steps: state.steps)
            })
        }, named: "gauge")
        let server = LoopServer(configuration: configuration, host: host, logger: logger)
        return (server, try server.start())
    }

    /// `GET /v1/spins/fragile` once `done` holds (or after 5 s).
    static func spin(_ port: Int, _ name: String = "fragile", until done: ([String: Any]) -> Bool) async throws -> [String: Any] {
        var spin = try JournalRecoveryTests.spin(port, name)
        for _ in 0..<250 where !done(spin) {
            try await Task.sleep(for: .milliseconds(20))
            spin = try JournalRecoveryTests.spin(port, name)
        }
        return spin
    }

    @Test func aPostedEventThatDoesNotEncode_Is500EncodingFailed_AndNothingIsApplied() async throws {
        let storage = JournalRecoveryTests.temporaryDirectory()
        let (server, port) = try Self.start(storage: storage)
        for body in [#"{"type":"poison"}"#, #"[{"type":"step"},{"type":"poison"}]"#] {
            let refused = try LiveServerTests.post(port, "/v1/spins/fragile/events", body)
            #expect(refused.status == 500)
            let error = refused.body.jsonObject["error"] as? [String: Any]
            #expect(error?["code"] as? String == "encoding_failed")
            let message = error?["message"] as? String ?? ""
            #expect(message.contains(#"Spin "fragile""#) && message.contains("Fragile") && message.contains("poison is not for writing"),
                    "\(message)")
        }
        let spin = try JournalRecoveryTests.spin(port, "fragile")
        #expect(spin["sequence"] as? Int == 0)
        #expect(spin["status"] as? String == "running")
        await server.shutdown()
        let (again, restarted) = try Self.start(storage: storage)
        #expect(try JournalRecoveryTests.spin(restarted, "fragile")["sequence"] as? Int == 0)
        await again.shutdown()
    }

    @Test func aStateThatDoesNotEncode_MidBatch_RefusesTheWholeBatch_AndHoldsTheSpinBeforeIt() async throws {
        let storage = JournalRecoveryTests.temporaryDirectory()
        let (first, port) = try Self.start(storage: storage)
        #expect(try LiveServerTests.post(port, "/v1/spins/gauge/events", #"{"type":"step"}"#).status == 202)
        let refused = try LiveServerTests.post(port, "/v1/spins/gauge/events", #"[{"type":"step"},{"type":"divide"},{"type":"step"}]"#)
        #expect(refused.status == 500)
        let message = (refused.body.jsonObject["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.contains("the state (Gauge) after event 3 does not encode as JSON"), "\(message)")
        let held = try await Self.spin(port, "gauge") { $0["status"] as? String == "suspended" && $0["sequence"] as? Int == 1 }
        #expect(held["sequence"] as? Int == 1)
        #expect(held["state"] as? [String: Double] == ["ratio": 1, "steps": 1])
        #expect(await first.shutdown() == nil)
        let (second, again) = try Self.start(storage: storage)
        let spin = try JournalRecoveryTests.spin(again, "gauge")
        #expect(spin["sequence"] as? Int == 1)
        #expect(spin["status"] as? String == "suspended")
        await second.shutdown()
    }

    @Test func aFeedbackEventThatDoesNotEncode_SuspendsTheSpin_AtItsLastState_InMemory() async throws {
        let (server, port) = try Self.start()
        #expect(try LiveServerTests.post(port, "/v1/spins/fragile/events", #"[{"type":"step"},{"type":"step"}]"#).status == 202)
        let spin = try await Self.spin(port) { $0["status"] as? String == "suspended" && $0["sequence"] as? Int == 2 }
        #expect(spin["status"] as? String == "suspended")
        #expect(spin["sequence"] as? Int == 2)
        #expect(spin["state"] as? [String: Int] == ["value": 2])
        // Suspended, it refuses events until resumed.
        #expect(try LiveServerTests.post(port, "/v1/spins/fragile/events", #"{"type":"step"}"#).status == 409)
        await server.shutdown()
    }

    @Test func aFeedbackEventThatDoesNotEncode_IsNeverJournaled_AndTheNextStartRecovers() async throws {
        let storage = JournalRecoveryTests.temporaryDirectory()
        let (first, port) = try Self.start(storage: storage)
        #expect(try LiveServerTests.post(port, "/v1/spins/fragile/events", #"{"type":"step"}"#).status == 202)
        #expect(try LiveServerTests.post(port, "/v1/spins/fragile/events", #"{"type":"step"}"#).status == 202)
        let held = try await Self.spin(first.port ?? port) { $0["status"] as? String == "suspended" && $0["sequence"] as? Int == 2 }
        #expect(held["sequence"] as? Int == 2)
        #expect(held["status"] as? String == "suspended")
        let stopped = await first.shutdown()
        #expect(stopped == nil)
        // No null in the journal: the next start recovers, still suspended.
        let (second, again) = try Self.start(storage: storage)
        let spin = try JournalRecoveryTests.spin(again, "fragile")
        #expect(spin["sequence"] as? Int == 2)
        #expect(spin["state"] as? [String: Int] == ["value": 2])
        #expect(spin["status"] as? String == "suspended")
        await second.shutdown()
    }

    @Test func aTableThatDoesNotRoundTrip_IsRefusedWhenHosted_NamingTypeAndCase() throws {
        let spin = Spin(initialState: Tally()) { Reducer({ (state: Tally, _: Miswired) in state }) }
        #expect {
            try SpinHost().host(spin, named: "miswired")
        } throws: { error in
            "\(error)".contains(#"Miswired, type "setTarget": its extract does not take back the case its embed makes"#)
        }
        #expect(throws: HostingError.self) { try SpinHost.checkEvents(Miswired.self) }
        let gear = Gear<Miswired>()
        let host = SpinHost()
        try host.host(Spin(initialState: Tally()) { Reducer({ (state: Tally, _: Heater) in state }) }, named: "heater")
        #expect(throws: HostingError.self) { try host.host(gear, named: "g", attachedTo: ["heater"]) }
    }

    @Test func anUnlabeledCase_IsHosted_AndCodedUnderTheFieldItsEntryNames() throws {
        try SpinHost.checkEvents(Heater.self)
        let host = SpinHost()
        try host.host(Spin(initialState: Tally()) { Reducer({ (state: Tally, _: Heater) in state }) }, named: "heater")
        let hosted = try #require(host.spin(named: "heater"))
        #expect(throws: Never.self) { try hosted.decodeEvents(json: Array(#"{"type":"setTarget","degrees":21}"#.utf8)) }
        do {
            _ = try hosted.decodeEvents(json: Array(#"{"type":"setTarget","degrees":31}"#.utf8))
            Issue.record("31 degrees decoded")
        } catch {
            #expect(error.status == 422)
            #expect(error.message.contains("degrees: must be an integer from 5 to 30, got 31"))
        }
    }
}
