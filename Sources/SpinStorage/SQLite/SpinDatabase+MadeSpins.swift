import CSQLite
import Foundation
import Glibc

// The Spins made at run time, one row each: listed, made, rested and deleted (see `SpinDatabase`).
extension SpinDatabase {
    // MARK: Spins made

    /// The Spins the database holds that do not rest, and those of `kinds` whatever they
    /// do, by name: what a start hosts (the others stay on disk until something asks for
    /// them, `madeSpin(named:)`). Without `kinds`, through the index of the Spins not
    /// resting: a cost of those, not of the table.
    package func madeSpins(including kinds: Set<String> = []) throws -> [String: MadeSpin] {
        try lock.withLock {
            let statements = try ready()
            let select = kinds.isEmpty ? statements.selectAwake : statements.selectSpins
            var made: [String: MadeSpin] = [:]
            defer { select.reset() }
            while try select.step() {
                guard let (name, spin) = Self.madeSpin(select), spin.resting == nil || kinds.contains(spin.kind) else { continue }
                made[name] = spin
            }
            return made
        }
    }

    /// Spin `name` as the database holds it, or nil when it holds none of that name.
    package func madeSpin(named name: String) throws -> MadeSpin? {
        try lock.withLock {
            let statements = try ready()
            let select = try statements.selectMade.bind(.text(name))
            defer { select.reset() }
            guard try select.step() else { return nil }
            return Self.madeSpin(select)?.1
        }
    }

    /// How many Spins of each kind the database holds (a scan of the table: once per start).
    package func madeSpinCounts() throws -> [String: Int] {
        try lock.withLock {
            let statements = try ready()
            defer { statements.countSpins.reset() }
            var counts: [String: Int] = [:]
            while try statements.countSpins.step() {
                counts[statements.countSpins.text(0) ?? "", default: 0] += Int(statements.countSpins.integer(1))
            }
            return counts
        }
    }

    /// Up to `limit` Spins in name order (UTF-8 byte order, SQLite's `BINARY`) whose
    /// names start with `prefix`, after `after` when given: each one's kind and the
    /// sequence it rests at (0 for one that does not rest). Through the primary key: a
    /// cost of the page.
    package func madeSpins(prefix: String, after: String?, limit: Int) throws -> [(name: String, kind: String, sequence: UInt64)] {
        try lock.withLock {
            let statements = try ready()
            let select = try statements.pageSpins.bind(.text(prefix), .text(after ?? ""), .integer(Int64(max(0, limit))))
            defer { select.reset() }
            var page: [(name: String, kind: String, sequence: UInt64)] = []
            while try select.step() {
                guard let name = select.text(0), name.utf8.starts(with: prefix.utf8) else { break }
                page.append((name, select.text(1) ?? "", UInt64(max(0, select.integer(2)))))
            }
            return page
        }
    }

    /// A row of `spins` as `selectSpins` reads it (`name, kind, joined, outbox_base,
    /// resting, sequence, consumed`).
    private static func madeSpin(_ select: SQLiteStatement) -> (String, MadeSpin)? {
        guard let name = select.text(0), let kind = select.text(1) else { return nil }
        let resting = select.integer(4) == 0 ? nil
            : MadeSpin.Resting(sequence: UInt64(max(0, select.integer(5))), consumed: Self.joined(from: select.text(6) ?? ""))
        return (name, MadeSpin(kind: kind, joined: Self.joined(from: select.text(2) ?? ""),
                               outboxBase: UInt64(max(0, select.integer(3))), resting: resting))
    }

    /// Whether Spin `name` is one the database holds.
    package func holds(_ name: String) -> Bool {
        lock.withLock {
            guard let statements = try? ready(), (try? statements.holds.bind(.text(name))) != nil else { return false }
            defer { statements.holds.reset() }
            return (try? statements.holds.step()) ?? false
        }
    }

    /// Records that the Spins exist, each with its epoch and no history (what an earlier
    /// Spin of its name left is removed): all durable on return, or none.
    package func make(_ spins: [(name: String, spin: MadeSpin, epoch: String)]) throws {
        try lock.withLock {
            let statements = try ready()
            try writing {
                for (name, spin, epoch) in spins {
                    try statements.deleteBatches.bind(.text(name)).run()
                    try insert(name, spin, epoch: epoch, statements)
                }
            }
            try commitNow(sync: true)
        }
    }

    private func insert(_ name: String, _ spin: MadeSpin, epoch: String, _ statements: Statements) throws {
        try statements.insertSpin.bind(.text(name), .text(spin.kind), .text(Self.text(of: spin.joined)),
                                       .integer(Int64(clamping: spin.outboxBase)), .text(epoch),
                                       .integer(spin.resting == nil ? 0 : 1), .integer(Int64(clamping: spin.resting?.sequence ?? 0)),
                                       .text(Self.text(of: spin.resting?.consumed ?? [:]))).run()
    }

    /// Spin `name` rests (see `SpinStore.rest`): durable on return.
    package func rest(_ name: String, sequence: UInt64, consumed: [String: UInt64]) throws {
        try lock.withLock {
            let statements = try ready()
            try writing {
                try statements.setResting.bind(.integer(Int64(clamping: sequence)), .text(Self.text(of: consumed)), .text(name)).run()
            }
            try commitNow(sync: true)
        }
    }

    /// Removes Spin `name` and its journal: durable on return.
    package func delete(_ name: String) throws {
        try lock.withLock {
            let statements = try ready()
            try writing {
                try statements.deleteBatches.bind(.text(name)).run()
                try statements.deleteSpin.bind(.text(name)).run()
            }
            journals[name] = nil
            doubtful.remove(name)
            unsynced.remove(name)
            try commitNow(sync: true)
        }
    }

    /// Copies a Spin of an older storage layout in (see `FileSpinStore.madeSpins`): not
    /// durable until `commit`.
    package func importSpin(_ name: String, _ spin: MadeSpin, epoch: String, snapshot: [UInt8]?,
                            records: [JournalRecord.Record], suspension: [UInt8]?) throws {
        try lock.withLock {
            let statements = try ready()
            try writing {
                try statements.deleteBatches.bind(.text(name)).run()
                try insert(name, spin, epoch: epoch, statements)
                try statements.setSnapshot.bind(snapshot.map { .blob($0) } ?? .null, .text(name)).run()
                try statements.setSuspension.bind(suspension.map { .blob($0) } ?? .null, .text(name)).run()
                if !records.isEmpty {
                    var bytes: [UInt8] = []
                    JournalRecord.append(records, to: &bytes)
                    try statements.insertBatch.bind(.text(name), .integer(1), .blob(bytes)).run()
                }
            }
        }
    }

    /// Commits and syncs what is open (after `importSpin`).
    package func sync() throws {
        try lock.withLock { try commitNow(sync: true) }
    }
}
