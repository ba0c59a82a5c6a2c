import Foundation
import SpinCore
import Synchronization
import SpinStorage
import SpinWire
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
}

/// Events decoded from a request, ready to be submitted to the Spin that decoded them.
package struct EventBatch: Sendable {
    package let count: Int
    /// Who sends the batch: the authenticated subject of the request (a JWT's `sub`, a
    /// configured token's `subject`), journaled with each of its events and shown on the
    /// state stream (`"sub"`). Nil when the request had none.
    package var origin: String?
    /// The decoded `[Event]` in a box typed by the `HostedLoop` that made it.
    fileprivate let events: AnyObject & Sendable
    /// That loop: only it opens the box (held, so that no other loop can take its place).
    fileprivate let decoder: any HostedSpin
}

/// The events of an `EventBatch`, typed: the loop that decoded them reads them back with
/// an identity check and no dynamic cast.
private final class DecodedEvents<Event: Sendable>: Sendable {
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
    /// Storage lost what the Spin applied after its last durable state: suspends it
    /// (`storageHoldReason`) and, on its executor after everything it applied before,
    /// puts it back to the state `rollback` gives; then calls `then` there.
    func hold(rollback: @escaping @Sendable () -> (sequence: UInt64, state: JSONValue, dropped: Int),
              then: @escaping @Sendable () -> Void)
    /// Storage works again: a Spin held for it goes on from its durable state.
    func release()
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
    /// Nil: the Spin was recovered.
    package var unrecoverable: Unrecoverable? { nil }
    /// False: only a Spin with a loop is held for its storage.
    package var isHeldForStorage: Bool { false }
    /// Any object with a `type` for events, any state.
    package var schema: SpinSchema { SpinSchema(event: SpinSchema.anyEvent, state: .any) }
}

/// The `HostedSpin` of a Swift `Spin` with Codable state and events.
final class HostedLoop<State: Codable & Sendable, Event: Codable & Sendable>: HostedSpin {
    let name: String
    let kind: String
    private let spin: Spin<State, Event>
    /// The loop (made on first use), where it starts and how it refuses: one lock for the
    /// three (an awake Spin keeps one object, not three).
    private let core = Protected(Core())
    private struct Core {
        var loop: SpinLoop<State, Event>?
        /// Where the loop starts: the Spin's initial state at 0, or what recovery restored.
        var origin: (state: State, sequence: UInt64)?
        /// What `observe` was told to call when something does not encode (`refuse`).
        var refusal: (@Sendable (String) -> Void)?
    }
    /// Set when a transition did not encode, until `hold` puts the Spin back: observers
    /// are handed nothing meanwhile (see `observe`).
    private let unencodable = EncodingFault()

    /// What every Spin of a kind shares (one object per kind, not five fields per Spin).
    let traits: Traits
    var machineDefinition: JSONValue? { traits.machineDefinition }
    var schema: SpinSchema { traits.schema }

    /// What a Spin shows of itself and how it is judged, the same for every Spin of its
    /// kind.
    final class Traits: Sendable {
        /// Whether each decoded event is encoded before it is submitted: not for a
        /// `TypeTaggedEvent` whose decoding checks what its encoding does (its table
        /// passed the round-trip check when hosted); an event that still fails is caught
        /// by `observe`.
        let encodesBeforeApplying = !((Event.self as? any TypeTaggedEvent.Type)?.decodedEventsEncode ?? false)
        /// How events are read from request bodies and written for the journal and streams.
        let coding = HostedEventCoding<Event>()
        let machineDefinition: JSONValue?
        let schema: SpinSchema
        /// Whether a state is final for the whole Spin (a machine's top-level final
        /// state); nil for a Spin that never completes.
        let isDone: (@Sendable (State) -> Bool)?
        /// Whether the Spin waits for time in this state (a machine's `after` timer or
        /// delayed `raise`): it does not sleep then.
        let keepsAwake: (@Sendable (State) -> Bool)?
        /// Why a state the reducer made means the Spin must stop applying events (a
        /// machine whose event set off more microsteps than it allows); nil for a state
        /// that is fine.
        let suspendsAt: (@Sendable (State) -> String?)?
        /// Why a client may not send an event that decoded (a machine's `xstate.` events
        /// are its own); nil for one it may.
        let refusesPosted: (@Sendable (Event) -> String?)?

