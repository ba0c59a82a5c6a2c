import ArgumentParser
import SpinServer

// spin-server: flags + SPIN_* variables + Config/spin-server.json -> a LoopServer hosting
// the configured Spins and Gears; stops gracefully on SIGTERM or SIGINT. Public API only
// (`SpinServerOptions`, `SpinServerProgram`): a program hosting its own kinds writes the
// same lines with its own SpinKindRegistry (Examples/Greeter, Examples/TodoServer).
//
// Exit codes: 0 stopped by a signal (or --check-config or --check-upgrade passed); 64
// (EX_USAGE) bad configuration or flags; 1 the server could not start (port in use,
// certificate, corrupt journal, storage directory in use) or could not make every event
// durable at shutdown; 65 (EX_DATAERR) --check-upgrade found Spins an upgrade would leave
// unrecoverable.

/// The command line of `spin-server`: `SpinServerOptions` (public, for any program that
/// hosts Spins) under spin-server's name and help, run as a `SpinServerProgram` hosting
/// the examples (`SpinKindRegistry.examples`) and the configured machines.
@main
struct SpinServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spin-server",
        abstract: "Hosts feedback loops (Spins) over HTTP, WebSocket and SSE.",
        discussion: SpinServerOptions.discussion
    )

    @OptionGroup var options: SpinServerOptions

    static func main() async {
        MallocTuning.restartTuned()
        await main(nil)
    }

    func run() async throws {
        try await SpinServerProgram(options, kinds: .examples).run()
    }
}
