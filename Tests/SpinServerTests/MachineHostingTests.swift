import Foundation
import SpinMachines
@testable import SpinServer
import Testing

/// A declarative machine hosted like any Spin: its state JSON over the API, events
/// posted as `{"type":..}` objects, and its `after` timers running in the server.
@Suite(.timeLimit(.minutes(1)))
struct MachineHostingTests {
    static let sessionFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Config/machines/session.json").path

    /// The session machine of the default config, hosted and started, and its router.
    static func hostSession() throws -> (SpinHost, APIRouter) {
        let session = try MachineDefinition(contentsOfFile: sessionFile, name: "machines/session.json")
        let host = SpinHost()
        try host.host(machine: session, named: "session")
        host.start()
        return (host, makeRouter(host))
    }

    @Test func session_IsReadAndDrivenOverTheAPI() async throws {
        let (host, router) = try Self.hostSession()
        defer { host.stop() }
        #expect(await router.respond("GET", "/v1/spins/session").text.hasPrefix(
            #"{"name":"session","sequence":0,"status":"running","state":{"value":"loggedOut","context":{}},"machine":"#))
        #expect(await router.post("/v1/spins/session/events", #"{"type":"login"}"#).status == 202)
        // The 500 ms timer completes the login by itself.
        _ = await waitForState(router, "session") { $0["value"] as? String == "loggedIn" }
        let invalid = await router.post("/v1/spins/session/events", #"{"kind":"login"}"#)
        #expect(invalid.status == 422)
        #expect(invalid.errorCode == "invalid_event")
        let spins = await router.respond("GET", "/v1/spins").object["spins"] as? [[String: Any]] ?? []
        #expect(spins.first?["kind"] as? String == "machine")
    }

    /// The dashboard draws a machine from its definition: `GET /v1/spins/{name}` carries
    /// the file's JSON, members in the file's order; a Swift Spin has none.
    @Test func theDefinitionOfAMachineSpin_IsShown_AndNoneForOtherSpins() async throws {
        let (host, router) = try Self.hostSession()
        defer { host.stop() }
        let file = try Data(contentsOf: URL(fileURLWithPath: Self.sessionFile))
        let machine = await router.respond("GET", "/v1/spins/session").object["machine"] as? [String: Any]
        let expected = try JSONSerialization.jsonObject(with: file) as? NSDictionary
        #expect(machine.map(NSDictionary.init(dictionary:)) == expected)
        let text = await router.respond("GET", "/v1/spins/session").text
        let order = ["\"loggedOut\"", "\"loggingIn\"", "\"loggedIn\"", "\"loggingOut\""].compactMap { text.range(of: $0)?.lowerBound }
        #expect(order.count == 4 && order == order.sorted())

        let examples = try makeExampleHost()
        defer { examples.stop() }
        let counter = await makeRouter(examples).respond("GET", "/v1/spins/counter")
        #expect(counter.status == 200)
        #expect(counter.object["machine"] == nil)
        #expect(counter.object["state"] != nil)
    }

    @Test func anEventWithoutATransition_IsIgnored_AndItsReplySaysSo() async throws {
        let (host, router) = try Self.hostSession()
        defer { host.stop() }
        // loginOK has no transition from loggedOut; login and forceLogout do.
        let response = await router.post("/v1/spins/session/events",
                                         #"[{"type":"loginOK"},{"type":"login"},{"type":"forceLogout"},{"type":"logout"}]"#,
                                         query: [("wait", "true")])
        #expect(response.text == """
            {"sequence":2,"state":{"value":"loggedOut","context":{}},"replies":[{"applied":false,"reason":"no_transition"},\
            {"applied":true},{"applied":true},{"applied":false,"reason":"no_transition"}]}
            """)
        #expect(await router.respond("GET", "/v1/spins/session").object["sequence"] as? Int == 2)
    }

    /// A machine with one event's worth of states, hosted and started, and its router.
    static func host(_ json: String) throws -> (SpinHost, APIRouter) {
        let host = SpinHost()
        try host.host(machine: try MachineDefinition(json: Array(json.utf8), file: "test.json"), named: "m")
        host.start()
        return (host, makeRouter(host))
    }

    /// A machine whose guarded `always` transitions keep being enabled stops at the
    /// microstep limit, and the host suspends its Spin (as the runaway guard does):
    /// later events are refused until it is resumed.
    @Test func anEventlessLoop_SuspendsTheSpin_WithItsReason() async throws {
        let (host, router) = try Self.host(#"""
            { "initial": "idle", "context": { "on": false },
              "states": {
                "idle": { "on": { "START": { "target": "a", "actions": [ { "type": "assign", "set": { "on": true } } ] } } },
                "a": { "always": { "target": "b", "guard": { "eq": ["context.on", true] } } },
                "b": { "always": { "target": "a", "guard": { "eq": ["context.on", true] } } } } }
            """#)
        defer { host.stop() }
        let started = await router.post("/v1/spins/m/events", #"{"type":"START"}"#, query: [("wait", "true")])
        #expect(started.status == 200)
        let spin = await router.respond("GET", "/v1/spins/m").object
        #expect(spin["status"] as? String == "suspended")
        #expect(await router.post("/v1/spins/m/events", #"{"type":"START"}"#).status == 409)
        #expect(SpinHost.unsettledReason.contains("\(MachineDefinition.microstepLimit) microsteps"))
    }

    /// A machine in a top-level final state is done: `GET` says so, and each later event
    /// is answered `done` without a sequence.
    @Test func aMachineInATopLevelFinalState_IsDone() async throws {
        let (host, router) = try Self.host(#"""
            { "initial": "a", "states": { "a": { "on": { "END": "end" } }, "end": { "type": "final" } } }
            """#)
        defer { host.stop() }
        #expect(await router.respond("GET", "/v1/spins/m").object["status"] as? String == "running")
        let response = await router.post("/v1/spins/m/events", #"[{"type":"NOPE"},{"type":"END"},{"type":"END"}]"#,
                                         query: [("wait", "true")])
        #expect(response.text == """
            {"sequence":1,"state":{"value":"end","context":{}},"replies":[{"applied":false,"reason":"no_transition"},\
            {"applied":true},{"applied":false,"reason":"done"}]}
            """)
        #expect(await router.respond("GET", "/v1/spins/m").object["status"] as? String == "done")
        let spins = await router.respond("GET", "/v1/spins").object["spins"] as? [[String: Any]] ?? []
        #expect(spins.first?["status"] as? String == "done")
    }
}
