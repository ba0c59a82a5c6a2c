import SpinCore
import SpinStorage
import SpinWire
import SpinJSON

/// Why a Spin's stored history could not be replayed at start-up: where, and what is
/// wrong. `GET /v1/spins/{name}` shows it as `unrecoverable`.
package struct Unrecoverable: Sendable, Equatable, CustomStringConvertible {
    /// The journal at fault, as its store names it (a file's path).
    package var journal: String
    /// The journal record at fault, when known (an event that does not decode); for a
    /// damaged journal, the one after the last intact record.
    package var sequence: UInt64?
    /// The byte offset of the damage in a journal file, when the journal is damaged.
    package var offset: Int?
    /// What is wrong.
    package var error: String

    package init(journal: String, sequence: UInt64? = nil, offset: Int? = nil, error: String) {
        self.journal = journal
        self.sequence = sequence
        self.offset = offset
        self.error = error
    }

    package var description: String {
        var place = journal
        if let sequence { place += ", sequence \(sequence)" }
        if let offset { place += ", byte \(offset)" }
        return "\(place): \(error)"
    }

    /// `{"journal":..,"sequence":N,"offset":N,"error":..}` (absent members unknown).
    package var json: JSONValue {
        var fields: [(String, JSONValue)] = [("journal", .string(journal))]
        if let sequence { fields.append(("sequence", .number(String(sequence)))) }
        if let offset { fields.append(("offset", .number(String(offset)))) }
        fields.append(("error", .string(error)))
        return .object(fields)
    }
}

/// What a server hosts in place of a Spin it could not recover under
/// `storage.onCorruption: "isolate"`: the Spin's name, kind, schema and definition, and
/// no loop. It applies nothing (no client event, no Gear event: its feedbacks are never
/// attached), streams nothing and writes nothing, so its storage stays as it was for the
/// operator; every other Spin runs.
final class UnrecoverableSpin: LooplessSpin {
    let name: String
    let kind: String
    let problem: Unrecoverable
    /// The Spin as it was hosted: what `fresh()` gives back.
    private let original: any HostedSpin

    init(_ original: any HostedSpin, _ unrecoverable: Unrecoverable) {
        self.name = original.name
        self.kind = original.kind
        self.original = original
        self.problem = unrecoverable
    }

    var machineDefinition: JSONValue? { original.machineDefinition }
    var storedDefinition: (any StoredDefinition)? { original.storedDefinition }
    var definitionVersion: Int { original.definitionVersion }
    var schema: SpinSchema { original.schema }
    var status: SpinStatus { .unrecoverable }
    var unrecoverable: Unrecoverable? { problem }

    func decodeEvents(json: [UInt8]) throws(APIError) -> EventBatch {
        throw .spinUnrecoverable(name, problem)
    }


    /// The sequence of the last record that could be read before the fault (0 when
    /// unknown), and no state.
    func snapshot() -> (sequence: UInt64, state: JSONValue) {
        (max(problem.sequence ?? 1, 1) - 1, .null)
    }


    func recover(snapshot: [UInt8]?, records: [JournalRecord.Record], keep: Int) throws -> Recovered {
        throw RecoveryError(spin: name, problem: "\(problem)", sequence: problem.sequence)
    }

    func replay(snapshot: [UInt8]?, records: [JournalRecord.Record], keeping range: ClosedRange<UInt64>) throws -> [HostedTransition] {
        throw RecoveryError(spin: name, problem: "\(problem)", sequence: problem.sequence)
    }
    /// The Spin as hosted: a cluster node recovers it afresh when it serves it.
    func fresh() -> any HostedSpin { original.fresh() }
}
