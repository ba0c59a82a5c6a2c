import Foundation
import SpinStorage
import Testing
import spin_server

/// The test server's URL (`SPIN_TEST_DATABASE_URL`), nil when unset.
private let testServerURL = ProcessInfo.processInfo.environment["SPIN_TEST_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }

/// `PostgresExampleSessions` against a real PostgreSQL (`SPIN_TEST_DATABASE_URL`, as for
/// SpinStorageTests' `PostgresSpinStoreTests`): two instances play two nodes of one cluster.
@Suite(.enabled(if: testServerURL != nil,
                "SPIN_TEST_DATABASE_URL is not set: the PostgreSQL example session tests are skipped (Tests/postgres/pg.sh starts a server)"))
struct PostgresExampleSessionsTests {
    /// A fresh database on the test server; its URL (the server's, with that database).
    static func freshDatabase() throws -> String {
        let name = "spin_test_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(url: try #require(testServerURL))
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(name)")
        var url = try #require(URLComponents(string: testServerURL ?? ""))
        url.path = "/\(name)"
        return try #require(url.string)
    }

    @Test func aFreshDatabase_HasAValidSession_AndEveryNodeSeesAnEndAndAStart() throws {
        let url = try Self.freshDatabase()
        let first = PostgresExampleSessions(url: url)
        let second = PostgresExampleSessions(url: url)
        defer { first.close(); second.close() }
        #expect(try first.isValid("auth"))

        try second.setValid(false, "auth")
        #expect(try first.isValid("auth") == false)
        #expect(try first.isValid("other"))   // one session per name
        // A node joining reads the session as it is; it does not start a new one.
        let joining = PostgresExampleSessions(url: url)
        #expect(try joining.isValid("auth") == false)
        joining.close()

        try first.setValid(true, "auth")
        #expect(try second.isValid("auth"))
    }

    @Test func aWriteBlockedInTheDatabase_FailsAtTheStatementTimeout_AndTheNextCallWorks() throws {
        let url = try Self.freshDatabase()
        let sessions = PostgresExampleSessions(url: url)
        defer { sessions.close() }
        try sessions.setValid(true, "auth")
        // Another session holds the row: the write waits for it, up to the timeout.
        let holder = try PostgresConnection(url: url)
        try holder.execute("BEGIN; SELECT * FROM spin_example_sessions WHERE name = 'auth' FOR UPDATE")
        #expect(throws: PostgresError.self) { try sessions.setValid(false, "auth") }
        try holder.execute("ROLLBACK")
        holder.close()
        try sessions.setValid(false, "auth")
        #expect(try sessions.isValid("auth") == false)
    }

    @Test func anUnreachableDatabase_Throws() {
        let sessions = PostgresExampleSessions(url: "postgresql://nobody@127.0.0.1:1/spin", connectTimeout: 2)
        #expect(throws: PostgresError.self) { try sessions.isValid("auth") }
        #expect(throws: PostgresError.self) { try sessions.setValid(false, "auth") }
    }

    /// A database an earlier release made: the Spins' tables at the newest version, and
    /// the session table made by the storage's migration 3 (the same SQL), with a row.
    /// The sessions read and write it as they are; a server starting migrates nothing.
    @Test func aDatabaseOfTheEarlierRelease_KeepsItsSessions() throws {
        let url = try Self.freshDatabase()
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        try PostgresSchema.migrate(admin)
        try admin.execute(PostgresExampleSessions.table.replacingOccurrences(of: " IF NOT EXISTS", with: ""))
        try admin.execute("INSERT INTO spin_example_sessions (name, valid) VALUES ('auth', false)")
        let sessions = PostgresExampleSessions(url: url)
        defer { sessions.close() }
        #expect(try sessions.isValid("auth") == false)
        try sessions.setValid(true, "auth")
        #expect(try sessions.isValid("auth"))
        #expect(try PostgresSchema.migrate(admin) == PostgresSchema.currentVersion)
    }
}
