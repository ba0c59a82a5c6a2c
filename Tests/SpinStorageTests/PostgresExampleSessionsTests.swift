import SpinStorage
import Testing

/// `PostgresExampleSessions` against a real PostgreSQL (`SPIN_TEST_DATABASE_URL`, as for
/// `PostgresSpinStoreTests`): two instances play two nodes of one cluster.
@Suite(.enabled(if: PostgresSpinStoreTests.serverURL != nil,
                "SPIN_TEST_DATABASE_URL is not set: the PostgreSQL example session tests are skipped (Tests/postgres/pg.sh starts a server)"))
struct PostgresExampleSessionsTests {
    @Test func aFreshDatabase_HasAValidSession_AndEveryNodeSeesAnEndAndAStart() throws {
        let url = try PostgresSpinStoreTests.freshDatabase()
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
        let url = try PostgresSpinStoreTests.freshDatabase()
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
}