        init(machineDefinition: JSONValue? = nil, schema: SpinSchema? = nil, isDone: (@Sendable (State) -> Bool)? = nil,
             keepsAwake: (@Sendable (State) -> Bool)? = nil, suspendsAt: (@Sendable (State) -> String?)? = nil,
             refusesPosted: (@Sendable (Event) -> String?)? = nil) {
            self.machineDefinition = machineDefinition
            self.schema = schema ?? .of(State.self, Event.self)
            self.isDone = isDone
            self.keepsAwake = keepsAwake
            self.suspendsAt = suspendsAt
            self.refusesPosted = refusesPosted
        }
    }

    convenience init(name: String, kind: String, spin: Spin<State, Event>, schema: SpinSchema? = nil) {
        self.init(name: name, kind: kind, spin: spin, traits: Traits(schema: schema))
    }

    init(name: String, kind: String, spin: Spin<State, Event>, traits: Traits) {
        self.name = name
        self.kind = kind
        self.spin = spin
        self.traits = traits
    }

    /// The loop, made on first use (`prepare`), so that every read has one.
    private var running: SpinLoop<State, Event> {
        loop(feedbackBudget: SpinLoop<State, Event>.defaultFeedbackBudget)
    }

    private func loop(feedbackBudget: Int) -> SpinLoop<State, Event> {
        core.withLock { core in
            if let loop = core.loop { return loop }
            let recovered = core.origin
            let made = spin.startingFrom(recovered?.state ?? spin.initialState)
                .makeLoop(label: name, sequence: recovered?.sequence ?? 0, feedbackBudget: feedbackBudget,
                          suspendingAt: traits.suspendsAt)
            core.loop = made
            return made
        }
    }

    func prepare(feedbackBudget: Int) { _ = loop(feedbackBudget: feedbackBudget) }

    func hold(rollback: @escaping @Sendable () -> (sequence: UInt64, state: JSONValue, dropped: Int),
              then: @escaping @Sendable () -> Void) {
        let name = self.name
        let loop = running
        let fault = unencodable
        loop.suspend(reason: storageHoldReason)
        loop.restore(to: {
            // Back to a state that encoded: observers are handed transitions again.
            defer { fault.failed.store(false, ordering: .releasing) }
            let (sequence, json, _) = rollback()
            do {
                return (try JSONDecoder().decode(State.self, from: Data(json.bytes)), sequence)
            } catch {
                // Its own encoding does not decode (a NaN written as null): keep the state.
                FileHandle.standardError.write(Data("\(SpinServerProgram.runningName): Spin \(name) cannot go back to its durable state: \(error)\n".utf8))
                return nil
            }
        }, then: then)
    }

    func release() {
        if isHeldForStorage { running.resume() }
    }
    var isHeldForStorage: Bool {
        guard isPrepared, case .requested(storageHoldReason)? = running.suspension?.reason else { return false }
        return true
    }
    func start() { running.start() }
    /// Stops the loop, if it was ever made (a Spin a cluster node never served has none).
    func stop() { core.withLock { $0.loop }?.stop() }
    func stopAndWait() { core.withLock { $0.loop }?.stopAndWait() }
    var isPrepared: Bool { core.withLock { $0.loop != nil } }
    var awaitsTime: Bool {
        guard let loop = core.withLock({ $0.loop }) else { return false }
        if loop.runningEffects > 0 { return true }
        guard let keepsAwake = traits.keepsAwake else { return false }
        return keepsAwake(loop.snapshot.state)
    }
    func fresh() -> any HostedSpin {
        HostedLoop(name: name, kind: kind, spin: spin, traits: traits)
    }
    var pendingEvents: Int { running.pendingEvents }
    var status: SpinStatus {
        let loop = running
        if loop.isSuspended { return .suspended }
        if let isDone = traits.isDone, isDone(loop.snapshot.state) { return .done }
        return .running
    }
    func suspend(reason: String) -> Bool { running.suspend(reason: reason) }
    func resume(applying batch: EventBatch?, onApplied: @escaping @Sendable (AppliedEvent?) -> Void) -> Bool {
        guard let batch else { return running.resume() }
        return running.resume(applyingBatch: events(of: batch), origin: batch.origin) { result in
            onApplied(result.map { self.applied($0, withState: false) })
        }
    }
    func onSuspensionChange(_ handler: @escaping @Sendable (Suspension?) -> Void) -> SpinSubscription {
        running.onSuspensionChange(handler)
    }

