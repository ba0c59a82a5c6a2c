/// One Gear event a Spin propagated, as its journal keeps it: the Spin's **outbox**
/// (docs/OPERATIONS.md, "Gear delivery"). A store writes a Spin's outbox records in the
/// same write as the journal records of the batch that produced them, so that an event
/// is durable exactly when its cause is (a transactional outbox).
///
/// `position` numbers a Spin's outbox events 1, 2, 3, … in the order they were made;
/// a catching Spin journals the last position it consumed from each sender, which is how
/// a delivery made again after a crash is told from a new one.
package struct OutboxRecord: Sendable, Equatable {
    /// The event's place in its Spin's outbox (from 1, gapless while storage holds).
    package var position: UInt64
    /// The Gear's name.
    package var gear: String
    /// The sequence of the transition whose state propagated the event (0: none, an
    /// event a feedback's effect propagated on its own).
    package var cause: UInt64
    /// The event's JSON.
    package var event: [UInt8]

    package init(position: UInt64, gear: String, cause: UInt64, event: [UInt8]) {
        self.position = position
        self.gear = gear
        self.cause = cause
        self.event = event
    }

    // MARK: In a journal file

    /// The sequence an outbox record has in a journal file: no event has it (sequences
    /// start at 1), so a journal written before outboxes existed has none, and a server
    /// of that time skips them (it replays records after its snapshot's sequence).
    package static let journalSequence: UInt64 = 0

    /// The first byte of an outbox record's payload in a journal file, and its version.
    static let tag = UInt8(ascii: "G")
    static let version: UInt8 = 1

    /// The payload of this record in a journal file: `G`, version 1, position and cause
    /// (UInt64 LE), the Gear's name (UInt16 LE length, UTF-8), then the event's JSON.
    package var journalPayload: [UInt8] {
        var bytes: [UInt8] = [Self.tag, Self.version]
        let name = Array(gear.utf8.prefix(Int(UInt16.max)))
        bytes.reserveCapacity(20 + name.count + event.count)
        withUnsafeBytes(of: position.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: cause.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt16(name.count).littleEndian) { bytes += $0 }
        bytes += name
        bytes += event
        return bytes
    }

    /// The journal record of this outbox event (`endsBatch` as for the batch it goes with).
    package func journalRecord(endsBatch: Bool) -> JournalRecord.Record {
        JournalRecord.Record(sequence: Self.journalSequence, payload: journalPayload, endsBatch: endsBatch)
    }

    /// Reads an outbox record's payload; nil when it is not one this server writes.
    package init?(journalPayload bytes: [UInt8]) {
        guard bytes.count >= 20, bytes[0] == Self.tag, bytes[1] == Self.version else { return nil }
        func uint64(at offset: Int) -> UInt64 {
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
        }
        let length = Int(bytes[18]) | Int(bytes[19]) << 8
        guard bytes.count >= 20 + length,
              let gear = String(validating: bytes[20..<(20 + length)], as: UTF8.self) else { return nil }
        self.init(position: uint64(at: 2), gear: gear, cause: uint64(at: 10), event: Array(bytes[(20 + length)...]))
    }
}

/// A journal file holds an outbox record this server cannot read (its checksum matched:
/// it was written so, by another program or a later server).
package struct UnreadableOutboxRecord: Error, CustomStringConvertible {
    package let journal: String
    package var description: String {
        "\(journal) holds a Gear outbox record (a record of sequence 0) this server cannot read; was it written by a later spin-server?"
    }
}
