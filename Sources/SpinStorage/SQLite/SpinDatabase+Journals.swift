import CSQLite
import Foundation
import Glibc

// The journals and suspensions of the Spins made at run time, rows of the database
// (see `SpinDatabase`).
extension SpinDatabase {
    // MARK: Journals

    /// What the database holds of `spin` (see `SpinStore.read`). A row whose records do not
    /// decode is corruption: the rows after it hold acknowledged events.
    package func read(spin: String, repair: Bool) throws -> StoredSpin {
        try lock.withLock {
            let statements = try ready()
            try statements.selectSpin.bind(.text(spin))
            guard try statements.selectSpin.step() else {
                statements.selectSpin.reset()
                throw SQLiteError(path: path, code: SQLITE_NOTFOUND, message: "no Spin \(spin) is stored", statement: nil)
            }
            let epoch = statements.selectSpin.text(0)
            let snapshot = statements.selectSpin.blob(1)
            statements.selectSpin.reset()
            let (decoded, damage) = try rows(of: spin, statements)
            if let damage, !repair {
                throw JournalCorruption(spin: spin, journal: journalName(of: spin), damage: damage.damage,
                                        intactThrough: decoded.last(where: { $0.sequence != 0 })?.sequence)
            }
            let (records, outbox) = try StoredSpin.separating(decoded, journal: journalName(of: spin))
            return StoredSpin(snapshot: snapshot, records: records, epoch: epoch, damage: damage?.damage, outbox: outbox)
        }
    }

    /// Where `spin`'s journal is, for messages.
    package func journalName(of spin: String) -> String { "\(path) (table batches, spin '\(spin)')" }

    /// Where a row of a journal does not decode: the row, how many of its bytes are whole
    /// batches, and the damage at its offset in the whole journal.
    private struct RowDamage {
        var n: Int64
        var keep: Int
        var damage: JournalRecord.Damage
    }

    /// The records of `spin`'s rows, in order, up to the first damaged row.
    private func rows(of spin: String, _ statements: Statements) throws -> ([JournalRecord.Record], RowDamage?) {
        try statements.selectBatches.bind(.text(spin))
        defer { statements.selectBatches.reset() }
        var records: [JournalRecord.Record] = []
        var offset = 0
        var damage: RowDamage?
        var total = 0
        while try statements.selectBatches.step() {
            let bytes = statements.selectBatches.blob(1) ?? []
            total += bytes.count
            guard damage == nil else { continue }
            let decoded = JournalRecord.decode(bytes)
            records += decoded.records
            if let found = decoded.damage {
                // Rows are written whole, in transactions: a row that does not decode was
                // damaged after it was written, never torn.
                damage = RowDamage(n: statements.selectBatches.integer(0), keep: decoded.validLength,
                                   damage: .init(kind: .corruption, offset: offset + found.offset,
                                                 reason: "\(found.reason) (row \(statements.selectBatches.integer(0)))",
                                                 bytesAfter: 0))
            }
            offset += bytes.count
        }
        if var found = damage {
            found.damage.bytesAfter = total - found.damage.offset
            damage = found
        }
        return (records, damage)
    }

    /// Readies `spin`'s journal for appending: cut (durably) at a damaged row when `damage`
    /// says so (the row keeps its whole batches, the rows after it go).
    package func startJournal(spin: String, cuttingAt damage: JournalRecord.Damage?) throws {
        try lock.withLock {
            let statements = try ready()
            if damage != nil, case (_, let found?) = try rows(of: spin, statements) {
                try writing {
                    try statements.deleteBatchesAfter.bind(.text(spin), .integer(found.n)).run()
                    try statements.selectBatches.bind(.text(spin))
                    var kept: [UInt8] = []
                    while try statements.selectBatches.step() {
                        guard statements.selectBatches.integer(0) == found.n else { continue }
                        kept = Array((statements.selectBatches.blob(1) ?? []).prefix(found.keep))
                    }
                    statements.selectBatches.reset()
                    try statements.updateBatch.bind(.blob(kept), .text(spin), .integer(found.n)).run()
                }
                try commitNow(sync: true)
            }
            try statements.lastBatch.bind(.text(spin))
            let last = try statements.lastBatch.step() ? statements.lastBatch.integer(0) : 0
            statements.lastBatch.reset()
            // Awake from here, committed now (synced with the next sync, before anything it
            // writes is acknowledged): a rollback of a later shared transaction must not
            // leave it marked resting while it runs.
            try writing { try statements.wakeSpin.bind(.text(spin)).run() }
            try commitTransaction()
            journals[spin] = Rows(next: last + 1, durable: last)
        }
    }

