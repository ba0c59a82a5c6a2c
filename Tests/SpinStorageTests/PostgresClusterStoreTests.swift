import Foundation
import SpinStorage
import Testing

/// `PostgresClusterStore` and `LeaseFence` against a real PostgreSQL
/// (`SPIN_TEST_DATABASE_URL`, as for `PostgresSpinStoreTests`): two store instances play
/// two nodes of one cluster. Each test works in a database of its own.
@Suite(.enabled(if: PostgresSpinStoreTests.serverURL != nil,
                "SPIN_TEST_DATABASE_URL is not set: the PostgreSQL cluster store tests are skipped (Tests/postgres/pg.sh starts a server)"))
struct PostgresClusterStoreTests {
    /// Two opened stores on one fresh database, and its URL.
    static func twoNodes() throws -> (PostgresClusterStore, PostgresClusterStore, String) {
        let url = try PostgresSpinStoreTests.freshDatabase()
        let a = PostgresClusterStore(url: url)
        let b = PostgresClusterStore(url: url)
        try a.open()
        try b.open()
        return (a, b, url)
    }

    /// Writes outbox rows as a node's journal does (`PostgresSpinStore.commit` of a batch
    /// holding an outbox record); each call is a batch of one Gear event of `spin`.
    final class OutboxWriter: @unchecked Sendable {
        let store: PostgresSpinStore
        private let lookup: PostgresConnection
        private var positions: [String: UInt64] = [:]
        private let lock = NSLock()

        init(url: String, node: String) throws {
            store = PostgresSpinStore(url: url, ownership: .shared(node: node))
            _ = try store.open()
            lookup = try PostgresConnection(url: url)
        }

        /// Commits one Gear event of `spin` on `gear`; returns its outbox position (commit order).
        @discardableResult
        func publish(gear: String, spin: String = "s", payload: [UInt8]) throws -> Int64 {
            try lock.withLock {
                if positions[spin] == nil {
                    positions[spin] = try store.read(spin: spin, repair: false).lastOutboxPosition
                    try store.startJournal(spin: spin, cuttingAt: nil)
                }
                let position = positions[spin]! + 1
                let record = OutboxRecord(position: position, gear: gear, cause: 0, event: payload)
                try store.append([record.journalRecord(endsBatch: true)], spin: spin)
                do {
                    try store.commit(spin: spin, sync: true)
                } catch {
                    store.discardUncommitted(spin: spin)
                    throw error
                }
                positions[spin] = position
                return try lookup.query("SELECT position FROM spin_gear_outbox WHERE sender = $1 AND sender_position = $2",
                                        [.text(spin), .int64(Int64(position))]).int(0, 0) ?? -1
            }
        }

        func close() {
            store.close()
            lookup.close()
        }
    }

    static func lease(_ partition: Int, in store: PostgresClusterStore) throws -> ClusterRows.Lease? {
        try store.readCluster().leases.first { $0.partition == partition }
    }

    /// The partitions of the fences here, and those of the Spins `s` and `t`; `pfresh` is
    /// another.
    static let partitions = SpinPartitions(count: 8)
    static let ps = partitions.partition(of: "s")
    static let pt = partitions.partition(of: "t")
    static let pfresh = (ps + 1) % partitions.count

    /// Runs `body(0)` and `body(1)` on two threads at once and returns both results.
    static func onTwoThreads<T: Sendable>(_ body: @escaping @Sendable (Int) throws -> T) throws -> [T] {
        let results = Locked<[Int: Result<T, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let result = Result { try body(index) }
            results.withLock { $0[index] = result }
        }
        return try results.withLock { all in try (0..<2).map { try all[$0]!.get() } }
    }

    // MARK: Leases

    @Test func twoNodesRacingForEpoch1_OneWinsEachPartition_AndTheLoserCannotTakeAnUnexpiredLease() throws {
        let (a, b, _) = try Self.twoNodes()
        defer { a.close(); b.close() }
        let spins = Array(0..<20)
        let stores = [a, b]
        let won = try Self.onTwoThreads { index in
            try spins.map { try stores[index].acquire(partition: $0, node: index == 0 ? "a" : "b", epoch: 1, seconds: 30) != nil }
        }
        for (index, spin) in spins.enumerated() {
            #expect(won[0][index] != won[1][index], "exactly one node takes partition \(spin)")
            let winner = won[0][index] ? "a" : "b", loser = won[0][index] ? "b" : "a"
            let lease = try #require(try Self.lease(spin, in: a))
            #expect(lease.node == winner && lease.epoch == 1)
            // The loser: epoch 1 again (a row exists), or the next epoch of an unexpired foreign lease.
            #expect(try b.acquire(partition: spin, node: loser, epoch: 1, seconds: 30) == nil)
            #expect(try b.acquire(partition: spin, node: loser, epoch: 2, seconds: 30) == nil)
            #expect(try Self.lease(spin, in: a) == lease)
        }
    }

