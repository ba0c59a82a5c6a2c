import ArgumentParser
import Logging
import SpinCore
import SpinServer

/// `{"type":"greet","name":"Ada"}` makes the state `{"message":"Hello, Ada!","count":1}`.
enum Greeting {
    struct State: Codable, Equatable, Sendable {
        var message = ""
        var count = 0
    }

    enum Event: TypeTaggedEvent, Equatable, Sendable {
        case greet(name: String)

        static let eventTypes: EventTypes<Event> = [
            .type("greet", Event.greet, .field("name", .string(minLength: 1))) { if case .greet(let name) = $0 { name } else { nil } },
        ]
    }

    /// A feedback that logs each greeting (emitting no event), and the reducer.
    static func spin(logger: Logger) -> Spin<State, Event> {
        Spin(initialState: State()) {
            Feedback(effect: { (state: State) -> Event? in
                if state.count > 0 { logger.info("greeted", metadata: ["greeting": "\(state.message)"]) }
                return nil
            })
            Reducer { (state: State, event: Event) -> State in
                switch event {
                case .greet(let name): State(message: "Hello, \(name)!", count: state.count + 1)
                }
            }
        }
    }
}

/// `greeter [--port N] [--log-format json] ...`: every flag and SPIN_* variable of spin-server.
@main
struct GreeterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "greeter", abstract: "Greets over HTTP.",
                                                    discussion: SpinServerOptions.discussion)

    @OptionGroup var options: SpinServerOptions

    func run() async throws {
        var kinds = SpinKindRegistry()
        kinds.register("greeter") { context in
            context.logger.info("hosting a greeter")   // the kind's own logger, labelled "greetings"
            try context.host(Greeting.spin(logger: context.logger))
        }
        // Loads greeter.json, SPIN_* and the flags, and bootstraps logging and metrics with them
        // (exit 64 on a bad configuration); then hosts, and serves until SIGTERM or SIGINT.
        let program = try SpinServerProgram(options, kinds: kinds, defaultConfigFile: "greeter.json")
        try await program.serve(program.makeHost())
    }
}
