import ArgumentParser
import SpinServer
import TodoKinds

/// todo-server: todo-server.json (or --config PATH) + SPIN_* variables + spin-server's flags
/// -> the todo kinds hosted by a LoopServer, stopped gracefully by SIGTERM or SIGINT.
/// Exit codes: 0 after a signal, 64 bad configuration, 1 could not start or persist.
@main
struct TodoServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "todo-server", abstract: "A todo list over HTTP.",
                                                    discussion: SpinServerOptions.discussion)

    @OptionGroup var options: SpinServerOptions

    func run() async throws {
        let program = try SpinServerProgram(options, kinds: todoKinds(), defaultConfigFile: "todo-server.json")
        try await program.run()   // logs "listening on http://...", serves, stops on a signal
    }
}
