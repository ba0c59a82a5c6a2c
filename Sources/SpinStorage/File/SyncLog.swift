/// The format of `journals.log`, the log through which the configured Spins' journal
/// files share their syncs (`FileSpinStore`, under `storage.fsync` `always` and `batch`),
/// and how a start puts what it holds back into the files. Values only: the store does
/// the reading and writing.
///
/// **Why.** A configured Spin's journal is a file of its own. Synced one by one, a turn
/// that wrote to 16 Spins cost 16 `fdatasync`s, each putting the syncing thread to sleep
/// and waking it again. Instead, every append to a journal file (one or more whole
/// batches) is also appended to this one log (as a frame: the Spin, the byte offset the
/// append went to in its file, and its bytes), and a commit that must be durable syncs
/// the log: one `fdatasync` for every Spin written since the last. The journal files
/// themselves are synced only at a **checkpoint** (the log grew past its limit, a
/// compaction, a clean stop, a Spin taken back after a failure), after which the log
/// starts empty.
///
/// **Recovery.** After a crash, a journal file holds at least what it held at the last
/// checkpoint (it was synced then) and the log holds every batch written since, so a
/// start first replays the log (`reconcile`, per Spin): the frames whose batches the file
/// already holds are checked against it, and the rest are appended where the file's
/// whole batches end (a torn tail cut first). Every file the log names is synced, and only
/// then is the log emptied.
///
/// **Framing.** Each frame is one `JournalRecord` (length, CRC-32, a sequence counting the
/// frames from 1, payload), so a torn or damaged tail is told apart as in a journal. The
/// payload: the Spin's name (UInt16 LE length, UTF-8), the offset (UInt64 LE), the batch
/// (`JournalRecord` framing, exactly the bytes written to the file).
package enum SyncLog {
    /// The log's name in the storage directory.
    package static let fileName = "journals.log"

    /// One append to a journal file as the log holds it: one or more whole batches, or,
    /// for an append larger than `frameLimit`, part of one, cut between records.
    package struct Frame: Sendable, Equatable {
        package var spin: String
        /// Where the append begins in the Spin's journal file.
        package var offset: Int
        /// The batches, as written to the file.
        package var batch: [UInt8]

        package init(spin: String, offset: Int, batch: [UInt8]) {
            self.spin = spin
            self.offset = offset
            self.batch = batch
        }
    }

    /// Frames carry at most this many bytes of records (an append larger than that is cut
    /// into several frames between records), well below `JournalRecord.maximumLength`.
    package static let frameLimit = 16 << 20

    /// Appends the frame of `records` (whole records) of `spin`, written at `offset` of
    /// its file, to `bytes`: `JournalRecord` framing, written in place.
    package static func append<Records: Collection<UInt8>>(spin: String, offset: Int, batch records: Records, number: UInt64,
                                                           to bytes: inout [UInt8]) {
        let start = bytes.count
        let name = spin.utf8
        let length = 8 + 2 + name.count + 8 + records.count
        if bytes.capacity < start + 8 + length { bytes.reserveCapacity(max(start + 8 + length, bytes.capacity * 2)) }
        withUnsafeBytes(of: UInt32(length).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(0)) { bytes += $0 }
        withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt16(truncatingIfNeeded: name.count).littleEndian) { bytes += $0 }
        bytes += name
        withUnsafeBytes(of: UInt64(offset).littleEndian) { bytes += $0 }
        bytes += records
        let crc = CRC32.checksum(bytes[(start + 8)...])
        withUnsafeBytes(of: crc.littleEndian) { crcBytes in
            for index in 0..<4 { bytes[start + 4 + index] = crcBytes[index] }
        }
    }

    /// Appends the frames of one append (`records`, whole records) of `spin` at `offset`,
    /// cut between records so that none carries more than `limit` bytes (a single larger
    /// record gets a frame of its own). Returns the last frame's number.
    package static func appendFrames(spin: String, offset: Int, records: ArraySlice<UInt8>, numberedAfter number: UInt64,
                                     limit: Int = frameLimit, to bytes: inout [UInt8]) -> UInt64 {
        var number = number
        var start = records.startIndex
        var cut = start
        while cut < records.endIndex {
            let next = cut + 8 + Int(JournalRecord.readUInt32(records, at: cut) & ~JournalRecord.continuesFlag)
            if next - start > limit, cut > start {
                number += 1
                append(spin: spin, offset: offset + (start - records.startIndex), batch: records[start..<cut], number: number, to: &bytes)
                start = cut
            }
            cut = next
        }
        number += 1
        append(spin: spin, offset: offset + (start - records.startIndex), batch: records[start..<records.endIndex], number: number,
               to: &bytes)
        return number
    }

    /// Whether `bytes` are whole records, end to end (the checksums are the frame's).
    static func wholeRecords(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset + 16 <= bytes.count {
            let length = Int(JournalRecord.readUInt32(bytes, at: offset) & ~JournalRecord.continuesFlag)
            guard length >= 8, length <= bytes.count - offset - 8 else { return false }
            offset += 8 + length
        }
        return offset == bytes.count && offset > 0
    }

    /// What the log holds: its frames, in order, up to where it is damaged.
    package struct Decoded: Sendable {
        package var frames: [Frame]
        /// Nil when every byte decoded. A torn tail was never synced (nothing of it was
        /// acknowledged); corruption may hide acknowledged batches after it.
        package var damage: JournalRecord.Damage?
    }

    package static func decode(_ bytes: [UInt8]) -> Decoded {
        let decoded = JournalRecord.decode(bytes)
        var frames: [Frame] = []
        frames.reserveCapacity(decoded.records.count)
        for (index, record) in decoded.records.enumerated() {
            switch frame(from: record.payload) {
            case .success(let frame): frames.append(frame)
            case .failure(let problem): return Decoded(frames: frames, damage: malformed(index, in: decoded, problem.reason))
            }
        }
        guard var damage = decoded.damage, damage.kind == .corruption else { return Decoded(frames: frames, damage: decoded.damage) }
        // A frame holds a Spin's journal records, each with its own length and checksum:
        // one of those in a frame cut short is an intact record, but not an intact frame.
        // Only an intact frame after the damage makes it corruption (as in a journal,
        // unless zeros up to a sector boundary come first: a sector never written).
        if let intact = intactFrame(in: bytes, after: damage.offset, lastNumber: decoded.records.last?.sequence),
           !JournalRecord.unwrittenSector(in: bytes, from: damage.offset, to: intact) {
            damage.kind = .corruption
        } else {
            damage.kind = .tornTail
        }
        return Decoded(frames: frames, damage: damage)
    }

    struct Problem: Error {
        let reason: String
    }

    /// The frame a record's payload holds, or what is wrong with it.
    static func frame(from payload: [UInt8]) -> Result<Frame, Problem> {
        guard payload.count >= 10 else { return .failure(Problem(reason: "a frame too short for its header")) }
        let nameLength = Int(payload[0]) | Int(payload[1]) << 8
        guard payload.count >= 10 + nameLength else { return .failure(Problem(reason: "a frame shorter than its Spin's name")) }
        let spin = String(decoding: payload[2..<(2 + nameLength)], as: UTF8.self)
        let offset = JournalRecord.readUInt64(payload, at: 2 + nameLength)
        let batch = Array(payload[(10 + nameLength)...])
        guard offset <= UInt64(Int.max - batch.count) else { return .failure(Problem(reason: "a frame with an impossible offset")) }
        guard wholeRecords(batch) else { return .failure(Problem(reason: "a frame that is not whole records")) }
        return .success(Frame(spin: spin, offset: Int(offset), batch: batch))
    }

    /// The offset of the first intact frame after `offset`: an intact record
    /// (`JournalRecord.intactRecord`, numbered above `lastNumber`) whose payload is a frame.
    static func intactFrame(in bytes: [UInt8], after offset: Int, lastNumber: UInt64?) -> Int? {
        var from = offset
        while let found = JournalRecord.intactRecord(in: bytes, after: from, lastSequence: lastNumber) {
            let length = Int(JournalRecord.readUInt32(bytes, at: found) & ~JournalRecord.continuesFlag)
            if case .success = frame(from: Array(bytes[(found + 16)..<(found + 8 + length)])) { return found }
            from = found
        }
        return nil
    }

    /// A frame whose checksum matched but whose payload is not a frame: written by
    /// something else, not torn.
    private static func malformed(_ index: Int, in decoded: JournalRecord.Decoded, _ reason: String) -> JournalRecord.Damage {
        var offset = 0
        for record in decoded.records[..<index] { offset += 16 + record.payload.count }
        return JournalRecord.Damage(kind: .corruption, offset: offset, reason: reason, bytesAfter: 0)
    }

    /// What a start does with one Spin's journal file, given the log's frames of it.
    package enum Reconciled: Sendable, Equatable {
        /// The file holds every batch the frames hold: nothing to write.
        case holdsAll
        /// Cut the file at `cut` (where its whole batches end), then append `bytes`.
        case extend(cut: Int, bytes: [UInt8])
        /// The frames do not fit the file (a batch that differs from the file's bytes, or
        /// the file ending before the frames begin, as after corruption in what the last
        /// checkpoint synced): the file is left as it is and the start reports it.
        case mismatch(String)
    }

    /// Puts `frames` (one Spin's, in log order) back into its journal `file`: what the
    /// frames hold within the file's whole batches must match its bytes (a frame may end
    /// past them: the file kept some of its batches); the rest continues where those end
    /// (a batch the log holds only the start of was never acknowledged: read as a torn
    /// tail, cut).
    /// Corruption in the file is cut when the frames cover everything from where it
    /// starts (they hold every batch after the last checkpoint).
    package static func reconcile(file: [UInt8], frames: [Frame]) -> Reconciled {
        let whole = JournalRecord.decode(file).validLength
        var end = whole
        var appended: [UInt8] = []
        for frame in frames {
            let frameEnd = frame.offset + frame.batch.count
            if frame.offset < whole {
                // What the file holds of it must be the same bytes. Those end where the
                // file's whole batches do: at a batch's end in the frame too.
                let held = min(frameEnd, whole)
                guard file[frame.offset..<held].elementsEqual(frame.batch[..<(held - frame.offset)]) else {
                    return .mismatch("the batches at byte \(frame.offset) differ from the log's")
                }
                guard frameEnd > whole else { continue }
                guard end == whole else {
                    return .mismatch("the log's batches at byte \(frame.offset) overlap those before them")
                }
                appended += frame.batch[(whole - frame.offset)...]
            } else {
                guard frame.offset == end else {
                    return .mismatch(frame.offset > end
                        ? "its whole batches end at byte \(end), the log's next batches for it begin at byte \(frame.offset)"
                        : "the log's batches at byte \(frame.offset) overlap those before them")
                }
                appended += frame.batch
            }
            end = frameEnd
        }
        return appended.isEmpty ? .holdsAll : .extend(cut: whole, bytes: appended)
    }
}
