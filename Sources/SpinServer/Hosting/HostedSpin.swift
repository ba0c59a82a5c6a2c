import Foundation
import SpinCore
import Synchronization
import SpinStorage
import SpinJSON
import SpinConcurrency

/// One applied event of a hosted Spin, as JSON: what streams send and a journal keeps.
package struct HostedTransition: Sendable {
    package let sequence: UInt64
    package let event: JSONValue
    package let state: JSONValue
    /// False for every event of a batch but its last (the journal writes batches whole).
    package var endsBatch = true
    /// Who sent the event (`EventBatch.origin`); nil for events of feedbacks and Gears.
    package var origin: String?
    /// What the Spin consumed of other Spins' Gear outboxes up to this event (the sender's
    /// name → the position of the last event taken from it), since its previous journaled
    /// event: the Gear event this one is, and the ones its reducer declined meanwhile.
    /// Journaled with the event (an idempotent consumer, docs/OPERATIONS.md "Gear delivery").
    package var consumed: [String: UInt64] = [:]
    /// The Gear events the feedbacks propagated when given this event's state, in order:
    /// journaled with it, as the Spin's outbox, and sent once it is durable.
    package var outbox: [GearOutput] = []
    /// The version of the Spin's definition the event was applied under (journaled when
    /// it is not 1).
    package var version: Int32 = 1
    /// For the transition that migrated the Spin to `version` (its event
    /// `{"type":"spin.migrated",..}`, made by the server): the version it came from; 0
    /// for every other.
    package var migratedFrom: Int32 = 0
    /// When the event was applied: milliseconds since 1970 (0: not known, a record
    /// journaled before times were). Journaled (`JournalPayload`), shown by the history.
    package var time: Int64 = 0
    /// Set when the transition moved the Spin to a state no event of its own led to (a
    /// restore, or the first transition of a fork: `HostedSpin.replaceState`): its state is
    /// journaled with it, and streams begin again from it in a new epoch. Out of line, as
    /// nearly every transition has none.
    package var replacement: StateReplacement?

    package init(sequence: UInt64, event: JSONValue, state: JSONValue, endsBatch: Bool = true, origin: String? = nil,
                 consumed: [String: UInt64] = [:]) {
        self.sequence = sequence
        self.event = event
        self.state = state
        self.endsBatch = endsBatch
        self.origin = origin
        self.consumed = consumed
    }
}

/// Why a state cannot be put in place (`HostedSpin.replaceState`).
package struct StateRefusal: Error, Sendable {
    package let reason: String
}

/// What makes a transition a replacement of the Spin's state (`HostedTransition.replacement`).
package final class StateReplacement: Sendable {
    /// The epoch of the Spin's history from this transition on; empty for one replayed
    /// from storage (whose epoch is whatever storage holds now).
    package let epoch: String

    package init(epoch: String) {
        self.epoch = epoch
    }

    /// The mark of a replacement replayed from storage.
    package static let replayed = StateReplacement(epoch: "")
}

extension HostedTransition {
    /// The time now, in milliseconds since 1970 (`time`).
    package static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec / 1_000_000)
    }
}

/// A Gear event a hosted Spin propagated, before its journal gives it a place in the
/// Spin's outbox (`OutboxRecord`).
package struct GearOutput: Sendable, Equatable {
    /// The hosted Gear's name.
    package var gear: String
    /// The event's JSON.
    package var event: [UInt8]
    /// The sequence of the transition whose state propagated it (0: none).
    package var cause: UInt64

    package init(gear: String, event: [UInt8], cause: UInt64) {
        self.gear = gear
        self.event = event
        self.cause = cause
    }
}

