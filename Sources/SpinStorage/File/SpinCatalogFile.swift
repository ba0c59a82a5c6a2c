import Foundation

/// The catalog a storage directory of the release before kept of the Spins made at run
/// time (`spins.catalog`), read once to move them into `SpinDatabase`
/// (`FileSpinStore.madeSpins`). An append-only file of `JournalRecord`s, one per change:
/// `{"made":name,"kind":k,"joined":{..},"outboxBase":n}` or `{"deleted":name}`.
///
/// A torn tail (an unfinished last append: never acknowledged) is ignored; a bad record
/// with data after it refuses to read, naming the file and byte offset, unless `repair`.
package struct SpinCatalogFile {
    package let path: String
    /// What the catalog says.
    package private(set) var made: [String: MadeSpin] = [:]
    /// The names deleted and not made again: their files may still be on disk after a
    /// crash in the middle of a deletion.
    package private(set) var deleted: Set<String> = []

    /// Reads the catalog of `directory`. Changes nothing on disk.
    package init(directory: String, repair: Bool) throws {
        path = "\(directory)/spins.catalog"
        let decoded = JournalRecord.decode(try DurableFiles.read(path) ?? [])
        if let damage = decoded.damage, damage.kind == .corruption, !repair {
            throw CatalogCorruption(path: path, damage: damage)
        }
        for record in decoded.records { try apply(record.payload) }
    }

    private mutating func apply(_ payload: [UInt8]) throws {
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
