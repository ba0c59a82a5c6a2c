import Foundation
import Logging
import SpinClient
import SpinExamples
import SpinServer
import Testing

// The "Swift client" section of docs/PROTOCOL.md, verbatim but for the base URL (the server
// listens on a free port), so that the document cannot drift from the API
// (Tests/e2e/test_readme.py checks that its lines are here).
@Suite(.timeLimit(.minutes(1)))
struct ReadmeTests {
    struct Outcome {
        var accepted: Accepted
        var applied: Applied<Levels.State>
        var now: SpinSnapshot<Levels.State>
    }

    func readme(port: Int) async throws -> Outcome {
        let client = SpinClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        let accepted = try await client.post([Levels.Event.increaseLeft], to: "levels")     // 202: accepted, sequence
        let applied = try await client.post([Levels.Event.set(left: 1, right: 1)], to: "levels",
                                            waitingFor: Levels.State.self)                   // ?wait=true: sequence, state, replies
        let now = try await client.state(of: "levels", as: Levels.State.self)               // sequence, status, state

        for try await update in client.states(of: "levels", as: Levels.State.self) {
            print(update.kind, update.sequence, update.state)   // a snapshot first, then one state per event
            if update.state.left == update.state.right { break }
        }
        return Outcome(accepted: accepted, applied: applied, now: now)
    }

    @Test func theReadmeExample_RunsAgainstTheExampleLevels() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let host = SpinHost()
        try host.host(Levels.spin(), named: "levels", kind: "levels")
        let server = LoopServer(configuration: SpinServerConfiguration(port: 0), host: host, logger: logger)
        let outcome = try await readme(port: try server.start())
        #expect(outcome.accepted.accepted == 1)
        #expect(outcome.applied.state == Levels.State(left: 1, right: 1))
        #expect(outcome.now.sequence >= outcome.applied.sequence)
        await server.shutdown()
    }
}
