import Foundation
import Logging
import SpinCore
@testable import SpinServer
import Testing

// A composed Spin hosted like any other: a panel made of two children written for their
// own types, a counter (with an effect of its own) and an alarm attached to a Gear that
// another hosted Spin, the bell, rings.

private struct Clicks: Codable, Equatable, Sendable {
    var count = 0
    var resets = 0
}

private enum ClicksEvent: Codable, Equatable, Sendable {
    case increment
    case reset
}

private struct Alarm: Codable, Equatable, Sendable {
    var rings: [Int] = []
}

private enum AlarmEvent: Codable, Equatable, Sendable {
    case rang(Int)
}

private struct Panel: Codable, Equatable, Sendable {
    var tally = Clicks()
    var alarm = Alarm()
}

private enum PanelEvent: Codable, Equatable, Sendable {
    case tally(ClicksEvent)
    case alarm(AlarmEvent)
}

/// What the bell tells the Gear.
private enum Ring: Codable, Equatable, Sendable {
    case ring(Int)
}

private enum Children {
    static let tallyReducer = Reducer<Clicks, ClicksEvent>(mutating: { tally, event in
        switch event {
        case .increment: tally.count += 1
        case .reset: tally = Clicks(count: 0, resets: tally.resets + 1)
        }
    })
    /// The tally's own effect: at 3 it resets itself.
    static let tallyFeedback = Feedback<Clicks, ClicksEvent>(effect: { (tally: Clicks) -> ClicksEvent? in
        tally.count >= 3 ? .reset : nil
    })
    static let alarmReducer = Reducer<Alarm, AlarmEvent>(mutating: { alarm, event in
        switch event { case .rang(let n): alarm.rings.append(n) }
    })

    static func alarmFeedback(_ gear: Gear<Ring>) -> Feedback<Alarm, AlarmEvent> {
        Feedback(attachedTo: gear, propagating: { (ring: Ring) -> AlarmEvent? in
            switch ring { case .ring(let n): .rang(n) }
        })
    }

    static func panel(_ gear: Gear<Ring>) -> Spin<Panel, PanelEvent> {
        let tally = EventPath<PanelEvent, ClicksEvent>.case(PanelEvent.tally)
        let alarm = EventPath<PanelEvent, AlarmEvent>.case(PanelEvent.alarm)
        return Spin(initialState: Panel()) {
            tallyFeedback.pullback(state: \Panel.tally, event: tally)
            alarmFeedback(gear).pullback(state: \Panel.alarm, event: alarm)
            Reducer.combine(tallyReducer.pullback(state: \Panel.tally, event: tally),
                            alarmReducer.pullback(state: \Panel.alarm, event: alarm))
        }
    }

    /// The bell: each ring posted to it is rung on the Gear.
    static func bell(_ gear: Gear<Ring>) -> Spin<Int, Ring> {
        Spin(initialState: 0) {
            Feedback(attachedTo: gear, propagating: { (last: Int) -> Ring? in last > 0 ? .ring(last) : nil })
            Reducer { (_: Int, event: Ring) in
                switch event { case .ring(let n): n }
            }
        }
    }
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct HostedCompositionTests {
    static func start() throws -> (LoopServer, Int) {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let host = SpinHost()
        let gear = Gear<Ring>()
        try host.host(Children.panel(gear), named: "panel")
        try host.host(Children.bell(gear), named: "bell")
        try host.host(gear, named: "alarms", attachedTo: ["panel", "bell"])
        let server = LoopServer(configuration: SpinServerConfiguration(port: 0), host: host, logger: logger)
        return (server, try server.start())
    }

    @Test func aComposedSpin_TakesItsChildrensEventsAsTheParentsJSON_AndRunsTheirEffects() async throws {
        let (server, port) = try Self.start()
        let increment = #"{"tally":{"_0":{"increment":{}}}}"#
        let posted = try LiveServerTests.post(port, "/v1/spins/panel/events?wait=true", "[\(increment),\(increment)]")
        #expect(posted.status == 200)
        let state = posted.body.jsonObject["state"] as? [String: Any]
        #expect((state?["tally"] as? [String: Any])?["count"] as? Int == 2)
        #expect((state?["alarm"] as? [String: Any])?["rings"] as? [Int] == [])

        // The third increment makes the tally's own effect reset it, inside the panel.
        #expect(try LiveServerTests.post(port, "/v1/spins/panel/events", increment).status == 202)
        let reset = try await HostedLoopEncodingTests.spin(port, "panel") { spin in
            ((spin["state"] as? [String: Any])?["tally"] as? [String: Any])?["resets"] as? Int == 1
        }
        #expect(((reset["state"] as? [String: Any])?["tally"] as? [String: Any])?["count"] as? Int == 0)
        #expect(reset["sequence"] as? Int == 4)
        await server.shutdown()
    }

    @Test func aChildAttachedToAGear_CatchesWhatAnotherSpinRings_IntoItsPartOnly() async throws {
        let (server, port) = try Self.start()
        #expect(try LiveServerTests.post(port, "/v1/spins/bell/events", #"{"ring":{"_0":7}}"#).status == 202)
        #expect(try LiveServerTests.post(port, "/v1/spins/bell/events", #"{"ring":{"_0":9}}"#).status == 202)
        let rung = try await HostedLoopEncodingTests.spin(port, "panel") { spin in
            ((spin["state"] as? [String: Any])?["alarm"] as? [String: Any])?["rings"] as? [Int] == [7, 9]
        }
        let state = rung["state"] as? [String: Any]
        #expect((state?["alarm"] as? [String: Any])?["rings"] as? [Int] == [7, 9])
        #expect((state?["tally"] as? [String: Any])?["count"] as? Int == 0)

        // An event that is no event of the panel's children is refused, and changes nothing.
        let refused = try LiveServerTests.post(port, "/v1/spins/panel/events", #"{"bell":{"_0":1}}"#)
        #expect(refused.status == 422)
        #expect(try JournalRecoveryTests.spin(port, "panel")["sequence"] as? Int == 2)
        await server.shutdown()
    }
}
