import Foundation
import SpinCore
import Synchronization
import SpinStorage
import SpinJSON
import SpinConcurrency

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
        /// Whom `observe` hands transitions, and what it calls after the feedbacks: given a
        /// replacement's transition too (`replaceState`).
        var observer: (handler: @Sendable (HostedTransition) -> Void, afterFeedbacks: (@Sendable () -> Void)?)?
    }
    /// Set when a transition did not encode, until `hold` puts the Spin back: observers
    /// are handed nothing meanwhile (see `observe`).
    private let unencodable = EncodingFault()

    /// What every Spin of a kind shares (one object per kind, not five fields per Spin).
    let traits: Traits
    var machineDefinition: JSONValue? { traits.machineDefinition }
    var storedDefinition: (any StoredDefinition)? { traits.stored }
    var definitionVersion: Int { traits.version }
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
        /// How states are written for the journal, streams and history (`stateEncoder`).
        let encodeState = HostedLoop.stateEncoder()
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
        /// Why the Spin cannot take a state its storage holds (a machine's snapshot in a
        /// state the machine file no longer defines); nil for one it can.
        let refusesStored: (@Sendable (State) -> String?)?
        /// The definition's version and what recovery uses of its older ones; nil for a
        /// definition of one version (1).
        let versions: DefinitionVersions<State, Event>?
        /// The definition as storage keeps it (what start-up stores and gives the older
        /// versions of to `versions`); nil for one storage does not keep.
        let stored: (any StoredDefinition)?
        /// The version the Spin's transitions are applied under.
        var version: Int { versions?.version ?? 1 }

        init(machineDefinition: JSONValue? = nil, schema: SpinSchema? = nil, isDone: (@Sendable (State) -> Bool)? = nil,
             keepsAwake: (@Sendable (State) -> Bool)? = nil, suspendsAt: (@Sendable (State) -> String?)? = nil,
             refusesPosted: (@Sendable (Event) -> String?)? = nil, refusesStored: (@Sendable (State) -> String?)? = nil,
             versions: DefinitionVersions<State, Event>? = nil, stored: (any StoredDefinition)? = nil) {
            self.machineDefinition = machineDefinition
            self.schema = schema ?? .of(State.self, Event.self)
            self.isDone = isDone
            self.keepsAwake = keepsAwake
            self.suspendsAt = suspendsAt
            self.refusesPosted = refusesPosted
            self.refusesStored = refusesStored
            self.versions = versions
            self.stored = stored
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

    /// The loop once made, read without the lock (every request reads it; it is made once
    /// and never replaced).
    private let made = AtomicLazyReference<SpinLoop<State, Event>>()

    /// The loop, made on first use (`prepare`), so that every read has one.
    private var running: SpinLoop<State, Event> {
        made.load() ?? loop(feedbackBudget: SpinLoop<State, Event>.defaultFeedbackBudget)
    }

    private func loop(feedbackBudget: Int) -> SpinLoop<State, Event> {
        core.withLock { core in
            if let loop = core.loop { return loop }
            let recovered = core.origin
            let made = spin.startingFrom(recovered?.state ?? spin.initialState)
                .makeLoop(label: name, sequence: recovered?.sequence ?? 0, feedbackBudget: feedbackBudget,
                          suspendingAt: traits.suspendsAt)
            core.loop = made
            return self.made.storeIfNil(made)
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

    func replaceState(with json: JSONValue, event: JSONValue, origin: String?, replacement: StateReplacement,
                      done: @escaping @Sendable (Result<UInt64, StateRefusal>?) -> Void) {
        let state: State
        let encoded: JSONValue
        do {
            state = try JSONDecoder().decode(State.self, from: Data(json.bytes))
            encoded = try traits.encodeState(state)
        } catch let error as DecodingError {
            return done(.failure(StateRefusal(reason: "it does not decode as the Spin's state: \(Self.describe(error))")))
        } catch {
            return done(.failure(StateRefusal(reason: "it does not encode again: \(Self.describe(error))")))
        }
        if let problem = traits.refusesStored?(state) {
            return done(.failure(StateRefusal(reason: "it does not fit the definition: \(problem)")))
        }
        guard let observer = core.withLock({ $0.observer }) else { return done(nil) }
        let version = Int32(traits.version)
        let fault = unencodable
        running.replaceState(with: state, record: { sequence in
            guard let sequence else { return done(nil) }
            var transition = HostedTransition(sequence: sequence, event: event, state: encoded, origin: origin)
            transition.version = version
            transition.time = HostedTransition.now()
            transition.replacement = replacement
            // A Spin going back from a refused state hands nothing on until it has.
            if !fault.failed.load(ordering: .acquiring) { observer.handler(transition) }
            done(.success(sequence))
        }, afterFeedbacks: {
            if !fault.failed.load(ordering: .acquiring) { observer.afterFeedbacks?() }
        })
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
        let (recovered, state) = try replayStored(snapshot: snapshot, records: records, migrating: true) { _, fromEnd in
            keep > 0 && fromEnd <= keep
        }
        core.withLock { $0.origin = (state, recovered.sequence) }
        return recovered
    }

    func replay(snapshot: [UInt8]?, records: [JournalRecord.Record], keeping range: ClosedRange<UInt64>) throws -> [HostedTransition] {
        try replayStored(snapshot: snapshot, records: records, migrating: false, includingStart: true) { sequence, _ in
            range.contains(sequence)
        }.recovered.history
    }

    /// What `recover` and `replay` share: the state the snapshot (or the initial state of
    /// the version the first record was applied under) and the records after it come to,
    /// each record replayed under its own version, and the transitions `keep` asks for
    /// (by sequence, and by how many records from the end it is: 1 for the last). With
    /// `migrating`, a Spin recorded under an older version is migrated to the current one
    /// at the next sequence (`Recovered.migration`). Changes nothing of the Spin.
    /// With `includingStart`, the state the replay starts from is kept too when `keep`
    /// asks for its sequence (a transition with a null event).
    private func replayStored(snapshot: [UInt8]?, records: [JournalRecord.Record], migrating: Bool, includingStart: Bool = false,
                              keep: (_ sequence: UInt64, _ fromEnd: Int) -> Bool) throws -> (recovered: Recovered, state: State) {
        let current = traits.version
        let older = traits.versions?.older
        var state = spin.initialState
        var sequence: UInt64 = 0
        // The version of the definition `state` is of.
        var version = current
        var consumed: [String: UInt64] = [:]
        var outboxPosition: UInt64 = 0
        if let snapshot {
            guard let document = try? JSONSerialization.jsonObject(with: Data(snapshot)) as? [String: Any],
                  let number = document["sequence"] as? NSNumber, let stateJSON = document["state"],
                  let stateData = try? JSONSerialization.data(withJSONObject: stateJSON, options: [.fragmentsAllowed]) else {
                throw RecoveryError(spin: name, problem: "the snapshot is not {\"sequence\":N,\"state\":..}")
            }
            (consumed, outboxPosition) = try Self.gearPositions(in: document, spin: name)
            if let recorded = document["version"] {
                guard let recorded = recorded as? NSNumber, recorded.int64Value >= 1, recorded.int64Value <= Int64(Int32.max) else {
                    throw RecoveryError(spin: name, problem: "the snapshot's \"version\" is not a version (a whole number from 1)")
                }
                version = recorded.intValue
            } else {
                version = 1
            }
            sequence = number.uint64Value
            try checkRecorded(version, current: current, at: "the snapshot (sequence \(sequence))")
            state = try decodeStored(stateData, of: version, as: "the snapshot's state", at: sequence)
        }
        let replayed = records.filter { $0.sequence > sequence }
        if snapshot == nil, let first = replayed.first {
            // A history with no snapshot begins in the initial state of the version its first event was applied under.
            version = Int(JournalPayload.read(first.payload).metadata.v ?? 1)
            try checkRecorded(version, current: current, at: "event \(first.sequence)")
            if version != current, older?.replaysThroughCurrent != true {
                guard let initial = older?.versions[version]?.initial else { throw notKept(version, at: "event \(first.sequence)") }
                state = initial
            }
        }
        var history: [HostedTransition] = []
        if includingStart, keep(sequence, replayed.count + 1) {
            var start = HostedTransition(sequence: sequence, event: .null, state: try encodeRecovered(state, at: sequence))
            start.version = Int32(version)
            history.append(start)
        }
        // When the record replayed was applied (`JournalPayload`: a record without `t` was
        // applied in the same millisecond as the one before it).
        var time: Int64 = 0
        for (index, record) in replayed.enumerated() {
            guard record.sequence == sequence + 1 else {
                throw RecoveryError(spin: name, problem: "the journal jumps from \(sequence) to \(record.sequence)",
                                    sequence: sequence + 1)
            }
            let (metadata, payload) = JournalPayload.read(record.payload)
            if let recorded = metadata.t { time = recorded }
            let recordVersion = Int(metadata.v ?? 1)
            try checkRecorded(recordVersion, current: current, at: "event \(record.sequence)")
            if metadata.restored == true {
                // A restore (or a fork's start) put this state in place: no event leads to it.
                guard recordVersion == version else {
                    throw RecoveryError(spin: name, problem: "the restore at sequence \(record.sequence) was recorded under version \(recordVersion) of its definition, and the Spin was at version \(version)",
                                        sequence: record.sequence, isolates: true)
                }
                guard let restored = JournalPayload.replacedState(in: record.payload) else {
                    throw RecoveryError(spin: name, problem: "the restore at sequence \(record.sequence) holds no state", sequence: record.sequence)
                }
                state = try decodeStored(Data(restored.bytes), of: version, as: "the state restored", at: record.sequence)
                sequence = record.sequence
                if keep(sequence, replayed.count - index) {
                    var transition = HostedTransition(sequence: sequence, event: .raw(Array(payload)), state: try encodeRecovered(state, at: sequence),
                                                      origin: metadata.sub)
                    transition.version = Int32(version)
                    transition.time = time
                    transition.replacement = .replayed
                    history.append(transition)
                }
                continue
            }
            if let from = metadata.migrated {
                // The Spin was migrated here, by the server: the same upgrade again.
                guard Int(from) == version, recordVersion > version else {
                    throw RecoveryError(spin: name, problem: "the migration at sequence \(record.sequence) goes from version \(from) to \(recordVersion), and the Spin was at version \(version)",
                                        sequence: record.sequence, isolates: true)
                }
                state = try upgrade(state, from: version, to: recordVersion, older: older)
                version = recordVersion
                sequence = record.sequence
                if keep(sequence, replayed.count - index) {
                    var transition = HostedTransition(sequence: sequence, event: .raw(Array(payload)), state: try encodeRecovered(state, at: sequence))
                    transition.version = Int32(version)
                    transition.migratedFrom = from
                    transition.time = time
                    history.append(transition)
                }
                continue
            }
            guard recordVersion == version else {
                throw RecoveryError(spin: name, problem: "event \(record.sequence) was applied under version \(recordVersion) of its definition, and the Spin was at version \(version) with no migration between",
                                    sequence: record.sequence, isolates: true)
            }
            let origin = metadata.sub
            for (sender, position) in metadata.consumed ?? [:] { consumed[sender] = max(consumed[sender] ?? 0, position) }
            let event: Event
            do {
                if let stored = (Event.self as? any StoredEventDecoding.Type)?.decodeStored(payload) as? Event {
                    event = stored
                } else {
                    event = try JSONDecoder().decode(Event.self, from: Data(payload))
                }
            } catch let error as DecodingError {
                let versions = version == current ? "" : " as an event of version \(current) (it was applied under version \(version))"
                throw RecoveryError(spin: name, problem: "event \(record.sequence) does not decode\(versions): \(Self.describe(error))",
                                    underlying: error, sequence: record.sequence, isolates: version != current)
            }
            if version == current || older?.replaysThroughCurrent == true {
                state = spin.reducer.reduce(state, event)
            } else {
                guard let reduce = older?.versions[version]?.reduce else { throw notKept(version, at: "event \(record.sequence)") }
                state = reduce(state, event)
            }
            sequence = record.sequence
            if keep(sequence, replayed.count - index) {
                do {
                    // The event's JSON as journaled: what its type's encoding wrote when it was applied.
                    var transition = HostedTransition(sequence: sequence, event: .raw(Array(payload)),
                                                      state: try traits.encodeState(state), endsBatch: record.endsBatch,
                                                      origin: origin, consumed: metadata.consumed ?? [:])
                    transition.version = Int32(version)
                    transition.time = time
                    history.append(transition)
                } catch {
                    throw RecoveryError(spin: name, problem: "the state after event \(record.sequence) does not encode: \(Self.describe(error))",
                                        underlying: error, sequence: record.sequence)
                }
            }
        }
        var migration: HostedTransition?
        if migrating, version < current {
            // Recorded under an older version: migrated now, at the next sequence, which the
            // journal writes before the Spin runs (history only grows).
            let from = version
            state = try upgrade(state, from: from, to: current, older: older)
            sequence += 1
            let event = JSONValue.object([("type", .string(Self.migratedEventType)), ("from", .number(String(from))),
                                          ("to", .number(String(current)))])
            var transition = HostedTransition(sequence: sequence, event: event, state: try encodeRecovered(state, at: sequence))
            transition.version = Int32(current)
            transition.migratedFrom = Int32(from)
            transition.time = HostedTransition.now()
            if keep(sequence, 0) { history.append(transition) }
            migration = transition
        }
        let json = migrating ? try encodeRecovered(state, at: nil) : .null
        return (Recovered(sequence: sequence, state: json, history: history, consumed: consumed,
                          outboxPosition: outboxPosition, migration: migration), state)
    }

    /// A stored state (`what`, at `sequence`) of `version` of the definition, as a state of
    /// the one this server runs: migrated as JSON first when older, checked against the
    /// definition when of the current one. Throws naming what and where.
    private func decodeStored(_ data: Data, of version: Int, as what: String, at sequence: UInt64) throws -> State {
        let current = traits.version
        var json = data
        if version < current, let migrate = traits.versions?.older.migrateSnapshot {
            do {
                json = try migrate(data, version)
            } catch {
                throw RecoveryError(spin: name, problem: "\(what) (sequence \(sequence)) of version \(version) cannot be migrated to version \(current)\(storedNameNote): \(error)",
                                    underlying: error, isolates: true)
            }
        }
        let state: State
        do {
            state = try JSONDecoder().decode(State.self, from: json)
        } catch let error as DecodingError {
            let versions = version == current ? "" : " as version \(current) (it is of version \(version))"
            throw RecoveryError(spin: name, problem: "\(what) does not decode\(versions): \(Self.describe(error))",
                                underlying: error, isolates: version != current)
        }
        if version == current, let problem = traits.refusesStored?(state) {
            throw RecoveryError(spin: name, problem: "\(what) (sequence \(sequence)) does not fit its definition: \(problem)",
                                isolates: true)
        }
        return state
    }

    /// The type of the event of a migration's transition.
    static var migratedEventType: String { "spin.migrated" }

    /// Throws when `version`, recorded at `place`, is newer than the one this server runs.
    private func checkRecorded(_ version: Int, current: Int, at place: String) throws {
        guard version > current else { return }
        throw RecoveryError(spin: name, problem: "\(place) was recorded under version \(version) of its definition\(storedNameNote), newer than the version this server runs (\(current)): run the newer definition",
                            isolates: true)
    }

    private var storedNameNote: String { traits.stored.map { " (\($0.storedName))" } ?? "" }

    /// The error for a version storage keeps no copy of.
    private func notKept(_ version: Int, at place: String) -> RecoveryError {
        RecoveryError(spin: name, problem: "\(place) was applied under version \(version) of its definition\(storedNameNote), of which the storage keeps no copy: start the server once with that version's file, or remove the Spin",
                      isolates: true)
    }

    /// `state`, of version `from`, as one of version `to`; throws naming both.
    private func upgrade(_ state: State, from: Int, to: Int,
                         older: DefinitionVersions<State, Event>.Older?) throws -> State {
        guard let older else {
            throw RecoveryError(spin: name, problem: "recorded under version \(from) of its definition, which has no versions (\(to))", isolates: true)
        }
        // No older code: the snapshot was migrated as JSON, the events replayed through this one.
        if older.replaysThroughCurrent { return state }
        do {
            return try older.upgrade(state, from, to)
        } catch {
            throw RecoveryError(spin: name, problem: "cannot be migrated\(storedNameNote): \(error)", underlying: error, isolates: true)
        }
    }

    /// A recovered state's JSON; throws naming the sequence (nil: the last).
    private func encodeRecovered(_ state: State, at sequence: UInt64?) throws -> JSONValue {
        do {
            return try traits.encodeState(state)
        } catch {
            let which = sequence.map { "the state at sequence \($0)" } ?? "the recovered state"
            throw RecoveryError(spin: name, problem: "\(which) does not encode: \(Self.describe(error))", underlying: error)
        }
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
        return AppliedEvent(sequence: result.sequence, state: withState ? try? traits.encodeState(result.state) : nil,
                            count: result.count, ignored: result.declined, doneFrom: doneFrom)
    }

    /// The state as JSON; a read of a state that does not encode (only until the Spin is
    /// held, see `observe`) shows null rather than failing.
    func snapshot() -> (sequence: UInt64, state: JSONValue) {
        let (sequence, state) = running.snapshot
        return (sequence, (try? traits.encodeState(state)) ?? .null)
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
        let (loop, fault, encodeEvent, version) = (running, self.unencodable, traits.coding.encode, Int32(traits.version))
        let encodeState = traits.encodeState
        core.withLock {
            $0.refusal = unencodable
            $0.observer = (handler, afterFeedbacks)
        }
        let observe: @Sendable (Transition<State, Event>) -> Void = { transition in
            if fault.failed.load(ordering: .acquiring) { return }
            let event: JSONValue, state: JSONValue
            do {
                event = .raw(try encodeEvent(transition.event))
                do {
                    state = try encodeState(transition.state)
                } catch {
                    return refuse("the state (\(State.self)) after event \(transition.sequence)", error)
                }
            } catch {
                return refuse("event \(transition.sequence) (\(Event.self))", error)
            }
            var hosted = HostedTransition(sequence: transition.sequence, event: event, state: state,
                                          endsBatch: transition.endsBatch, origin: transition.origin)
            if let receipt = transition.gearReceipt { hosted.consumed[receipt.source] = receipt.position }
            hosted.version = version
            hosted.time = HostedTransition.now()
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

    /// How a state becomes JSON text, encoded once (`.raw`) and shared by the feed, the
    /// journal and every stream: written by the state itself when its type is
    /// `JSONWritable` (a machine's), else through `OrderedJSONEncoder`. Chosen once per
    /// kind (`Traits.encodeState`): no cast per state.
    static func stateEncoder() -> @Sendable (State) throws -> JSONValue {
        guard let writable = State.self as? any JSONWritable.Type else {
            return { state in .raw(try OrderedJSONEncoder().encode(state)) }
        }
        return writer(writable)
    }

    private static func writer<Writable: JSONWritable>(_: Writable.Type) -> @Sendable (State) throws -> JSONValue {
        // `State` is `Writable`: the cast changes nothing but the static type.
        { state in .raw(try OrderedJSONEncoder().encode(writing: unsafeBitCast(state, to: Writable.self))) }
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
    /// Whether the problem is the Spin's definition, not its storage: a version newer
    /// than the server's, one it keeps no copy of, a state no migration maps. That Spin
    /// alone is then `unrecoverable` and the others run, whatever `storage.onCorruption` says.
    package var isolates: Bool

    package init(spin: String?, problem: String, underlying: (any Error)? = nil, sequence: UInt64? = nil,
                 isolates: Bool = false) {
        self.spin = spin
        self.problem = problem
        self.underlying = underlying
        self.sequence = sequence
        self.isolates = isolates
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