    @Test func aNodeRetakesItsOwnLease_WithTheNextEpoch_AndAStaleOrSkippedEpochIsRefused() throws {
        let (a, b, _) = try Self.twoNodes()
        defer { a.close(); b.close() }
        let first = try #require(try a.acquire(partition: Self.ps, node: "a", epoch: 1, seconds: 30))
        // Its own, unexpired: the next epoch is granted (a restarted node taking its Spin back).
        let second = try #require(try b.acquire(partition: Self.ps, node: "a", epoch: 2, seconds: 60))
        #expect(second > first)
        #expect(try a.acquire(partition: Self.ps, node: "a", epoch: 2, seconds: 30) == nil)
        #expect(try a.acquire(partition: Self.ps, node: "a", epoch: 4, seconds: 30) == nil)
        // A later epoch where no row exists is refused: epoch 1 starts every lease.
        #expect(try a.acquire(partition: Self.pfresh, node: "a", epoch: 2, seconds: 30) == nil)
        #expect(try a.acquire(partition: Self.pfresh, node: "a", epoch: 0, seconds: 30) == nil)
        let lease = try #require(try Self.lease(Self.ps, in: a))
        #expect(lease.node == "a" && lease.epoch == 2 && lease.expiresAt == second)
        #expect(try Self.lease(Self.pfresh, in: a) == nil)
    }

    @Test func anExpiredLease_IsNoLongerRenewed_AndGoesToTheNextEpoch_ThenReleaseEndsIt() throws {
        let (a, b, _) = try Self.twoNodes()
        defer { a.close(); b.close() }
        let taken = try #require(try a.acquire(partition: Self.ps, node: "a", epoch: 1, seconds: 0.3))
        let renewed = try #require(try a.renew([PartitionLease(partition: Self.ps, epoch: 1)], node: "a", seconds: 0.3)[Self.ps])
        #expect(renewed >= taken)
        #expect(try b.renew([PartitionLease(partition: Self.ps, epoch: 1)], node: "b", seconds: 30)[Self.ps] == nil)
        #expect(try b.acquire(partition: Self.ps, node: "b", epoch: 2, seconds: 30) == nil)

        Thread.sleep(forTimeInterval: 0.6)
        #expect(try a.renew([PartitionLease(partition: Self.ps, epoch: 1)], node: "a", seconds: 30)[Self.ps] == nil)
        #expect(try b.acquire(partition: Self.ps, node: "b", epoch: 1, seconds: 30) == nil)
        _ = try #require(try b.acquire(partition: Self.ps, node: "b", epoch: 2, seconds: 30))
        // A's release under its old epoch changes nothing.
        try a.release(partition: Self.ps, node: "a", epoch: 1)
        #expect(try Self.lease(Self.ps, in: a)?.node == "b")
        #expect(try a.acquire(partition: Self.ps, node: "a", epoch: 3, seconds: 30) == nil)

        try b.release(partition: Self.ps, node: "b", epoch: 2)
        let released = try b.readCluster()
        let lease = try #require(released.leases.first)
        #expect(lease.node == "b" && lease.epoch == 2 && lease.expiresAt <= released.now)
        #expect(try b.renew([PartitionLease(partition: Self.ps, epoch: 2)], node: "b", seconds: 30)[Self.ps] == nil)
        _ = try #require(try a.acquire(partition: Self.ps, node: "a", epoch: 3, seconds: 30))
    }

