import Logging
import SpinCore
import SpinServer
import Testing

// What the "Host your own Spin" section of README.md says of `SpinHost` without a config
// file: a user's Spin with Codable state and events, hosted next to nothing else, served
// on a free port with start() and shutdown().
struct Thermostat: Codable, Equatable, Sendable {
    var target: Double
    var heating: Bool
}

enum ThermostatEvent: Codable, Equatable, Sendable {
    case setTarget(Double)
    case heat(Bool)
}

func makeThermostat() -> Spin<Thermostat, ThermostatEvent> {
    Spin(initialState: Thermostat(target: 19, heating: false)) {
        // A feedback decides to heat while the target is above 20 degrees.
        Feedback(effect: { (state: Thermostat) -> ThermostatEvent? in
            state.heating != (state.target > 20) ? .heat(state.target > 20) : nil
        })
        Reducer { (state: Thermostat, event: ThermostatEvent) -> Thermostat in
            switch event {
            case .setTarget(let target): Thermostat(target: target, heating: state.heating)
            case .heat(let on): Thermostat(target: state.target, heating: on)
            }
        }
    }
}

// Serialized: the raw clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct HostingReadmeTests {
    @Test func aUsersOwnSpin_IsServed() async throws {
        let host = SpinHost()
        try host.host(makeThermostat(), named: "thermostat")
        let server = LoopServer(configuration: SpinServerConfiguration(port: 0), host: host,
                                logger: Logger(label: "thermostat"))
        let port = try server.start()

        // Swift's synthesized Codable: {"setTarget":{"_0":22}}.
        let post = try LiveServerTests.post(port, "/v1/spins/thermostat/events", #"{"setTarget":{"_0":22}}"#)
        #expect(post.status == 202)
        var heating = false
        for _ in 0..<2000 where !heating {
            let client = try RawClient(port: port)
            client.send("GET /v1/spins/thermostat HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let state = client.readResponse()?.body.jsonObject["state"] as? [String: Any]
            heating = state?["heating"] as? Bool ?? false
            if !heating { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(heating)
        await server.shutdown()
    }
}