/// A client's batch, applied: the Spin's sequence after it (its last applied event's, or
/// the unchanged one when the reducer declined every event), the state after it when the
/// submitter asked for it (`?wait=true`; nobody else pays for encoding it), and which
/// events were ignored (no transition from the state they met).
package struct AppliedEvent: Sendable {
    package let sequence: UInt64
    package let state: JSONValue?
    /// The events in the batch.
    package let count: Int
    /// Offsets of the events the reducer declined, ascending; empty when all applied.
    package let ignored: [Int]
    /// The offset from which the Spin was done (a machine that reached a top-level final
    /// state): the ignored events from there on are ignored for that (`done`); nil when
    /// the batch left it running.
    package let doneFrom: Int?
    /// When the batch was accepted, applied and made durable (set by `EventAcknowledgement`
    /// on the way to its answer).
    package var stages: EventStages?

    package init(sequence: UInt64, state: JSONValue? = nil, count: Int = 1, ignored: [Int] = [], doneFrom: Int? = nil) {
        self.sequence = sequence
        self.state = state
        self.count = count
        self.ignored = ignored
        self.doneFrom = doneFrom
    }

    /// `[{"applied":true},{"applied":false,"reason":"no_transition"}, ..]`: one per event.
    package var replies: JSONValue {
        let applied = JSONValue.object([("applied", .bool(true))])
        var replies = [JSONValue](repeating: applied, count: count)
        for offset in ignored { replies[offset] = reply(ignoredAt: offset) }
        return .array(replies)
    }

    /// The reply to the ignored event at `offset`: `no_transition`, or `done` once the Spin is.
    package func reply(ignoredAt offset: Int) -> JSONValue {
        if let doneFrom, offset >= doneFrom { return Self.done }
        return Self.noTransition
    }

    /// The reply to an ignored event.
    package static var noTransition: JSONValue {
        .object([("applied", .bool(false)), ("reason", .string("no_transition"))])
    }

    /// The reply to an event sent to a machine that is done (DESIGN §3).
    package static var done: JSONValue {
        .object([("applied", .bool(false)), ("reason", .string("done"))])
    }
}

/// What recovery restored a Spin to.
package struct Recovered: Sendable {
    package var sequence: UInt64
    package var state: JSONValue
    /// The newest replayed transitions (at most what recovery was asked to keep), for the
    /// history streams resume from.
    package var history: [HostedTransition]
    /// What the Spin consumed of each sender's Gear outbox (the snapshot's, then every
    /// replayed record's): where redelivery starts.
    package var consumed: [String: UInt64] = [:]
    /// The last position of its own outbox the snapshot records (0: none).
    package var outboxPosition: UInt64 = 0
    /// The transition that migrated the Spin from the older version of its definition it
    /// was recorded under (the last of `history`, at `sequence`): the journal writes it
    /// before the Spin runs. Nil when nothing was to migrate.
    package var migration: HostedTransition?
}

/// Events decoded from a request, ready to be submitted to the Spin that decoded them.
package struct EventBatch: Sendable {
    package let count: Int
    /// Who sends the batch: the authenticated subject of the request (a JWT's `sub`, a
    /// configured token's `subject`), journaled with each of its events and shown on the
    /// state stream (`"sub"`). Nil when the request had none.
    package var origin: String?
    /// The decoded `[Event]` in a box typed by the `HostedLoop` that made it.
    let events: AnyObject & Sendable
    /// That loop: only it opens the box (held, so that no other loop can take its place).
    let decoder: any HostedSpin
}

/// The events of an `EventBatch`, typed: the loop that decoded them reads them back with
/// an identity check and no dynamic cast.
final class DecodedEvents<Event: Sendable>: Sendable {
    let events: [Event]
    init(_ events: [Event]) { self.events = events }
}

/// What submitting a batch came to.
package enum SubmitResult: Sendable, Equatable {
    /// Enqueued; `onApplied` will be called.
    case accepted
    /// The inbox holds too many events; nothing was enqueued.
    case inboxFull
    /// The Spin is stopped (the server is shutting down); nothing was enqueued.
    case stopped
    /// The Spin is suspended (runaway guard) until resumed; nothing was enqueued.
    case suspended
}

/// Whether a hosted Spin applies events: `suspended` by its runaway guard (or by the
/// host) until resumed. `GET /v1/spins/{name}` says which.
package enum SpinStatus: String, Sendable, Equatable {
    case running, suspended
    /// A declarative machine reached a top-level final state: it takes no more events
    /// (each is answered `done`, and nothing is journaled).
    case done
    /// Its stored history could not be replayed and `storage.onCorruption` is `isolate`:
    /// it never runs in this process (`UnrecoverableSpin`).
    case unrecoverable
    /// Made at run time and idle for `limits.idleSpinSeconds`: its state is durable, its
    /// loop released (`SleepingSpin`); any request or Gear event wakes it.
    case asleep
}

/// Why a Spin is suspended while its storage fails (`HostedSpin.hold`): a host tells
/// such a hold from a runaway suspension by it.
package let storageHoldReason = "its storage is failing"