    func recover(snapshot: [UInt8]?, records: [JournalRecord.Record], keep: Int) throws -> Recovered {
        var state = spin.initialState
        var sequence: UInt64 = 0
        var consumed: [String: UInt64] = [:]
        var outboxPosition: UInt64 = 0
        if let snapshot {
            guard let document = try? JSONSerialization.jsonObject(with: Data(snapshot)) as? [String: Any],
                  let number = document["sequence"] as? NSNumber, let stateJSON = document["state"],
                  let stateData = try? JSONSerialization.data(withJSONObject: stateJSON, options: [.fragmentsAllowed]) else {
                throw RecoveryError(spin: name, problem: "the snapshot is not {\"sequence\":N,\"state\":..}")
            }
            (consumed, outboxPosition) = try Self.gearPositions(in: document, spin: name)
            do {
                state = try JSONDecoder().decode(State.self, from: stateData)
            } catch let error as DecodingError {
                throw RecoveryError(spin: name, problem: "the snapshot's state does not decode: \(Self.describe(error))",
                                    underlying: error)
            }
            sequence = number.uint64Value
        }
        let replayed = records.filter { $0.sequence > sequence }
        var history: [HostedTransition] = []
        for (index, record) in replayed.enumerated() {
            guard record.sequence == sequence + 1 else {
                throw RecoveryError(spin: name, problem: "the journal jumps from \(sequence) to \(record.sequence)",
                                    sequence: sequence + 1)
            }
            let event: Event
            let (metadata, payload) = JournalPayload.read(record.payload)
            let origin = metadata.sub
            for (sender, position) in metadata.consumed ?? [:] { consumed[sender] = max(consumed[sender] ?? 0, position) }
            do {
                event = try JSONDecoder().decode(Event.self, from: Data(payload))
            } catch let error as DecodingError {
                throw RecoveryError(spin: name, problem: "event \(record.sequence) does not decode: \(Self.describe(error))",
                                    underlying: error, sequence: record.sequence)
            }
            state = spin.reducer.reduce(state, event)
            sequence = record.sequence
            if replayed.count - index <= keep {
                do {
                    history.append(HostedTransition(sequence: sequence, event: .raw(try traits.coding.encode(event)),
                                                    state: try Self.encode(state), endsBatch: record.endsBatch,
                                                    origin: origin, consumed: metadata.consumed ?? [:]))
                } catch {
                    throw RecoveryError(spin: name, problem: "event \(record.sequence) does not encode again: \(Self.describe(error))",
                                        underlying: error, sequence: record.sequence)
                }
            }
        }
        let recovered = (state, sequence)
        core.withLock { $0.origin = recovered }
        let json: JSONValue
        do {
            json = try Self.encode(state)
        } catch {
            throw RecoveryError(spin: name, problem: "the recovered state does not encode: \(Self.describe(error))",
                                underlying: error)
        }
        return Recovered(sequence: sequence, state: json, history: history, consumed: consumed,
                         outboxPosition: outboxPosition)
    }

    /// A snapshot's Gear positions: `"consumed": {"<sender>": N}` and `"outbox": N`
    /// (absent in snapshots written before Gear delivery was durable: none).
    private static func gearPositions(in document: [String: Any], spin: String) throws
        -> (consumed: [String: UInt64], outbox: UInt64) {
        func position(_ value: Any?) -> UInt64? {
            guard let number = value as? NSNumber, number.int64Value >= 0 else { return nil }
            return number.uint64Value
        }
        var consumed: [String: UInt64] = [:]
        if let listed = document["consumed"] {
            guard let map = listed as? [String: Any] else {
                throw RecoveryError(spin: spin, problem: "the snapshot's \"consumed\" is not an object of positions")
            }
            for (sender, value) in map {
                guard let number = position(value) else {
                    throw RecoveryError(spin: spin, problem: "the snapshot's \"consumed\".\(sender) is not a position")
                }
                consumed[sender] = number
            }
        }
        var outbox: UInt64 = 0
        if let value = document["outbox"] {
            guard let number = position(value) else {
                throw RecoveryError(spin: spin, problem: "the snapshot's \"outbox\" is not a position")
            }
            outbox = number
        }
        return (consumed, outbox)
    }

    /// One pass of `JSONValidator` (syntax, repeated keys, what the top is, where each
    /// event's members are), then the events read from it (`coding`): a
    /// `TypeTaggedEvent` member by member through its table, any other event by
    /// `JSONDecoder`. Never through `JSONSerialization`.
    func decodeEvents(json: [UInt8]) throws(APIError) -> EventBatch {
        let document: JSONValidator.Document
        switch JSONValidator.validate(json) {
        case .success(let valid): document = valid
        case .failure(let problem): throw .malformedJSON(problem.description)
        }
        do {
            guard document.kind != .scalar else {
                throw APIError.invalidEvent(spin: name, "expected an event object or an array of event objects")
            }
            let events = try traits.coding.decode(document, json)
            guard !events.isEmpty else { throw APIError.invalidEvent(spin: name, "the array holds no event") }
            if let refusesPosted = traits.refusesPosted {
                for (offset, event) in events.enumerated() {
                    guard let problem = refusesPosted(event) else { continue }
                    throw APIError.invalidEvent(spin: name, events.count > 1 ? "[\(offset)] \(problem)" : problem)
                }
            }
            return try batch(events)
        } catch let error as APIError {
            throw error
        } catch let error as DecodingError {
            throw .invalidEvent(spin: name, Self.describe(error))
        } catch {
            throw .invalidEvent(spin: name, "\(error)")
        }
    }