    @Test func oneRenewal_PushesEveryLeaseStillHeld_AndLeavesOutTheRefused() throws {
        let (a, b, _) = try Self.twoNodes()
        defer { a.close(); b.close() }
        for partition in 0..<4 { _ = try #require(try a.acquire(partition: partition, node: "a", epoch: 1, seconds: 0.3)) }
        // Partition 3 is released and taken by b; partition 2 is asked for under a wrong epoch.
        try a.release(partition: 3, node: "a", epoch: 1)
        _ = try #require(try b.acquire(partition: 3, node: "b", epoch: 2, seconds: 30))
        let renewed = try a.renew((0..<4).map { PartitionLease(partition: $0, epoch: $0 == 2 ? 7 : 1) }, node: "a", seconds: 30)
        #expect(Set(renewed.keys) == [0, 1])
        let rows = try a.readCluster()
        for partition in [0, 1] {
            let lease = try #require(rows.leases.first { $0.partition == partition })
            #expect(lease.expiresAt == renewed[partition])
            #expect(lease.expiresAt > rows.now.addingTimeInterval(20))
        }
        #expect(try a.renew([], node: "a", seconds: 30).isEmpty)
        // Once expired, nothing is renewed.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try a.renew([PartitionLease(partition: 2, epoch: 1)], node: "a", seconds: 30).isEmpty)
    }

    @Test func thePartitionCount_IsRecordedByTheFirstNode_AndAnotherIsRefusedWhileANodeLives() throws {
        let (a, b, _) = try Self.twoNodes()
        defer { a.close(); b.close() }
        try a.agree(partitions: 16, liveSeconds: 10)
        try b.agree(partitions: 16, liveSeconds: 10)
        _ = try #require(try a.acquire(partition: 5, node: "a", epoch: 1, seconds: 30))
        try a.heartbeat(node: "a", advertise: "http://a")
        #expect(throws: PartitionCountMismatch(recorded: 16, configured: 32)) {
            try b.agree(partitions: 32, liveSeconds: 10)
        }
        #expect(try b.readCluster().leases.first?.expiresAt ?? .distantPast > Date())
        // Every node stopped (no heartbeat within liveSeconds): the new count is taken and
        // every lease of the old one ends, so that none fences a write any more.
        try a.leave(node: "a")
        try b.agree(partitions: 32, liveSeconds: 10)
        let rows = try b.readCluster()
        #expect(rows.leases.allSatisfy { $0.expiresAt <= rows.now })
        try a.agree(partitions: 32, liveSeconds: 10)
        try b.heartbeat(node: "b", advertise: "http://b")
        #expect(throws: PartitionCountMismatch(recorded: 32, configured: 16)) { try a.agree(partitions: 16, liveSeconds: 10) }
    }

    @Test func heartbeats_CreateAndRefreshTheNodeRows() throws {
        let (a, b, _) = try Self.twoNodes()
        defer { a.close(); b.close() }
        try a.heartbeat(node: "a", advertise: "http://a:8080")
        try b.heartbeat(node: "b", advertise: "http://b:8080")
        let first = try a.readCluster()
        #expect(first.nodes.map(\.name) == ["a", "b"])
        #expect(first.nodes.map(\.advertise) == ["http://a:8080", "http://b:8080"])
        let beatA = try #require(first.nodes[0].heartbeatAt)
        #expect(beatA <= first.now)

        try a.heartbeat(node: "a", advertise: "http://a2:8080")
        let second = try b.readCluster()
        #expect(second.nodes.count == 2 && second.nodes[0].advertise == "http://a2:8080")
        #expect(try #require(second.nodes[0].heartbeatAt) > beatA)
        #expect(second.nodes[1] == first.nodes[1])
    }

