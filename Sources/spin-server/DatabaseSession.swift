import Logging
import SpinExamples

/// The auth-routing example's session in the Spins' PostgreSQL database: the row `name`
/// of `spin_example_sessions` (see `PostgresExampleSessions`), which every node of a
/// cluster reads and writes. A failed call is logged and thrown; `SessionService` then
/// answers unauthorized (a read) or leaves the session as the database has it (a write).
struct DatabaseSession: SessionStore {
    let sessions: PostgresExampleSessions
    let name: String
    /// Made with the kinds, after `SpinServerProgram` bootstrapped logging.
    let logger = Logger(label: "spin-server.example-session")

    init(url: String, name: String) {
        self.sessions = PostgresExampleSessions(url: url)
        self.name = name
    }

    func isValid() throws -> Bool {
        try logged("read") { try sessions.isValid(name) }
    }

    func setValid(_ valid: Bool) throws {
        try logged(valid ? "start" : "end") { try sessions.setValid(valid, name) }
    }

    private func logged<T>(_ what: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            logger.warning("could not \(what) the example session \"\(name)\" in the database: \(error)")
            throw error
        }
    }
}
