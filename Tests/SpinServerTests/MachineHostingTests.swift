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
}
