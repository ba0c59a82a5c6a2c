import Foundation

// The Spins made at run time in `spin_made`: listed, made, rested and deleted with their
// history (see `PostgresSpinStore`).
extension PostgresSpinStore {
    // MARK: Spins made at run time

    // Each of these is one statement or one transaction of its own (no journal's commit is
    // part of it), so a lost connection is made again first, as `read` does: a lookup
    // after the database came back must not fail until some journal probes.

    /// The columns of a `spin_made` row, in the order `madeSpin(_:at:)` reads them.
    private static let madeColumns = "name, kind, joined, outbox_base, resting, sequence, consumed"

    private static func madeSpin(_ rows: PostgresRows, at row: Int) -> (name: String, spin: MadeSpin) {
        let resting = rows.bool(row, 4) == true
            ? MadeSpin.Resting(sequence: UInt64(clamping: rows.int(row, 5) ?? 0),
                               consumed: SpinDatabase.joined(from: rows.text(row, 6) ?? ""))
            : nil
        return (rows.text(row, 0) ?? "",
                MadeSpin(kind: rows.text(row, 1) ?? "", joined: SpinDatabase.joined(from: rows.text(row, 2) ?? ""),
                         outboxBase: UInt64(clamping: rows.int(row, 3) ?? 0), resting: resting))
    }

    /// The Spins that do not rest and those of `kinds`: one indexed read (`spin_made_awake`)
    /// and one per kind. A deletion is one transaction: none is left half done.
    package func madeSpins(repair: Bool, including kinds: Set<String>) throws -> [String: MadeSpin] {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("""
                SELECT \(Self.madeColumns) FROM spin_made WHERE NOT resting OR kind = ANY($1::text[])
                """, [.textArray(kinds.sorted())])
            var made: [String: MadeSpin] = [:]
            for row in 0..<rows.count {
                let (name, spin) = Self.madeSpin(rows, at: row)
                made[name] = spin
            }
            return made
        }
    }

    package func madeSpin(named name: String) throws -> MadeSpin? {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("SELECT \(Self.madeColumns) FROM spin_made WHERE name = $1", [.text(name)])
            return rows.count == 1 ? Self.madeSpin(rows, at: 0).spin : nil
        }
    }

    package func madeSpinCounts() throws -> [String: Int] {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("SELECT kind, count(*) FROM spin_made GROUP BY kind")
            var counts: [String: Int] = [:]
            for row in 0..<rows.count { counts[rows.text(row, 0) ?? ""] = Int(rows.int(row, 1) ?? 0) }
            return counts
        }
    }

    /// In byte order (`spin_made.name` is `COLLATE "C"`), from the primary key's index.
    package func madeSpins(prefix: String, after: String?, limit: Int) throws -> [(name: String, kind: String, sequence: UInt64)] {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("""
                SELECT name, kind, sequence FROM spin_made
                WHERE name >= $1 AND starts_with(name, $1) AND ($2::text IS NULL OR name > $2)
                ORDER BY name LIMIT $3
                """, [.text(prefix), after.map(PostgresValue.text) ?? .null, .int64(Int64(max(0, limit)))])
            return (0..<rows.count).map { row in
                (rows.text(row, 0) ?? "", rows.text(row, 1) ?? "", UInt64(clamping: rows.int(row, 2) ?? 0))
            }
        }
    }

    /// Runs `body` in one transaction, synced whatever `storage.fsync` says, after the
    /// fence's check of `spins` (on a cluster: the leases of their partitions, so that a
    /// node that lost one writes nothing of them). Reconnects first (see `PostgresSpinStore`).
    private func fencedChange(of spins: [String], _ body: (PostgresConnection) throws -> Void) throws {
        try locked {
            try reconnectIfLost()
            let connection = try live()
            try connection.transaction {
                try connection.execute("SET LOCAL synchronous_commit TO on")
                try fence?.check(spins: spins, connection: connection)
                try body(connection)
            }
        }
    }

    /// One fenced, synced transaction (`fencedChange`): what an earlier Spin of each name
    /// left is deleted, the rows and epochs written.
    package func make(_ spins: [(name: String, spin: MadeSpin, epoch: String)]) throws {
        guard !spins.isEmpty else { return }
        let names = spins.map(\.name)
        drainCommits(of: names)
        try fencedChange(of: names) { connection in
            try removeHistory(of: names, connection)
            _ = try connection.query("""
                INSERT INTO spin_made (name, kind, joined, outbox_base, resting, sequence, consumed)
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::bool[], $6::int8[], $7::text[])
                """, [.textArray(names), .textArray(spins.map(\.spin.kind)),
                      .textArray(spins.map { SpinDatabase.text(of: $0.spin.joined) }),
                      .int64Array(spins.map { Int64(clamping: $0.spin.outboxBase) }),
                      .boolArray(spins.map { $0.spin.resting != nil }),
                      .int64Array(spins.map { Int64(clamping: $0.spin.resting?.sequence ?? 0) }),
                      .textArray(spins.map { SpinDatabase.text(of: $0.spin.resting?.consumed ?? [:]) })])
            _ = try connection.query("""
                INSERT INTO spin_epochs (spin, epoch) SELECT * FROM unnest($1::text[], $2::text[])
                """, [.textArray(names), .textArray(spins.map(\.epoch))])
        }
        locked { for name in names { journals[name] = nil } }
    }

    /// Waits until no commit of `names` is on its way (of a journal that failed as it was
    /// retired): none lands after their history is removed.
    private func drainCommits(of names: [String]) {
        locked {
            for name in names { if let journal = journals[name] { pipeline?.drain(journal.chain) } }
        }
    }

    /// The journal, snapshot, epoch and suspension of `names` (not their outbox rows: those
    /// are read by position, and a Spin made again starts its positions above them).
    private func removeHistory(of names: [String], _ connection: PostgresConnection) throws {
        for table in ["spin_journal", "spin_snapshots", "spin_epochs", "spin_suspensions", "spin_history"] {
            _ = try connection.query("DELETE FROM \(table) WHERE spin = ANY($1::text[])", [.textArray(names)])
        }
    }

    /// One fenced, synced `UPDATE` (`fencedChange`).
    package func rest(_ spin: String, sequence: UInt64, consumed: [String: UInt64]) throws {
        try fencedChange(of: [spin]) { connection in
            _ = try connection.query("""
                UPDATE spin_made SET resting = true, sequence = $2, consumed = $3 WHERE name = $1
                """, [.text(spin), .int64(Int64(clamping: sequence)), .text(SpinDatabase.text(of: consumed))])
        }
    }

    /// One fenced, synced transaction (`fencedChange`).
    package func delete(_ name: String) throws {
        drainCommits(of: [name])
        try fencedChange(of: [name]) { connection in
            _ = try connection.query("DELETE FROM spin_made WHERE name = $1", [.text(name)])
            try removeHistory(of: [name], connection)
        }
        locked { journals[name] = nil }
    }
}