    /// Stores `spin`'s epoch: durable on return.
    package func writeEpoch(_ epoch: String, spin: String) throws {
        try lock.withLock {
            let statements = try ready()
            try writing { try statements.setEpoch.bind(.text(epoch), .text(spin)).run() }
            try commitNow(sync: true)
        }
    }

    /// Appends `batch` as one row of `spin`'s journal, in the open transaction.
    package func append(_ batch: [JournalRecord.Record], spin: String, buffer: inout [UInt8]) throws {
        try lock.withLock {
            guard var rows = journals[spin] else { return }
            let statements = try ready()
            buffer.removeAll(keepingCapacity: true)
            JournalRecord.append(batch, to: &buffer)
            try writing {
                try statements.insertBatch.bind(.text(spin), .integer(rows.next), .blob(buffer)).run()
            }
            rows.next += 1
            journals[spin] = rows
            unsynced.insert(spin)
        }
    }

    /// Commits the open transaction (every Spin's rows in it) and, with `sync`, syncs the
    /// log. Throws when `spin`'s rows are in doubt (see the type's notes).
    package func commit(spin: String, sync: Bool) throws {
        try lock.withLock {
            if doubtful.contains(spin) { throw InDoubt(path: path, spin: spin) }
            guard journals[spin] != nil else { return }
            try commitNow(sync: sync)
        }
    }

    /// Replaces `spin`'s snapshot and rows with `snapshot` and one row of `records`
    /// (everything durable already), in one transaction, committed (synced with the next sync).
    package func compact(spin: String, snapshot: [UInt8], records: [JournalRecord.Record]) throws {
        try lock.withLock {
            guard var rows = journals[spin] else { return }
            let statements = try ready()
            var bytes: [UInt8] = []
            JournalRecord.append(records, to: &bytes)
            try writing {
                try statements.deleteBatches.bind(.text(spin)).run()
                try statements.setSnapshot.bind(.blob(snapshot), .text(spin)).run()
                if !bytes.isEmpty { try statements.insertBatch.bind(.text(spin), .integer(rows.next), .blob(bytes)).run() }
            }
            try commitTransaction()
            // The new row holds only what was durable: a later failure keeps it.
            rows.durable = rows.next
            rows.next += 1
            journals[spin] = rows
        }
    }

    /// Removes `spin`'s rows beyond its durable ones (after a failure), and its doubt.
    package func discardUncommitted(spin: String) {
        lock.withLock {
            guard journals[spin] != nil else { return }
            if unsynced.contains(spin), connection?.inTransaction == true { rollback() }
            _ = try? cutToDurable(spin)
        }
    }

    /// `discardUncommitted`, throwing when the database does not take it.
    package func reopen(spin: String) throws {
        try lock.withLock {
            guard journals[spin] != nil else { return }
            try cutToDurable(spin)
        }
    }

    private func cutToDurable(_ spin: String) throws {
        guard var rows = journals[spin] else { return }
        let statements = try ready()
        try writing { try statements.deleteBatchesAfter.bind(.text(spin), .integer(rows.durable)).run() }
        try commitNow(sync: true)
        rows.next = rows.durable + 1
        journals[spin] = rows
        doubtful.remove(spin)
    }

    /// The journal of `spin` is closed (it sleeps, or is gone).
    package func release(spin: String) {
        lock.withLock {
            journals[spin] = nil
            unsynced.remove(spin)
            doubtful.remove(spin)
        }
    }

    // MARK: Suspensions

    package func suspension(of spin: String) throws -> [UInt8]? {
        try lock.withLock {
            let statements = try ready()
            try statements.selectSuspension.bind(.text(spin))
            defer { statements.selectSuspension.reset() }
            return try statements.selectSuspension.step() ? statements.selectSuspension.blob(0) : nil
        }
    }

    package func storeSuspension(_ document: [UInt8]?, of spin: String) throws {
        try lock.withLock {
            let statements = try ready()
            try writing { try statements.setSuspension.bind(document.map { .blob($0) } ?? .null, .text(spin)).run() }
            try commitNow(sync: document != nil)
        }
    }
}