/// A Spin hosted by name, with JSON in and out. The API and stream layers only see this.
package protocol HostedSpin: AnyObject, Sendable {
    var name: String { get }
    /// What made the Spin: an example's name, `machine`, or what a Swift user said.
    var kind: String { get }
    /// Its definition as storage keeps its versions (a machine file); nil for one it does
    /// not keep.
    var storedDefinition: (any StoredDefinition)? { get }
    /// The version of its definition its transitions are applied under.
    var definitionVersion: Int { get }
    /// Decodes a request body: one event object or an array of them. A body that is not
    /// JSON is a 400 (`malformed_json`), JSON that is not an event of this Spin a 422
    /// (`invalid_event`, with the decoding path).
    func decodeEvents(json: [UInt8]) throws(APIError) -> EventBatch
    /// Enqueues the whole batch or nothing; `onApplied` is called on the Spin's executor
    /// with the last event's sequence, and the state after it when `withState` (nil if
    /// the Spin stopped first).
    func submit(_ batch: EventBatch, inboxLimit: Int, withState: Bool,
                onApplied: @escaping @Sendable (AppliedEvent?) -> Void) -> SubmitResult
    /// The current sequence and state, read at once.
    func snapshot() -> (sequence: UInt64, state: JSONValue)
    /// Sees every applied event from now on, in order, on the Spin's executor. The
    /// handler must not block.
    ///
    /// A transition whose event or state does not encode as JSON (a feedback's event its
    /// type cannot write, a NaN in the state) is never handed on: the Spin suspends with
    /// a reason naming it, `unencodable` gets that reason, and no transition reaches the
    /// handler until `hold` has put the Spin back to a state the host gives (the last
    /// durable one): nothing unencodable is journaled or streamed, as null or otherwise.
    func observe(_ handler: @escaping @Sendable (HostedTransition) -> Void,
                 unencodable: @escaping @Sendable (String) -> Void) -> SpinSubscription
    /// `observe(_:unencodable:)`, and `afterFeedbacks` is called for each applied event
    /// once the feedbacks were given its state (after what they do at once with it, such
    /// as propagating a Gear event), on the Spin's executor, when `handler` was called
    /// for it: a host journals a transition there with the Gear events its state sent.
    func observe(_ handler: @escaping @Sendable (HostedTransition) -> Void,
                 afterFeedbacks: @escaping @Sendable () -> Void,
                 unencodable: @escaping @Sendable (String) -> Void) -> SpinSubscription
    /// Something the Spin produced does not encode as JSON (a Gear event it propagated):
    /// it suspends and goes back as for a transition that does not encode (`observe`'s
    /// `unencodable` gets `reason`).
    func refuse(unencodable reason: String)
    /// A transition was refused by the host (its state is over `limits.maxStateBytes`):
    /// observers get no transition until `hold` puts the Spin back, and the Spin is
    /// suspended as for failing storage (`storageHoldReason`), so `release` lets it go on.
    func holdBack()
    /// Whether the Spin refused a state (too large, or not encodable) and is going back to
    /// its durable one: what its feedbacks make meanwhile is not to be sent.
    var isFaulted: Bool { get }
    /// Whether its loop was made and has stopped (it applies nothing more).
    var isStopped: Bool { get }
    var pendingEvents: Int { get }
    /// Before `prepare`: restores the state from a snapshot (`{"sequence":N,"state":..}`)
    /// and the journaled events after it, replayed through the reducer (no effect runs).
    /// Keeps the last `keep` replayed transitions. Throws `RecoveryError` on data it
    /// cannot use.
    func recover(snapshot: [UInt8]?, records: [JournalRecord.Record], keep: Int) throws -> Recovered
    /// Replays a stored stretch of the Spin's history (a segment of it, or its journal)
    /// as `recover` does, changing nothing of the Spin, from any thread: returns the
    /// transitions whose sequence is in `range`, each with the state after it and under
    /// the version it was applied with (an older version's state stays as it was). Throws
    /// `RecoveryError` on data it cannot use.
    func replay(snapshot: [UInt8]?, records: [JournalRecord.Record], keeping range: ClosedRange<UInt64>) throws -> [HostedTransition]
    /// Storage lost what the Spin applied after its last durable state: suspends it
    /// (`storageHoldReason`) and, on its executor after everything it applied before,
    /// puts it back to the state `rollback` gives; then calls `then` there.
    func hold(rollback: @escaping @Sendable () -> (sequence: UInt64, state: JSONValue, dropped: Int),
              then: @escaping @Sendable () -> Void)
    /// Storage works again: a Spin held for it goes on from its durable state.
    func release()
    /// Moves the Spin to `state` (JSON of its state) at its next sequence, on its executor
    /// after the events it is applying, as transition `event` from `origin` with
    /// `replacement`: its observers get that transition, then its feedbacks the state, as
    /// after any applied event. `done` gets the new sequence, or why the state cannot be
    /// the Spin's (it does not decode as its state, or does not fit its definition; nothing
    /// changed), or nil when the Spin has no loop to move (asleep, unrecoverable), or its
    /// loop stopped or was suspended before the state could be put in place.
    func replaceState(with state: JSONValue, event: JSONValue, origin: String?, replacement: StateReplacement,
                      done: @escaping @Sendable (Result<UInt64, StateRefusal>?) -> Void)
    /// Makes the loop (Gear subscriptions attached) with its feedback budget, without
    /// delivering any state. A loop made before (by a read) keeps the default budget.
    func prepare(feedbackBudget: Int)
    func start()
    func stop()
    /// Stops the loop and returns once it applies nothing more (`SpinLoop.stopAndWait`):
    /// every event it took was applied, observed and answered, or came back unapplied.
    func stopAndWait()
    var status: SpinStatus { get }
    /// Suspends the Spin (see `SpinLoop`); false if it already is, or is stopped.
    @discardableResult func suspend(reason: String) -> Bool
    /// Whether it is suspended because its storage fails (`hold`, until `release`), not by
    /// its runaway guard or a client: a request it refuses meanwhile is told to retry
    /// (503 `storage_unavailable`), not to resume it (409 `spin_suspended`).
    var isHeldForStorage: Bool { get }
    /// Runs a suspended Spin again, applying `batch` first when given (see
    /// `SpinLoop.resume(applying:)`); false if it was not suspended (nothing enqueued).
    /// `onApplied` as for `submit`.
    @discardableResult func resume(applying batch: EventBatch?,
                                   onApplied: @escaping @Sendable (AppliedEvent?) -> Void) -> Bool
    /// Calls `handler` on the Spin's executor with each suspension, and nil on each resume.
    func onSuspensionChange(_ handler: @escaping @Sendable (Suspension?) -> Void) -> SpinSubscription
    /// The JSON definition of a declarative machine's Spin (`GET /v1/spins/{name}` shows
    /// it as `machine`); nil for every other Spin.
    var machineDefinition: JSONValue? { get }
    /// The JSON Schemas of its events and state (`GET /v1/spins/{name}/schema`).
    var schema: SpinSchema { get }
    /// The same Spin again, as it was hosted: no loop made, nothing recovered. A cluster
    /// node serves a Spin again after another node did with a fresh one, recovered from
    /// the journal as it stands then.
    func fresh() -> any HostedSpin
    /// Whether the loop is made (by `prepare`, or by a read): a cluster node reads only
    /// the Spins it serves, so that others never get a loop (nor Gear subscriptions).
    var isPrepared: Bool { get }
    /// Why the Spin could not be recovered, for one hosted in its place by
    /// `storage.onCorruption: "isolate"` (`UnrecoverableSpin`); nil for every other.
    var unrecoverable: Unrecoverable? { get }
    /// Whether it waits for something now: an effect of its feedbacks running (a request,
    /// a timer), or a machine's `after` timer or delayed `raise` due: a Spin made at run
    /// time does not sleep while it does.
    var awaitsTime: Bool { get }
}

extension HostedSpin {
    /// `observe(_:unencodable:)` for whoever only watches (the Spin suspends all the same).
    package func observe(_ handler: @escaping @Sendable (HostedTransition) -> Void) -> SpinSubscription {
        observe(handler, unencodable: { _ in })
    }

    /// Nil: only machine Spins have a definition to show.
    package var machineDefinition: JSONValue? { nil }
    /// Nil: only machine Spins keep their definition's versions in storage.
    package var storedDefinition: (any StoredDefinition)? { nil }
    /// 1: only machine Spins have versions.
    package var definitionVersion: Int { 1 }
    /// Nil: the Spin was recovered.
    package var unrecoverable: Unrecoverable? { nil }
    /// False: only a Spin with a loop is held for its storage.
    package var isHeldForStorage: Bool { false }
    /// Nil: only a Spin with a loop moves.
    package func replaceState(with state: JSONValue, event: JSONValue, origin: String?, replacement: StateReplacement,
                              done: @escaping @Sendable (Result<UInt64, StateRefusal>?) -> Void) {
        done(nil)
    }
    /// Any object with a `type` for events, any state.
    package var schema: SpinSchema { SpinSchema(event: SpinSchema.anyEvent, state: .any) }
}

