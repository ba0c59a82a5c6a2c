import Foundation

// The older history of Spins (`HistorySegment`), in `spin_history`, on the main connection.
extension PostgresSpinStore {
    /// One transaction, committed with `synchronous_commit` on (the server's default).
    /// Every node writes the same segment of a Spin the same way, so a node that lost its
    /// lease meanwhile writes nothing another did not: no fence is needed.
    package func archive(_ segments: [HistorySegment], spin: String) throws {
        guard !segments.isEmpty else { return }
        try locked {
            try reconnectIfLost()
            let connection = try live()
            try connection.transaction {
                for segment in segments {
                    _ = try connection.query("""
                        INSERT INTO spin_history (spin, last, first, last_time, base, records) VALUES ($1, $2, $3, $4, $5, $6)
                        ON CONFLICT (spin, last) DO UPDATE SET first = excluded.first, last_time = excluded.last_time,
                            base = excluded.base, records = excluded.records
                        """, [.text(spin), .int64(Int64(clamping: segment.last)), .int64(Int64(clamping: segment.first)),
                              .int64(segment.lastTime), segment.base.map { .bytea($0) } ?? .null, .bytea(segment.records)])
                }
            }
        }
    }

    package func history(of spin: String, from sequence: UInt64, limit: Int) throws -> [HistorySegment] {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("""
                SELECT first, last, last_time, base, records FROM spin_history
                WHERE spin = $1 AND last >= $2 ORDER BY last LIMIT $3
                """, [.text(spin), .int64(Int64(clamping: sequence)), .int64(Int64(max(0, limit)))])
            return (0..<rows.count).compactMap { row in
                guard let first = rows.int(row, 0), let last = rows.int(row, 1), let time = rows.int(row, 2),
                      let records = rows.bytes(row, 4) else { return nil }
                return HistorySegment(first: UInt64(clamping: first), last: UInt64(clamping: last), lastTime: time,
                                      base: rows.bytes(row, 3), records: records)
            }
        }
    }

    package func archived(spin: String) throws -> ClosedRange<UInt64>? {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("SELECT min(first), max(last) FROM spin_history WHERE spin = $1", [.text(spin)])
            guard let first = rows.int(0, 0), let last = rows.int(0, 1), first <= last else { return nil }
            return UInt64(clamping: first)...UInt64(clamping: last)
        }
    }

    package func trimHistory(before time: Int64) throws -> Int {
        try locked {
            try reconnectIfLost()
            let rows = try live().query("WITH gone AS (DELETE FROM spin_history WHERE last_time < $1 RETURNING 1) SELECT count(*) FROM gone",
                                        [.int64(time)])
            return Int(rows.int(0, 0) ?? 0)
        }
    }
}
