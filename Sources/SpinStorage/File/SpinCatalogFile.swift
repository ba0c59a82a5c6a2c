import Foundation

/// A Spin made at run time, as a store keeps it: its kind, and where it joined each
/// sender's Gear outbox (the positions it never takes events at or before, so that a
/// Spin made today is not handed what its Gears carried before it existed).
package struct MadeSpin: Sendable, Equatable {
    package var kind: String
    package var joined: [String: UInt64]
    /// Where its Gear outbox positions start: above every position an earlier Spin of the
    /// same name gave, so that the Spins that consumed those drop none of this one's as a
    /// duplicate. The microseconds since 1970 when it was made: a Spin never sends more
    /// than one Gear event per microsecond of its life.
    package var outboxBase: UInt64

    package init(kind: String, joined: [String: UInt64] = [:], outboxBase: UInt64 = 0) {
        self.kind = kind
        self.joined = joined
        self.outboxBase = outboxBase
    }

    /// The `outboxBase` of a Spin made now.
    package static func outboxBaseNow() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
    }
}

/// The catalog of a storage directory: which Spins were made at run time, of which kind
/// (`spins.catalog`). An append-only file of `JournalRecord`s, one per change, each
/// synced before the change counts: `{"made":name,"kind":k,"joined":{..}}` or
/// `{"deleted":name}`. Rewritten (beside it, synced, renamed over it) when it holds more
/// than twice as many records as Spins, so its size follows the Spins that exist.
///
/// A torn tail (an unfinished last append: never acknowledged) is cut; a bad record with
/// data after it refuses to open, naming the file and byte offset, unless `repair`.
/// Not thread-safe: the store's serial section only.
package final class SpinCatalogFile {
    package let path: String
    private var file: AppendOnlyFile?
    private var records = 0
    private var sequence: UInt64 = 0
    /// What the catalog says now.
    package private(set) var made: [String: MadeSpin] = [:]
    /// The names deleted since the last rewrite and not made again: their files may
    /// still be on disk after a crash in the middle of a deletion.
    package private(set) var deleted: Set<String> = []

    package init(directory: String) {
        self.path = "\(directory)/spins.catalog"
    }

    /// Reads the catalog (none yet: empty) and opens it for appending.
    package func open(repair: Bool) throws {
        let bytes = try DurableFiles.read(path) ?? []
        let decoded = JournalRecord.decode(bytes)
        if let damage = decoded.damage, damage.kind == .corruption, !repair {
            throw CatalogCorruption(path: path, damage: damage)
        }
        for record in decoded.records {
            try apply(record.payload)
            sequence = record.sequence
        }
        records = decoded.records.count
        let file = try AppendOnlyFile(path: path)
        if let damage = decoded.damage {
            try file.truncate(to: damage.offset)
            try file.sync()
        }
        // Its name may have just been made: synced into the directory before anything
        // recorded in it counts.
        try DurableFiles.fsyncDirectory(DurableFiles.directory(of: path))
        self.file = file
    }

    private func apply(_ payload: [UInt8]) throws {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else {
            throw CatalogCorruption(path: path, damage: nil, record: String(decoding: payload.prefix(200), as: UTF8.self))
        }
        if let name = object["made"] as? String, let kind = object["kind"] as? String {
            var joined: [String: UInt64] = [:]
            for (sender, position) in object["joined"] as? [String: Any] ?? [:] {
                if let number = position as? NSNumber { joined[sender] = number.uint64Value }
            }
            let base = (object["outboxBase"] as? NSNumber)?.uint64Value ?? 0
            made[name] = MadeSpin(kind: kind, joined: joined, outboxBase: base)
            deleted.remove(name)
        } else if let name = object["deleted"] as? String {
            made[name] = nil
            deleted.insert(name)
        } else {
            throw CatalogCorruption(path: path, damage: nil, record: String(decoding: payload.prefix(200), as: UTF8.self))
        }
    }

    /// Records that `name` exists, of `spin.kind`: durable on return.
    package func record(made name: String, _ spin: MadeSpin) throws {
        try append(try Self.payload(name, spin))
        made[name] = spin
        deleted.remove(name)
    }

    /// Records that `name` is gone: durable on return. The caller removes its files next,
    /// then calls `cleaned`.
    package func record(deleted name: String) throws {
        try append(try JSONSerialization.data(withJSONObject: ["deleted": name], options: [.sortedKeys]))
        made[name] = nil
        deleted.insert(name)
    }

    /// The files of every deleted name are gone: the catalog may forget them, and is
    /// rewritten if it grew to more than twice its Spins (and at least 1024 records).
    package func cleaned() throws {
        guard records > max(1024, 2 * made.count) else { return }
        var bytes: [UInt8] = []
        var next: UInt64 = 0
        for name in made.keys.sorted() {
            guard let spin = made[name] else { continue }
            next += 1
            JournalRecord.append(sequence: next, payload: Array(try Self.payload(name, spin)), continues: false, to: &bytes)
        }
        // Once the new file is in place the old handle writes nowhere: nothing more is
        // appended until the new one is open.
        file = nil
        try DurableFiles.replace(path, with: bytes)
        file = try AppendOnlyFile(path: path)
        records = made.count
        sequence = next
        deleted = []
    }

    private static func payload(_ name: String, _ spin: MadeSpin) throws -> Data {
        let object: [String: Any] = ["made": name, "kind": spin.kind, "joined": spin.joined.mapValues { NSNumber(value: $0) },
                                     "outboxBase": NSNumber(value: spin.outboxBase)]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    private func append(_ payload: Data) throws {
        guard let file else { throw FileError(path: path, call: "open", errno: EBADF) }
        sequence += 1
        let size = try file.size()
        do {
            try file.append(JournalRecord.encode(sequence: sequence, payload: Array(payload)))
            try file.sync()
        } catch {
            // Nothing half-written stays: the record counts only once synced whole.
            sequence -= 1
            try? file.truncate(to: size)
            throw error
        }
        records += 1
    }

    /// The catalog file is damaged in the middle, or holds a record this server cannot read.
    package struct CatalogCorruption: Error, CustomStringConvertible {
        package let path: String
        package let damage: JournalRecord.Damage?
        package var record: String?

        package var description: String {
            if let damage {
                return "\(path) is corrupt: \(damage). Nothing was changed on disk. Restore it from a backup, or start with --repair (storage.onCorruption: \"truncate\") to cut it at byte \(damage.offset), forgetting the Spins made after it"
            }
            return "\(path) holds a record this server cannot read (\(record ?? "")). Nothing was changed on disk. Restore it from a backup"
        }
    }
}
