import Foundation
import SpinStorage
import Testing

/// Against a real PostgreSQL: `SPIN_TEST_DATABASE_URL` names a server whose user may
/// create databases (`Tests/postgres/pg.sh start DIR` prints one; `Tests/run.sh` sets it).
/// Each test works in a database of its own. Without the variable the suite is skipped.
/// The test server's URL, from the environment.
private let testServerURL = ProcessInfo.processInfo.environment["SPIN_TEST_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }

@Suite(.enabled(if: testServerURL != nil,
                "SPIN_TEST_DATABASE_URL is not set: the PostgreSQL store tests are skipped (Tests/postgres/pg.sh starts a server)"))
struct PostgresSpinStoreTests {
    static let serverURL = testServerURL

    /// A fresh database on the test server; its URL.
    static func freshDatabase() throws -> String {
        let server = try #require(serverURL)
        let name = "spin_test_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(url: server)
        try admin.execute("CREATE DATABASE \(name)")
        admin.close()
        // postgresql://user@host:port/db?params → the same with our database.
        let withoutQuery = server.split(separator: "?", maxSplits: 1).first.map(String.init) ?? server
        let base = withoutQuery.hasPrefix("postgres") ? String(withoutQuery[..<withoutQuery.lastIndex(of: "/")!]) : withoutQuery
        return "\(base)/\(name)"
    }

    static func record(_ sequence: UInt64, endsBatch: Bool = true, payload: [UInt8] = Array(#"{"type":"increase"}"#.utf8)) -> JournalRecord.Record {
        JournalRecord.Record(sequence: sequence, payload: payload, endsBatch: endsBatch)
    }

    /// Opens a store on `url` and readies `spin`'s journal, as recovery does.
    static func make(_ url: String, spin: String = "counter", fence: (any JournalFence)? = nil) throws -> (PostgresSpinStore, StoredSpin) {
        let store = PostgresSpinStore(url: url, fence: fence)
        return (store, try FileSpinStoreTests.ready(store, spin: spin))
    }

    @Test func committedBatches_AreReadBack_AfterAStop_WithTheCleanMark() throws {
        let url = try Self.freshDatabase()
        let (store, empty) = try Self.make(url)
        #expect(empty.records.isEmpty && empty.snapshot == nil && empty.epoch == nil && empty.damage == nil)
        try store.writeEpoch("e1", spin: "counter")
        // Every byte value, NUL included, goes through unchanged.
        let binary = Self.record(1, payload: (0...255).map { UInt8($0) })
        try store.append([binary], spin: "counter")
        try store.append([Self.record(2, endsBatch: false), Self.record(3)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        try store.markClean()
        store.close()

        let again = PostgresSpinStore(url: url)
        #expect(try again.open() == true)
        let stored = try again.read(spin: "counter", repair: false)
        #expect(stored.records == [binary, Self.record(2, endsBatch: false), Self.record(3)])
        #expect(stored.epoch == "e1")
        #expect(try again.read(spin: "other", repair: false).records.isEmpty)
        again.close()
    }

    @Test func aStoreInUse_WasNotStoppedCleanly() throws {
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url)
        store.close()
        let again = PostgresSpinStore(url: url)
        #expect(try again.open() == false)
        again.close()
    }

    @Test func aSecondServer_OnTheSameDatabase_CannotOpen_UntilTheFirstCloses() throws {
        let url = try Self.freshDatabase()
        let (first, _) = try Self.make(url)
        // Refused after asking again for 0.2 s (a session that just ended gets 2 s).
        let second = PostgresSpinStore(url: url, ownershipGrace: 0.2)
        #expect {
            _ = try second.open()
        } throws: { error in
            "\(error)".contains("another spin-server uses this database") && "\(error)".contains("backend pid")
        }
        first.close()
        _ = try second.open()
        second.close()
    }

    /// A closed or ended session lets go of the server's lock only once its backend has
    /// exited, a little after the connection closed: a server started straight after the
    /// last one stopped (or reconnecting after the database ended its session) finds that
    /// session still there. It is waited for, not taken for another server.
    @Test func aSessionJustEnded_IsWaitedFor_NotTakenForAnotherServer() throws {
        let url = try Self.freshDatabase()
        let admin = try PostgresConnection(url: url)
        for _ in 0..<50 {
            let store = PostgresSpinStore(url: url)
            _ = try store.open()
            store.close()
        }
        let (store, _) = try Self.make(url)
        for _ in 0..<20 {
            _ = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
            try store.probe()
        }
        try store.append([Self.record(1)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        #expect(try store.read(spin: "counter", repair: false).records == [Self.record(1)])
        store.close()
        admin.close()
    }

    @Test func nothingAppended_IsStored_BeforeACommit_AndDiscardedAppendsNever() throws {
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url)
        try store.append([Self.record(1)], spin: "counter")
        try store.commit(spin: "counter", sync: false)
        try store.append([Self.record(2)], spin: "counter")
        #expect(try store.read(spin: "counter", repair: false).records == [Self.record(1)])
        store.discardUncommitted(spin: "counter")
        try store.commit(spin: "counter", sync: true)
        try store.append([Self.record(2)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        #expect(try store.read(spin: "counter", repair: false).records == [Self.record(1), Self.record(2)])
        store.close()
    }

    @Test func compaction_ReplacesTheSnapshot_AndKeepsOnlyTheGivenRecords() throws {
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url)
        try store.append((1...5).map { Self.record($0) }, spin: "counter")
        try store.commit(spin: "counter", sync: true)
        try store.compact(spin: "counter", snapshot: Array(#"{"sequence":3}"#.utf8), records: [Self.record(4), Self.record(5)])
        try store.append([Self.record(6)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        var stored = try store.read(spin: "counter", repair: false)
        #expect(stored.snapshot == Array(#"{"sequence":3}"#.utf8))
        #expect(stored.records.map(\.sequence) == [4, 5, 6])

        // A compaction keeping nothing empties the journal.
        try store.compact(spin: "counter", snapshot: Array(#"{"sequence":6}"#.utf8), records: [])
        stored = try store.read(spin: "counter", repair: false)
        #expect(stored.snapshot == Array(#"{"sequence":6}"#.utf8) && stored.records.isEmpty)
        store.close()
    }

    /// A record of a batch without its end (2, not ending it), and a record after a gap
    /// (3: as if the commit of 2 failed while the one of 3, on another connection, went
    /// through): a torn tail, cut at start, and the journal goes on after record 1.
    @Test(arguments: ["2, '\\x7b7d', false", "3, '\\x7b7d', true"])
    func recordsAfterTheLastWholeBatch_AreATornTail_CutAtStart(row: String) throws {
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url)
        try store.append([Self.record(1)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        store.close()
        let admin = try PostgresConnection(url: url)
        _ = try admin.query("INSERT INTO spin_journal VALUES ('counter', \(row))")

        let (again, stored) = try Self.make(url)
        #expect(stored.records == [Self.record(1)])
        #expect(stored.damage?.kind == .tornTail)
        #expect(try admin.query("SELECT count(*) FROM spin_journal").int(0, 0) == 1)
        try again.append([Self.record(2)], spin: "counter")
        try again.commit(spin: "counter", sync: true)
        #expect(try again.read(spin: "counter", repair: false).records == [Self.record(1), Self.record(2)])
        again.close()
        admin.close()
    }

    @Test func aLostConnection_FailsTheCommit_ProbeReconnects_AndReopenDropsWhatWasNotAcknowledged() throws {
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url)
        try store.append([Self.record(1)], spin: "counter")
        try store.commit(spin: "counter", sync: true)

        let admin = try PostgresConnection(url: url)
        _ = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        try store.append([Self.record(2)], spin: "counter")
        #expect(throws: PostgresError.self) { try store.commit(spin: "counter", sync: true) }
        store.discardUncommitted(spin: "counter")
        // As if the lost commit had reached the database after all: never acknowledged.
        _ = try admin.query("INSERT INTO spin_journal VALUES ('counter', 2, '\\x7b7d', true)")

        try store.probe()
        try store.reopen(spin: "counter")
        try store.append([Self.record(2)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        #expect(try store.read(spin: "counter", repair: false).records == [Self.record(1), Self.record(2)])
        // The single-server lock was taken again with the new connection.
        #expect(throws: (any Error).self) { try PostgresSpinStore(url: url).open() }
        store.close()
        admin.close()
    }

    @Test func commitsOnTheirWay_CompleteInOrder_AndAFailedOneFailsTheOnesAfterIt() throws {
        // Holds the first commit's transaction until `release`, refuses the second's.
        final class Fence: JournalFence, @unchecked Sendable {
            let lock = NSLock()
            var checks = 0
            let release = DispatchSemaphore(value: 0)
            func check(spin: String, connection: PostgresConnection) throws {
                let count = lock.withLock { checks += 1; return checks }
                if count == 1 { release.wait() }
                if count == 2 { throw FencedOut(node: "n", spin: spin, partition: 0, epoch: 1) }
            }
            var count: Int { lock.withLock { checks } }
        }
        final class Told: @unchecked Sendable {
            let lock = NSLock()
            var outcomes: [String] = []
            func tell(_ name: String, _ error: (any Error)?) {
                lock.withLock { outcomes.append(error == nil ? name : "\(name) failed") }
            }
        }
        func waitUntil(_ condition: () throws -> Bool) throws {
            let deadline = Date().addingTimeInterval(10)
            while try !condition(), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            #expect(try condition())
        }
        let url = try Self.freshDatabase()
        let fence = Fence()
        let (store, _) = try Self.make(url, fence: fence)
        let admin = try PostgresConnection(url: url)
        let told = Told()
        let all = DispatchGroup()
        for sequence in UInt64(1)...3 {
            try store.append([Self.record(sequence)], spin: "counter")
            all.enter()
            store.beginCommit(spin: "counter", sync: true) { told.tell("\(sequence)", $0); all.leave() }
            // Each on a connection of its own, the first still in its transaction.
            try waitUntil { fence.count == Int(sequence) }
        }
        // The third reached the database before the first: nothing is told before the first.
        try waitUntil { try admin.query("SELECT count(*) FROM spin_journal WHERE sequence = 3").int(0, 0) == 1 }
        #expect(told.outcomes.isEmpty)
        fence.release.signal()
        all.wait()
        #expect(told.outcomes == ["1", "2 failed", "3 failed"])
        // What the failure leaves: the third's record, after a commit that failed, goes.
        store.discardUncommitted(spin: "counter")
        try store.probe()
        try store.reopen(spin: "counter")
        #expect(try store.read(spin: "counter", repair: false).records == [Self.record(1)])
        try store.append([Self.record(2)], spin: "counter")
        try store.commit(spin: "counter", sync: true)
        #expect(try store.read(spin: "counter", repair: false).records == [Self.record(1), Self.record(2)])
        store.close()
        admin.close()
    }

    @Test func commitsTheDatabaseLost_HoldTheJournal_AndTheStopIsNotClean() throws {
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url)
        try store.append([Self.record(1)], spin: "counter")
        try store.append([Self.record(2)], spin: "counter")
        try store.commit(spin: "counter", sync: false)
        // As if the database crashed with synchronous_commit off before flushing record 2.
        let admin = try PostgresConnection(url: url)
        _ = try admin.query("DELETE FROM spin_journal WHERE sequence = 2")
        _ = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        try store.append([Self.record(3)], spin: "counter")
        #expect(throws: PostgresError.self) { try store.commit(spin: "counter", sync: false) }
        store.discardUncommitted(spin: "counter")
        try store.probe()
        #expect(throws: PostgresSpinStore.LostCommits.self) { try store.reopen(spin: "counter") }
        #expect(throws: PostgresSpinStore.LostCommits.self) { try store.markClean() }
        store.close()
        let again = PostgresSpinStore(url: url)
        #expect(try again.open() == false)
        again.close()
        admin.close()
    }

    @Test func aFenceThatRefuses_StoresNothing() throws {
        struct Refuse: JournalFence, Error {
            func check(spin: String, connection: PostgresConnection) throws {
                // The fence runs in the append's transaction: what it writes is undone too.
                _ = try connection.query("INSERT INTO spin_partitions VALUES (0, $1, 2, now())", [.text(spin)])
                throw Refuse()
            }
        }
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url, fence: Refuse())
        try store.append([Self.record(1)], spin: "counter")
        #expect(throws: Refuse.self) { try store.commit(spin: "counter", sync: true) }
        let admin = try PostgresConnection(url: url)
        #expect(try admin.query("SELECT count(*) FROM spin_journal").int(0, 0) == 0)
        #expect(try admin.query("SELECT count(*) FROM spin_partitions").int(0, 0) == 0)
        store.close()
        admin.close()
    }

    @Test func theSchema_IsVersioned_MigratedOnce_AndANewerOneIsRefused() throws {
        let url = try Self.freshDatabase()
        let admin = try PostgresConnection(url: url)
        #expect(try PostgresSchema.migrate(admin) == 0)
        #expect(try PostgresSchema.migrate(admin) == PostgresSchema.currentVersion)
        for table in ["spin_journal", "spin_snapshots", "spin_epochs", "spin_suspensions", "spin_partitions", "spin_nodes",
                      "spin_cluster_settings"] {
            #expect(try admin.query("SELECT to_regclass($1) IS NOT NULL", [.text(table)]).bool(0, 0) == true, "\(table)")
        }
        // The per-Spin leases of releases before 5 are gone: a node of such a release
        // can neither renew nor pass its fence against this database.
        #expect(try admin.query("SELECT to_regclass('spin_leases') IS NULL").bool(0, 0) == true)
        _ = try admin.query("INSERT INTO spin_schema_version (version) VALUES ($1::int4)", [.int64(Int64(PostgresSchema.currentVersion + 1))])
        #expect {
            _ = try PostgresSpinStore(url: url).open()
        } throws: { "\($0)".contains("newer than this server knows") }
        admin.close()
    }

    @Test func suspensions_AreStoredAndRemoved() throws {
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url)
        #expect(try store.suspension(of: "counter") == nil)
        try store.storeSuspension(Array(#"{"reason":"runaway"}"#.utf8), of: "counter")
        #expect(try store.suspension(of: "counter") == Array(#"{"reason":"runaway"}"#.utf8))
        store.removeSuspension(of: "counter")
        #expect(try store.suspension(of: "counter") == nil)
        store.close()
    }

    @Test func historySegments_AreFoundFromAnySequence_TrimmedByAge_AndDeletedWithTheirSpin() throws {
        let url = try Self.freshDatabase()
        let (store, _) = try Self.make(url)
        func segment(_ first: UInt64, _ last: UInt64, time: Int64 = 1000) -> HistorySegment {
            HistorySegment(first: first, last: last, lastTime: time, base: first == 1 ? nil : Array("{\"sequence\":\(first - 1)}".utf8),
                           records: JournalRecord.encode(sequence: first, payload: Array("{}".utf8)))
        }
        #expect(try store.archived(spin: "door-1") == nil)
        try store.make([(name: "door-1", spin: MadeSpin(kind: "door"), epoch: "e")])
        try store.archive([segment(1, 10), segment(11, 20)], spin: "door-1")
        try store.archive([segment(21, 25, time: 5000)], spin: "door-1")
        try store.archive([segment(1, 10)], spin: "door-2")
        #expect(try store.archived(spin: "door-1") == 1...25)
        #expect(try store.history(of: "door-1", from: 10, limit: 10) == [segment(1, 10), segment(11, 20), segment(21, 25, time: 5000)])
        #expect(try store.history(of: "door-1", from: 11, limit: 1) == [segment(11, 20)])
        // The same end again replaces it.
        try store.archive([segment(16, 20)], spin: "door-1")
        #expect(try store.history(of: "door-1", from: 20, limit: 1).first?.first == 16)
        #expect(try store.trimHistory(before: 2000) == 3)
        #expect(try store.archived(spin: "door-1") == 21...25 && store.archived(spin: "door-2") == nil)
        try store.delete("door-1")
        #expect(try store.archived(spin: "door-1") == nil)
        store.close()
    }

    @Test func anUnreachableDatabase_FailsToOpen_SayingWhere() throws {
        let store = PostgresSpinStore(url: "postgresql://nobody@127.0.0.1:1/spin", connectTimeout: 2)
        #expect {
            _ = try store.open()
        } throws: { "\($0)".contains("PostgreSQL database host=127.0.0.1 port=1 dbname=spin user=nobody") }
    }
}

/// Connection strings are checked without connecting (no server needed).
@Suite struct PostgresConnectionStringTests {
    @Test func aBadConnectionString_IsReported_AndAGoodOneDescribedWithoutItsPassword() {
        #expect(PostgresConnection.problem(inConnectionString: "postgresql://u:secret@db:5432/spin") == nil)
        #expect(PostgresConnection.problem(inConnectionString: "host=db nonsense") != nil)
        let described = PostgresConnection.describe(connectionString: "postgresql://u:secret@db:5432/spin")
        #expect(described == "host=db port=5432 dbname=spin user=u")
        #expect(!described.contains("secret"))
    }

    /// A result with no row where one was expected (a lock's holder that let go between
    /// two statements) reads as nil: a server starting then must not trap.
    @Test func aRowOrColumnTheResultLacks_ReadsAsNil() {
        let rows = PostgresRows(rows: [[Array("7".utf8), nil]])
        #expect(rows.text(0, 0) == "7")
        #expect(rows.text(0, 1) == nil)
        #expect(rows.text(0, 2) == nil && rows.bytes(1, 0) == nil && rows.int(-1, 0) == nil)
        let none = PostgresRows(rows: [])
        #expect(none.text(0, 0) == nil && none.bool(0, 0) == nil && none.double(0, 0) == nil)
    }
}

/// Spins made at run time on PostgreSQL (`spin_made`): made, listed in byte order, counted,
/// resting, woken, deleted with their history and made again; on a cluster only under the
/// lease of the name's partition.
@Suite(.enabled(if: PostgresSpinStoreTests.serverURL != nil,
                "SPIN_TEST_DATABASE_URL is not set: the PostgreSQL made-Spin tests are skipped (Tests/postgres/pg.sh starts a server)"))
struct PostgresMadeSpinTests {
    @Test func madeSpins_AreListedCountedRestedAndDeletedWithTheirHistory() throws {
        let url = try PostgresSpinStoreTests.freshDatabase()
        let store = PostgresSpinStore(url: url)
        _ = try store.open()
        defer { store.close() }
        let door = MadeSpin(kind: "door", joined: ["sender": 4], outboxBase: 1000)
        try store.make([("door-b", door, "e1"), ("door-a", door, "e2"), ("Door-c", MadeSpin(kind: "window"), "e3")])
        #expect(try store.madeSpin(named: "door-a") == door)
        #expect(try store.madeSpin(named: "door-z") == nil)
        #expect(try store.madeSpinCounts() == ["door": 2, "window": 1])
        // Byte order: "D" sorts before "d".
        #expect(try store.madeSpins(prefix: "", after: nil, limit: 10).map(\.name) == ["Door-c", "door-a", "door-b"])
        #expect(try store.madeSpins(prefix: "door-", after: nil, limit: 1).map(\.name) == ["door-a"])
        #expect(try store.madeSpins(prefix: "door-", after: "door-a", limit: 10).map(\.name) == ["door-b"])
        #expect(try store.madeSpins(prefix: "door-", after: "a", limit: 10).map(\.name) == ["door-a", "door-b"])
        #expect(try store.madeSpins(prefix: "x", after: nil, limit: 10).isEmpty)
        // A start reads the Spins that do not rest, and every one of the kinds asked for.
        #expect(Set(try store.madeSpins(repair: false, including: []).keys) == ["door-a", "door-b", "Door-c"])

        try store.startJournal(spin: "door-a", cuttingAt: nil)
        try store.append([PostgresSpinStoreTests.record(1)], spin: "door-a")
        try store.commit(spin: "door-a", sync: true)
        try store.rest("door-a", sequence: 1, consumed: ["sender": 6])
        #expect(try store.madeSpin(named: "door-a")?.resting == MadeSpin.Resting(sequence: 1, consumed: ["sender": 6]))
        #expect(try store.madeSpins(prefix: "door-a", after: nil, limit: 1).first?.sequence == 1)
        #expect(Set(try store.madeSpins(repair: false, including: []).keys) == ["door-b", "Door-c"])
        #expect(Set(try store.madeSpins(repair: false, including: ["door"]).keys) == ["door-a", "door-b", "Door-c"])
        // Readied again (woken): no longer resting.
        try store.startJournal(spin: "door-a", cuttingAt: nil)
        #expect(try store.madeSpin(named: "door-a")?.resting == nil)

        try store.delete("door-a")
        #expect(try store.madeSpin(named: "door-a") == nil)
        #expect(try store.read(spin: "door-a", repair: false).records.isEmpty)
        #expect(try store.read(spin: "door-a", repair: false).epoch == nil)
        #expect(try store.madeSpinCounts() == ["door": 1, "window": 1])
        // Made again: a new epoch, no history.
        try store.make([("door-a", door, "e4")])
        let again = try store.read(spin: "door-a", repair: false)
        #expect(again.records.isEmpty && again.epoch == "e4")
        // A name that exists is not made twice.
        #expect(throws: PostgresError.self) { try store.make([("door-b", door, "e5")]) }
        #expect(try store.read(spin: "door-b", repair: false).epoch == "e1")
    }

    @Test func onACluster_MakeRestAndDelete_NeedTheLeaseOfTheNamesPartition() throws {
        let url = try PostgresSpinStoreTests.freshDatabase()
        let cluster = PostgresClusterStore(url: url)
        try cluster.open()
        defer { cluster.close() }
        let partitions = SpinPartitions(count: 8)
        let fence = LeaseFence(node: "a", partitions: partitions)
        let store = PostgresSpinStore(url: url, ownership: .shared(node: "a"), fence: fence)
        _ = try store.open()
        defer { store.close() }
        let partition = partitions.partition(of: "door-1")
        #expect(throws: FencedOut.self) { try store.make([("door-1", MadeSpin(kind: "door"), "e1")]) }
        #expect(try store.madeSpin(named: "door-1") == nil)
        _ = try #require(try cluster.acquire(partition: partition, node: "a", epoch: 1, seconds: 30))
        fence.serve(partition: partition, epoch: 1)
        try store.make([("door-1", MadeSpin(kind: "door"), "e1")])
        try store.rest("door-1", sequence: 0, consumed: [:])
        // Taken over: this node neither rests nor deletes the Spin any more.
        try cluster.release(partition: partition, node: "a", epoch: 1)
        _ = try #require(try cluster.acquire(partition: partition, node: "b", epoch: 2, seconds: 30))
        #expect(throws: FencedOut.self) { try store.delete("door-1") }
        #expect(try store.madeSpin(named: "door-1")?.resting != nil)
    }

    @Test func aGroupKey_PutsTheSpinsOfOneGearInOnePartition() {
        let partitions = SpinPartitions(count: 64) { name in
            name.hasPrefix("feature-") || name.hasPrefix("router-") ? String(name.split(separator: "-")[1]) : nil
        }
        #expect(partitions.partition(of: "feature-42") == partitions.partition(of: "router-42"))
        #expect(partitions.partition(of: "feature-42") == SpinPartitions(count: 64).partition(of: "42"))
        #expect(partitions.partition(of: "counter") == SpinPartitions(count: 64).partition(of: "counter"))
    }
}
