import SpinCore
import SpinStorage
import SpinWire
import SpinJSON

/// What a server hosts in place of a Spin made at run time while it sleeps (idle for
/// `limits.idleSpinSeconds`): its name, kind and last sequence, and nothing else: no loop,
/// no feedbacks, no state in memory, no open journal. It is listed (`"status":"asleep"`)
/// without being woken; every route about it wakes it first (`RuntimeSpins.wake`), and so
/// does a Gear event for it. Were a request to reach it anyway, it would be refused as
/// stopped, and sent again once the Spin is awake.
final class SleepingSpin: LooplessSpin {
    let name: String
    let kind: String
    /// The sequence it fell asleep at.
    let sequence: UInt64

    init(name: String, kind: String, sequence: UInt64) {
        self.name = name
        self.kind = kind
        self.sequence = sequence
    }

    /// Not kept while it sleeps (its schema route wakes it first): any event, any state.
    var schema: SpinSchema { .init(event: SpinSchema.anyEvent, state: .any) }

    var machineDefinition: JSONValue? { nil }
    var status: SpinStatus { .asleep }
    var unrecoverable: Unrecoverable? { nil }

    func decodeEvents(json: [UInt8]) throws(APIError) -> EventBatch { throw .spinStopped(name, applying: false) }
    /// Its last sequence, and no state (reading the state wakes it).
    func snapshot() -> (sequence: UInt64, state: JSONValue) { (sequence, .null) }
    func recover(snapshot: [UInt8]?, records: [JournalRecord.Record], keep: Int) throws -> Recovered {
        throw RecoveryError(spin: name, problem: "Spin \(name) is asleep: wake it to recover it")
    }
    func replay(snapshot: [UInt8]?, records: [JournalRecord.Record], keeping range: ClosedRange<UInt64>) throws -> [HostedTransition] {
        throw RecoveryError(spin: name, problem: "Spin \(name) is asleep: wake it to recover it")
    }
    func fresh() -> any HostedSpin { self }
}