    /// The batch of `events`, each encoded first: an event that does not encode (its
    /// type's `encode(to:)` throws) would be applied and then neither journaled nor
    /// streamed, so it is refused here, 500 `encoding_failed`, and nothing is applied.
    /// (Not for a type that encodes whatever it decodes: `encodesBeforeApplying`.)
    private func batch(_ events: [Event]) throws(APIError) -> EventBatch {
        // Asked first: iterating a generic array costs metadata look-ups per request.
        if traits.encodesBeforeApplying {
            try encodeFirst(events)
        }
        return EventBatch(count: events.count, origin: nil, events: DecodedEvents(events), decoder: self)
    }

    /// Throws `encodingFailed` for the first of `events` that does not encode.
    private func encodeFirst(_ events: [Event]) throws(APIError) {
        for (offset, event) in events.enumerated() {
            do {
                _ = try traits.coding.encode(event)
            } catch {
                let at = events.count > 1 ? "[\(offset)] " : ""
                throw .encodingFailed(spin: name, "the event \(at)it decoded (\(Event.self)): \(Self.describe(error))")
            }
        }
    }

    /// The events of a batch this loop decoded (a batch of another Spin is a bug).
    private func events(of batch: EventBatch) -> [Event] {
        precondition(batch.decoder === self, "a batch decoded by another Spin was given to \(name)")
        return unsafeDowncast(batch.events, to: DecodedEvents<Event>.self).events
    }

    func submit(_ batch: EventBatch, inboxLimit: Int, withState: Bool,
                onApplied: @escaping @Sendable (AppliedEvent?) -> Void) -> SubmitResult {
        let events = events(of: batch)
        switch running.emit(batch: events, limit: inboxLimit, origin: batch.origin, onResult: { result in
            onApplied(result.map { self.applied($0, withState: withState) })
        }) {
        case .accepted: return .accepted
        case .inboxFull: return .inboxFull
        case .empty: preconditionFailure("decodeEvents never makes an empty batch")
        case .suspended: return .suspended
        case .stopped: return .stopped
        }
    }

    /// With the state when asked (nil when it does not encode: the transition did not
    /// either, and the feed refuses the acknowledgement).
    private func applied(_ result: BatchResult<State, Event>, withState: Bool) -> AppliedEvent {
        // Done is for good: the events the batch declined after its last applied one met
        // the state it ends in.
        var doneFrom: Int?
        if let isDone = traits.isDone, !result.declined.isEmpty, isDone(result.state) {
            // `declined` is ascending: its tail of consecutive offsets ends the batch.
            var offset = result.count
            for declined in result.declined.reversed() {
                guard declined == offset - 1 else { break }
                offset = declined
            }
            doneFrom = offset
        }
        return AppliedEvent(sequence: result.sequence, state: withState ? try? Self.encode(result.state) : nil,
                            count: result.count, ignored: result.declined, doneFrom: doneFrom)
    }

    /// The state as JSON; a read of a state that does not encode (only until the Spin is
    /// held, see `observe`) shows null rather than failing.
    func snapshot() -> (sequence: UInt64, state: JSONValue) {
        let (sequence, state) = running.snapshot
        return (sequence, (try? Self.encode(state)) ?? .null)
    }

    func observe(_ handler: @escaping @Sendable (HostedTransition) -> Void,
                 unencodable: @escaping @Sendable (String) -> Void) -> SpinSubscription {
        observe(handler, afterFeedbacks: nil, unencodable: unencodable)
    }

    func observe(_ handler: @escaping @Sendable (HostedTransition) -> Void,
                 afterFeedbacks: @escaping @Sendable () -> Void,
                 unencodable: @escaping @Sendable (String) -> Void) -> SpinSubscription {
        observe(handler, afterFeedbacks: .some(afterFeedbacks), unencodable: unencodable)
    }