    @Test func aLostConnection_FailsOneCall_AndTheNextReconnects() throws {
        let (a, b, url) = try Self.twoNodes()
        defer { a.close(); b.close() }
        try a.heartbeat(node: "a", advertise: "http://a")
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        // Ends every other session of the database: both of A's connections (and B's).
        _ = try admin.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
            """)
        #expect(throws: PostgresError.self) { try a.heartbeat(node: "a", advertise: "http://a") }
        try a.heartbeat(node: "a", advertise: "http://a")
        #expect(throws: PostgresError.self) { _ = try a.waitForPublish(timeout: .seconds(5)) }
        // Reconnected: publishes may have been missed meanwhile, so it reports one.
        #expect(try a.waitForPublish(timeout: .seconds(5)))
        #expect(throws: PostgresError.self) { _ = try b.outbox(after: 0, limit: 1) }
        #expect(try b.outbox(after: 0, limit: 1) == [])
        let writer = try OutboxWriter(url: url, node: "b")
        defer { writer.close() }
        try writer.publish(gear: "g", payload: [1])
        #expect(try a.waitForPublish(timeout: .seconds(5)))
    }

    // MARK: The fence

    @Test func theFence_StoresWritesWhileTheLeaseIsHeld_AndNoneAfterATakeover() throws {
        let (a, b, url) = try Self.twoNodes()
        defer { a.close(); b.close() }
        let fence = LeaseFence(node: "a", partitions: Self.partitions)
        let store = PostgresSpinStore(url: url, ownership: .shared(node: "a"), fence: fence)
        _ = try FileSpinStoreTests.ready(store, spin: "s")
        defer { store.close() }

        // Not served yet: refused, nothing stored.
        try store.append([PostgresSpinStoreTests.record(1)], spin: "s")
        #expect(throws: FencedOut(node: "a", spin: "s", partition: Self.ps, epoch: nil)) { try store.commit(spin: "s", sync: true) }
        store.discardUncommitted(spin: "s")

        _ = try #require(try a.acquire(partition: Self.ps, node: "a", epoch: 1, seconds: 0.3))
        fence.serve(partition: Self.ps, epoch: 1)
        try store.append([PostgresSpinStoreTests.record(1)], spin: "s")
        try store.commit(spin: "s", sync: true)

        Thread.sleep(forTimeInterval: 0.6)
        _ = try #require(try b.acquire(partition: Self.ps, node: "b", epoch: 2, seconds: 30))
        try store.append([PostgresSpinStoreTests.record(2, endsBatch: false), PostgresSpinStoreTests.record(3)], spin: "s")
        #expect {
            try store.commit(spin: "s", sync: true)
        } throws: { error in
            "\(error)" == "node a no longer holds the lease of Spin s's partition \(Self.ps) (epoch 1)"
        }
        store.discardUncommitted(spin: "s")
        #expect(try store.read(spin: "s", repair: false).records == [PostgresSpinStoreTests.record(1)])

        // Stopped serving: refused even under a lease it holds.
        _ = try #require(try a.acquire(partition: Self.pt, node: "a", epoch: 1, seconds: 30))
        fence.serve(partition: Self.pt, epoch: 1)
        fence.stopServing(partition: Self.pt)
        try store.startJournal(spin: "t", cuttingAt: nil)
        try store.append([PostgresSpinStoreTests.record(1)], spin: "t")
        #expect(throws: FencedOut.self) { try store.commit(spin: "t", sync: true) }
    }

    @Test func aDeposedOwnerReopening_DeletesNothingTheNewOwnerCommitted() throws {
        let (a, b, url) = try Self.twoNodes()
        defer { a.close(); b.close() }
        let fenceA = LeaseFence(node: "a", partitions: Self.partitions)
        let storeA = PostgresSpinStore(url: url, ownership: .shared(node: "a"), fence: fenceA)
        _ = try FileSpinStoreTests.ready(storeA, spin: "s")
        defer { storeA.close() }
        _ = try #require(try a.acquire(partition: Self.ps, node: "a", epoch: 1, seconds: 0.3))
        fenceA.serve(partition: Self.ps, epoch: 1)
        try storeA.append([PostgresSpinStoreTests.record(1)], spin: "s")
        try storeA.commit(spin: "s", sync: true)

        // a's lease runs out; b takes the Spin and commits record 2 after a's last commit.
        Thread.sleep(forTimeInterval: 0.6)
        _ = try #require(try b.acquire(partition: Self.ps, node: "b", epoch: 2, seconds: 30))
        let fenceB = LeaseFence(node: "b", partitions: Self.partitions)
        fenceB.serve(partition: Self.ps, epoch: 2)
        let storeB = PostgresSpinStore(url: url, ownership: .shared(node: "b"), fence: fenceB)
        _ = try FileSpinStoreTests.ready(storeB, spin: "s")
        defer { storeB.close() }
        try storeB.append([PostgresSpinStoreTests.record(2)], spin: "s")
        try storeB.commit(spin: "s", sync: true)

        // a's connection came back (after an outage, say): its reopen is fenced out.
        #expect(throws: FencedOut.self) { try storeA.reopen(spin: "s") }
        #expect(try storeB.read(spin: "s", repair: false).records
            == [PostgresSpinStoreTests.record(1), PostgresSpinStoreTests.record(2)])
    }

    @Test func aTakeoverWaits_ForTheWriteThatHoldsTheLeaseRow_ARenewalDoesNot() throws {
        let (a, b, url) = try Self.twoNodes()
        defer { a.close(); b.close() }
        let fence = LeaseFence(node: "a", partitions: Self.partitions)
        _ = try #require(try a.acquire(partition: Self.ps, node: "a", epoch: 1, seconds: 30))
        fence.serve(partition: Self.ps, epoch: 1)
        let writer = try PostgresConnection(url: url)
        let observer = try PostgresConnection(url: url)
        defer { writer.close(); observer.close() }

        try writer.execute("BEGIN")
        try fence.check(spin: "s", connection: writer)
        // A renewal does not wait for the write (nor a second write for the renewal): a
        // busy partition's lease is renewed on time.
        let began = Date()
        #expect(try b.renew([PartitionLease(partition: Self.ps, epoch: 1)], node: "a", seconds: 30)[Self.ps] != nil)
        #expect(Date().timeIntervalSince(began) < 2)
        // A (restarted elsewhere) retakes its lease with the next epoch: it must wait.
        let takeover = Background { try? b.acquire(partition: Self.ps, node: "a", epoch: 2, seconds: 30) }
        // Until the takeover's backend waits for the row lock.
        var waiting = false
        for _ in 0..<500 where !waiting {
            waiting = try observer.query("""
                SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                """).int(0, 0) == 1
            if !waiting { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(waiting)
        #expect(!takeover.isDone, "the takeover returned while the write held the row")
        try writer.execute("COMMIT")
        #expect(takeover.result() != nil)
        // Its next write is fenced out.
        try writer.execute("BEGIN")
        #expect(throws: FencedOut(node: "a", spin: "s", partition: Self.ps, epoch: 1)) { try fence.check(spin: "s", connection: writer) }
        try writer.execute("ROLLBACK")
    }

    // MARK: Gear outbox

    @Test func aDatabaseAtSchemaVersion1_GetsTheOutbox_WhenTheClusterStoreOpens() throws {
        let url = try PostgresSpinStoreTests.freshDatabase()
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        // What a server of schema version 1 left.
        try admin.execute("CREATE TABLE spin_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        try admin.execute(PostgresSchema.migrations[0])
        try admin.execute("INSERT INTO spin_schema_version (version) VALUES (1)")
        #expect(throws: PostgresError.self) { try admin.execute("SELECT 1 FROM spin_gear_outbox") }

        let store = PostgresClusterStore(url: url)
        try store.open()
        defer { store.close() }
        #expect(try store.outboxEnd() == 0)
        let writer = try OutboxWriter(url: url, node: "a")
        defer { writer.close() }
        #expect(try writer.publish(gear: "g", payload: Array(#"{"type":"t"}"#.utf8)) == 1)
        #expect(try admin.query("SELECT max(version)::int8 FROM spin_schema_version").int(0, 0) == Int64(PostgresSchema.currentVersion))
    }

    @Test func publishesOfTwoNodes_AreReadInPositionOrder_NoneSkipped_WhileTheyArePublished() throws {
        let (a, b, url) = try Self.twoNodes()
        let reader = PostgresClusterStore(url: url)
        try reader.open()
        defer { a.close(); b.close(); reader.close() }
        #expect(try reader.outboxEnd() == 0)
        let perNode = 100
        let stores = [a, b]
        let seen = Locked<[OutboxEvent]>([])
        let reading = DispatchSemaphore(value: 0)
        let finished = Locked(false)
        DispatchQueue.global().async {
            // Reads as it goes, a few at a time, from where it stopped.
            var after: Int64 = 0
            while true {
                let done = finished.withLock { $0 }
                guard let events = try? reader.outbox(after: after, limit: 7) else { break }
                seen.withLock { $0 += events }
                after = events.last?.position ?? after
                if events.isEmpty && done { break }
            }
            reading.signal()
        }
        let writers = [try OutboxWriter(url: url, node: "a"), try OutboxWriter(url: url, node: "b")]
        defer { writers.forEach { $0.close() } }
        _ = stores
        let positions = try Self.onTwoThreads { index in
            try (0..<perNode).map { number in
                try writers[index].publish(gear: "g\(index)", spin: "spin\(index)", payload: Array("\(index):\(number)".utf8))
            }
        }
        finished.withLock { $0 = true }
        reading.wait()

        let all = try reader.outbox(after: 0, limit: 1000)
        #expect(all.count == 2 * perNode)
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.position < $1.position })
        #expect(seen.withLock { $0 } == all, "the incremental reader saw every event once, in order")
        #expect(try reader.outboxEnd() == all.last?.position)
        for index in 0..<2 {
            let mine = all.filter { $0.gear == "g\(index)" }
            #expect(mine.map(\.position) == positions[index])
            #expect(mine.map { String(decoding: $0.payload, as: UTF8.self) } == (0..<perNode).map { "\(index):\($0)" })
            #expect(mine.allSatisfy { $0.node == (index == 0 ? "a" : "b") })
            #expect(mine.map(\.senderPosition) == (1...UInt64(perNode)).map { $0 })
            #expect(mine.allSatisfy { $0.sender == "spin\(index)" })
        }
        #expect(try reader.outbox(after: all[9].position, limit: 3) == Array(all[10..<13]))
    }

    @Test func leaveAndAnnounce_WakeTheOthersWaitForChange_AndALeftNodeIsNoLongerAlive() throws {
        let (a, b, url) = try Self.twoNodes()
        defer { a.close(); b.close() }
        try a.heartbeat(node: "a", advertise: "http://a:8080")
        try b.heartbeat(node: "b", advertise: "http://b:8080")
        #expect(try a.waitForChange(timeout: .milliseconds(200)) == false)
        try b.announce()
        #expect(try a.waitForChange(timeout: .seconds(10)))
        // Publishes on the outbox are not changes of the rows, and the reverse.
        let writer = try OutboxWriter(url: url, node: "b")
        defer { writer.close() }
        try writer.publish(gear: "g", payload: [1])
        #expect(try a.waitForChange(timeout: .milliseconds(200)) == false)

        let woken = Background { try? a.waitForChange(timeout: .seconds(30)) }
        Thread.sleep(forTimeInterval: 0.2)
        try b.leave(node: "b")
        #expect(woken.result() == true)
        let rows = try a.readCluster()
        #expect(rows.nodes.map(\.name) == ["a", "b"])
        #expect(rows.nodes[1].heartbeatAt == nil)
        #expect(rows.nodes[0].heartbeatAt != nil)
    }

    @Test func waitForPublish_WakesOnAnotherNodesCommit_TimesOutOtherwise_AndCloseEndsIt() throws {
        let (a, b, url) = try Self.twoNodes()
        defer { b.close() }
        let writer = try OutboxWriter(url: url, node: "b")
        defer { writer.close() }
        #expect(try a.waitForPublish(timeout: .milliseconds(200)) == false)
        let position = try writer.publish(gear: "g", spin: "ticker", payload: Array(#"{"type":"tick"}"#.utf8))
        #expect(try a.waitForPublish(timeout: .seconds(10)))
        #expect(try a.outbox(after: 0, limit: 10) == [OutboxEvent(position: position, gear: "g", node: "b",
                                                                  payload: Array(#"{"type":"tick"}"#.utf8),
                                                                  sender: "ticker", senderPosition: 1, cause: 0)])
        #expect(try a.waitForPublish(timeout: .milliseconds(200)) == false)

        // A commit while it waits wakes it.
        let woken = Background { try? a.waitForPublish(timeout: .seconds(30)) }
        Thread.sleep(forTimeInterval: 0.2)
        try writer.publish(gear: "g", spin: "ticker", payload: [2])
        #expect(woken.result() == true)

        // Close ends a wait under way (which would time out with false), and later calls throw.
        let closing = Background { Result { try a.waitForPublish(timeout: .seconds(30)) } }
        Thread.sleep(forTimeInterval: 0.2)
        a.close()
        #expect(throws: PostgresClusterStore.Closed.self) { try closing.result().get() }
        #expect(throws: PostgresClusterStore.Closed.self) { _ = try a.waitForPublish(timeout: .seconds(1)) }
        #expect(throws: PostgresClusterStore.Closed.self) { try a.heartbeat(node: "a", advertise: "http://a") }
    }
}

/// A value shared by the test's threads, behind a lock.
private final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }
}

/// `body` run on another thread from its creation; `result()` waits for its value.
private final class Background<Value: Sendable>: @unchecked Sendable {
    private let value = Locked<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Value) {
        DispatchQueue.global().async { [value, done] in
            let result = body()
            value.withLock { $0 = result }
            done.signal()
        }
    }

    /// Whether `body` has returned.
    var isDone: Bool { value.withLock { $0 != nil } }

    func result() -> Value {
        done.wait()
        done.signal()
        return value.withLock { $0! }
    }
}