    func refuse(unencodable reason: String) {
        unencodable.failed.store(true, ordering: .releasing)
        running.suspend(reason: reason)
        core.withLock { $0.refusal }?(reason)
    }

    func holdBack() {
        unencodable.failed.store(true, ordering: .releasing)
        running.suspend(reason: storageHoldReason)
    }

    var isFaulted: Bool { unencodable.failed.load(ordering: .acquiring) }

    var isStopped: Bool { core.withLock { $0.loop }?.isStopped ?? false }

    private func observe(_ handler: @escaping @Sendable (HostedTransition) -> Void,
                         afterFeedbacks: (@Sendable () -> Void)?,
                         unencodable: @escaping @Sendable (String) -> Void) -> SpinSubscription {
        let (loop, fault, encodeEvent) = (running, self.unencodable, traits.coding.encode)
        core.withLock { $0.refusal = unencodable }
        let observe: @Sendable (Transition<State, Event>) -> Void = { transition in
            if fault.failed.load(ordering: .acquiring) { return }
            let event: JSONValue, state: JSONValue
            do {
                event = .raw(try encodeEvent(transition.event))
                do {
                    state = try Self.encode(transition.state)
                } catch {
                    return refuse("the state (\(State.self)) after event \(transition.sequence)", error)
                }
            } catch {
                return refuse("event \(transition.sequence) (\(Event.self))", error)
            }
            var hosted = HostedTransition(sequence: transition.sequence, event: event, state: state,
                                          endsBatch: transition.endsBatch, origin: transition.origin)
            if let receipt = transition.gearReceipt { hosted.consumed[receipt.source] = receipt.position }
            handler(hosted)
        }
        guard let afterFeedbacks else { return loop.observe(observe) }
        // Both under one registration of the loop.
        return loop.observe(observe, afterFeedbacks: { _ in
            if fault.failed.load(ordering: .acquiring) { return }
            afterFeedbacks()
        })
        /// Suspends the Spin, naming what did not encode, and tells the host.
        @Sendable func refuse(_ what: String, _ error: any Error) {
            fault.failed.store(true, ordering: .releasing)
            let reason = "\(what) does not encode as JSON: \(Self.describe(error))"
            loop.suspend(reason: reason)
            unencodable(reason)
        }
    }

    /// A state or event as JSON text, encoded once (`.raw`) and shared by the feed, the
    /// journal and every stream.
    private static func encode<Value: Encodable>(_ value: Value) throws -> JSONValue {
        .raw(try OrderedJSONEncoder().encode(value))
    }

    // MARK: Error messages

    /// `[2].type: unknown type "jump": expected "type" to be one of "increase", ...` for a
    /// `TypeTaggedEvent`; the path and what the decoder says otherwise.
    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): missing (required)"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(typeName(type))"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): expected \(typeName(type)), found null"
        case .dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        guard !codingPath.isEmpty else { return "(the event)" }
        var text = ""
        for key in codingPath {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        default: "a value of type \(type)"
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? EncodingError, case .invalidValue(_, let context) = error {
            return (context.codingPath.isEmpty ? "" : "\(path(context.codingPath)): ") + context.debugDescription
        }
        let nsError = error as NSError
        if let detail = nsError.userInfo[NSDebugDescriptionErrorKey] as? String { return detail }
        return nsError.localizedDescription
    }
}

/// Stored data a Spin cannot be recovered from; start-up stops with it (unless
/// `storage.onCorruption` is `isolate`: then that Spin alone is `unrecoverable`).
package struct RecoveryError: Error, CustomStringConvertible {
    /// The Spin, when the problem is one Spin's.
    package let spin: String?
    /// What is wrong, its cause described as the decoder or the store says it.
    package let problem: String
    /// The error that caused it (the decoder's, the encoder's, the store's), when there
    /// is one: kept as it was thrown.
    package let underlying: (any Error)?
    /// The journal record at fault (the event that does not decode, the first one a gap
    /// leaves out), when there is one; nil for the snapshot or the store as a whole.
    package var sequence: UInt64?

    package init(spin: String?, problem: String, underlying: (any Error)? = nil, sequence: UInt64? = nil) {
        self.spin = spin
        self.problem = problem
        self.underlying = underlying
        self.sequence = sequence
    }

    package var description: String {
        spin.map { "cannot recover Spin \"\($0)\": \(problem)" } ?? problem
    }
}

/// Whether a hosted Spin's last transition did not encode (`HostedLoop.observe`): read
/// and set on the Spin's executor, cleared there by the rollback of `hold`.
private final class EncodingFault: Sendable {
    let failed = Atomic<Bool>(false)
}
