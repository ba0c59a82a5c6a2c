import Foundation
import SpinCore
import SpinMachines
import SpinWire
import SpinJSON
import SpinConcurrency

/// The named Spins and Gears a server hosts.
///
/// ```swift
/// let host = SpinHost()
/// try host.host(Counter.spin(), named: "counter")
/// let example = AuthRouting()
/// try host.host(example.feature, named: "feature")
/// try host.host(example.router, named: "router")
/// try host.host(example.gear, named: "auth", attachedTo: ["feature", "router"])
/// ```
///
/// Register everything, then `start()`: every loop is made first (so their Gear
/// subscriptions exist) and only then started, so no Gear event is lost at start-up.
public final class SpinHost: Sendable {
    private struct Registry {
        /// In the order they were hosted.
        var spins: [any HostedSpin] = []
        /// Where each Spin is in `spins`, by name: a request finds its Spin in constant
        /// time, however many are hosted.
        var index: [String: Int] = [:]
        /// Every name, sorted (UTF-8 byte order), made on the first listing: names only
        /// change before `start()`.
        var sortedNames: [String]?
        var gears: [any HostedGear] = []
        /// Where each Gear is in `gears`, by name.
        var gearIndex: [String: Int] = [:]
        var started = false
        var stopped = false
    }

    private let registry = Protected(Registry())
    private let madeBy = Protected<SpinFactory?>(nil)

    public init() {}

    /// What makes Spins of the configured kinds while the host runs (`SpinKindRegistry.makeHost`
    /// sets it); nil for a host built Spin by Spin.
    package var factory: SpinFactory? {
        get { madeBy.withLock { $0 } }
        set { madeBy.withLock { $0 = newValue } }
    }

    /// Hosts `spin` under `name` (letters, digits, `-`, `_` and `.`; unique). A
    /// `TypeTaggedEvent` whose table does not round-trip is refused (`checkEvents`).
    /// - Parameters:
    ///   - kind: what `GET /v1/spins` says made it; `swift` unless given.
    ///   - schema: the JSON Schemas of its events and state; nil takes what the types
    ///     describe (`SpinSchema.of`).
    public func host<State: Codable & Sendable, Event: Codable & Sendable>(
        _ spin: Spin<State, Event>, named name: String, kind: String = "swift", schema: SpinSchema? = nil
    ) throws(HostingError) {
        try Self.checkEvents(Event.self)
        try add(HostedLoop(name: name, kind: kind, spin: spin, schema: schema))
    }

    /// Checks that every event of `type` that can be made round-trips through the
    /// server's JSON coders, when it is a `TypeTaggedEvent` (see
    /// `TypeTaggedEvent.checkEventTypes`): hosting runs it, and a unit test can too,
    /// `try SpinHost.checkEvents(MyEvent.self)`. Other types are taken as they are (each
    /// event is encoded before it is applied: one that does not encode is refused).
    /// - Throws: `HostingError.eventTypes`, naming the type and the entry at fault.
    public static func checkEvents<Event: Codable>(_ type: Event.Type) throws(HostingError) {
        // (`Sendable` is a marker protocol: the cast succeeds for every `TypeTaggedEvent`.)
        guard let tagged = type as? any (TypeTaggedEvent & Sendable).Type else { return }
        try check(tagged)
    }

    /// Through `Codable` (`JSONDecoder`, `OrderedJSONEncoder`), then through the coders a
    /// hosted Spin uses (`HostedEventCoding`: straight through the table).
    private static func check<Tagged: TypeTaggedEvent & Sendable>(_: Tagged.Type) throws(HostingError) {
        let coding = HostedEventCoding<Tagged>()
        do {
            try Tagged.checkEventTypes(encode: { try OrderedJSONEncoder().encode($0) },
                                       decode: { try JSONDecoder().decode(Tagged.self, from: Data($0)) })
            try Tagged.checkEventTypes(encode: coding.encode, decode: { bytes in
                let document = try JSONValidator.validate(bytes).get()
                guard document.kind == .object, let event = try coding.decode(document, bytes).first else {
                    throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not one JSON object"))
                }
                return event
            })
        } catch {
            throw .eventTypes(error)
        }
    }

    /// Why a machine's Spin is suspended when an event set off more microsteps than
    /// `MachineDefinition.microstepLimit` (its `always` transitions kept being enabled).
    package static var unsettledReason: String {
        "an event set off more than \(MachineDefinition.microstepLimit) microsteps (\"always\" transitions that stay enabled); the state is where the machine stopped"
    }

    /// Why a machine's Spin is suspended when its state holds more delayed `raise` events
    /// than `MachineDefinition.scheduledLimit`.
    package static var overScheduledReason: String {
        "the state holds more than \(MachineDefinition.scheduledLimit) delayed events (\"raise\" with a \"delay\") waiting to be sent; the state is where the machine stopped"
    }

    /// Hosts the Spin of a declarative machine under `name`, kind `machine`;
    /// `GET /v1/spins/{name}` then shows the machine's JSON definition too (the dashboard
    /// draws it as a state chart).
    /// - Parameter gears: the Gears its `gears` section names, as for `MachineDefinition.spin(gears:)`.
    public func host(machine: MachineDefinition, gears: [String: Gear<MachineEvent>] = [:],
                     named name: String) throws(HostingError) {
        try add(Self.machineLoop(machine, gears: gears, named: name, kind: SpinServerConfiguration.machineKind,
                                 traits: Self.machineTraits(machine, storedAs: "spin.\(name)")))
    }

    /// The hosted Spin of a declarative machine (`host(machine:gears:named:)`), under
    /// `kind`: `machine`, or the configured kind a Spin made at run time is of.
    /// - Parameter traits: what every Spin of the machine shares (`machineTraits`), when
    ///   the caller has it already (a kind's Spins share one); made from the definition
    ///   otherwise.
    static func machineLoop(_ machine: MachineDefinition, gears: [String: Gear<MachineEvent>], named name: String,
                            kind: String, traits: MachineTraits) -> any HostedSpin {
        HostedLoop(name: name, kind: kind, spin: machine.spin(gears: gears), traits: traits)
    }

    typealias MachineTraits = HostedLoop<MachineState, MachineEvent>.Traits

    /// What every Spin of `machine` shares: its definition as a Spin shows it
    /// (`machineDocument(of:)`), its schemas, when it is done, awaits time or must
    /// suspend, and which posted events it refuses; and its versions, kept in storage
    /// under `storedName` (`StoredDefinition`).
    static func machineTraits(_ machine: MachineDefinition, storedAs storedName: String) -> MachineTraits {
        let versions = MachineVersions(storedName: storedName, machine: machine)
        return MachineTraits(machineDefinition: machineDocument(of: machine).json,
                      schema: SpinSchema(event: machine.eventSchema, state: machine.stateSchema),
                      isDone: { machine.isDone($0) },
                      keepsAwake: { machine.awaitsTime(in: $0) },
                      suspendsAt: { state in
                          if state.step.unsettled { return Self.unsettledReason }
                          return state.step.overScheduled ? Self.overScheduledReason : nil
                      },
                      refusesPosted: { event in
                          guard event.type.hasPrefix(MachineEvent.reservedPrefix) else { return nil }
                          return "event type \"\(event.type)\" is the machine's own: types that start with \"\(MachineEvent.reservedPrefix)\" are sent by the machine itself (its timers, delayed raises, completion), not by clients"
                      },
                      refusesStored: { machine.problem(taking: $0) },
                      versions: versions.versions, stored: versions)
    }

    /// Hosts the Gear `gear` under `name`, so that the server lists it and streams its
    /// traffic. `spins` names the hosted Spins whose feedbacks attach to it: host them
    /// first (a name not hosted is `HostingError.unknownSpin`).
    public func host<GearEvent: Codable & Sendable>(
        _ gear: Gear<GearEvent>, named name: String, attachedTo spins: [String]
    ) throws(HostingError) {
        try host(gear, named: name, attachedTo: spins, members: [])
    }

    /// Hosts `gear` with the other Gear objects of its name (`members`: Gears of other
    /// event types joined to it, a JSON bus, by `GearBridge`s), which a server routes with it.
    package func host<GearEvent: Codable & Sendable>(
        _ gear: Gear<GearEvent>, named name: String, attachedTo spins: [String], members: [any GearPort]
    ) throws(HostingError) {
        try Self.validate(name)
        try Self.checkEvents(GearEvent.self)
        try registry.withLock { registry throws(HostingError) in
            guard !registry.started else { throw .alreadyStarted }
            guard registry.gearIndex[name] == nil else { throw .duplicateName(name) }
            for spin in spins where registry.index[spin] == nil {
                throw .unknownSpin(gear: name, spin: spin)
            }
            registry.gearIndex[name] = registry.gears.count
            registry.gears.append(HostedGearOf(name: name, attached: spins, gear: gear, members: members))
        }
    }

    /// A machine's definition as `GET /v1/spins/{name}` shows it (`json`: nil when its
    /// text is not strictly valid JSON).
    struct MachineDocument: Sendable {
        let json: JSONValue?
    }

    /// The definition's text, compacted, for `machineDocument`: the file parsed, but
    /// Foundation lets through what RFC 8259 does not (a byte order mark): only a strictly
    /// valid text goes out verbatim.
    static func machineDocument(of machine: MachineDefinition) -> MachineDocument {
        MachineDocument(json: JSONValidator.firstProblem(in: machine.source) == nil ? .raw(JSONValue.compacted(machine.source)) : nil)
    }

    package func add(_ spin: any HostedSpin) throws(HostingError) {
        try Self.validate(spin.name)
        try registry.withLock { registry throws(HostingError) in
            guard !registry.started else { throw .alreadyStarted }
            guard registry.index[spin.name] == nil else { throw .duplicateName(spin.name) }
            registry.index[spin.name] = registry.spins.count
            registry.spins.append(spin)
            registry.sortedNames = nil
        }
    }

    /// Makes every loop, then starts them all. Idempotent.
    /// - Parameter feedbackBudget: each Spin's runaway guard (`SpinLoop.feedbackBudget`),
    ///   for loops not made yet (see `prepare(feedbackBudget:)`).
    public func start(feedbackBudget: Int = SpinServerConfiguration.Limits().feedbackBudget) {
        let spins = registry.withLock { registry -> [any HostedSpin] in
            guard !registry.started else { return [] }
            registry.started = true
            return registry.spins
        }
        for spin in spins { spin.prepare(feedbackBudget: feedbackBudget) }
        for spin in spins { spin.start() }
    }

    /// Makes every Spin's loop with `feedbackBudget`, without starting it: a server does
    /// this after recovery and before it observes the Spins (an observation makes the loop).
    package func prepare(feedbackBudget: Int) {
        for spin in spins { spin.prepare(feedbackBudget: feedbackBudget) }
    }

    /// Marks the host started without starting any loop: a cluster node starts each Spin
    /// when it gets the Spin's lease (`replace(named:)`, then the Spin's own `start`).
    package func startWithoutLoops() {
        registry.withLock { $0.started = true }
    }

    /// Puts a fresh instance of Spin `name` (`HostedSpin.fresh`) in place of the one
    /// hosted, and returns it; nil if no Spin has that name.
    @discardableResult
    package func replace(named name: String) -> (any HostedSpin)? {
        registry.withLock { registry in
            guard let index = registry.index[name] else { return nil }
            let fresh = registry.spins[index].fresh()
            registry.spins[index] = fresh
            return fresh
        }
    }

    /// Puts `spin` in place of the Spin of its name (one falls asleep or wakes); false when
    /// no Spin has the name.
    @discardableResult
    package func replace(with spin: any HostedSpin) -> Bool {
        registry.withLock { registry in
            guard let index = registry.index[spin.name] else { return false }
            registry.spins[index] = spin
            return true
        }
    }

    /// Puts an `UnrecoverableSpin` in place of Spin `name` (before `prepare`): it is
    /// listed and reported, and runs nothing.
    package func isolate(named name: String, _ unrecoverable: Unrecoverable) {
        registry.withLock { registry in
            guard let index = registry.index[name] else { return }
            registry.spins[index] = UnrecoverableSpin(registry.spins[index], unrecoverable)
        }
    }

    /// Stops every loop. Idempotent.
    public func stop() {
        let spins = registry.withLock { registry -> [any HostedSpin] in
            guard !registry.stopped else { return [] }
            registry.stopped = true
            return registry.spins
        }
        for spin in spins { spin.stop() }
    }

    /// True once every Spin is started and until they stop (`GET /readyz`).
    public var isReady: Bool {
        registry.withLock { $0.started && !$0.stopped }
    }

    package var spins: [any HostedSpin] { registry.withLock { $0.spins } }
    package var gears: [any HostedGear] { registry.withLock { $0.gears } }

    package func spin(named name: String) -> (any HostedSpin)? {
        registry.withLock { registry in registry.index[name].map { registry.spins[$0] } }
    }

    /// Up to `limit` Spins in name order (UTF-8 byte order), after `after` (when given) and
    /// starting with `prefix`, that `include` takes; and whether more of them follow. Costs
    /// a binary search and the page: the Spins not listed are not looked at, except those
    /// `include` refuses on the way.
    package func spins(prefix: String, after: String?, limit: Int,
                       where include: (String) -> Bool = { _ in true }) -> (page: [any HostedSpin], more: Bool) {
        let names = registry.withLock { registry -> [String] in
            if let sorted = registry.sortedNames { return sorted }
            let sorted = registry.spins.map(\.name).sorted(by: Self.byteOrder)
            registry.sortedNames = sorted
            return sorted
        }
        let start = max(after.map { Self.firstIndex(in: names, above: $0) } ?? 0,
                        Self.firstIndex(in: names, notBelow: prefix))
        var page: [any HostedSpin] = []
        var index = start
        while index < names.count, names[index].utf8.starts(with: prefix.utf8) {
            let name = names[index]
            index += 1
            guard include(name), let spin = spin(named: name) else { continue }
            if page.count == limit { return (page, true) }
            page.append(spin)
        }
        return (page, false)
    }

    /// Names compare by their UTF-8 bytes, as clients in any language can reproduce.
    static func byteOrder(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    /// The index of the first name not before `bound` (`notBelow`) or after it (`above`).
    private static func firstIndex(in names: [String], notBelow bound: String) -> Int {
        partition(names) { byteOrder($0, bound) }
    }

    private static func firstIndex(in names: [String], above bound: String) -> Int {
        partition(names) { !byteOrder(bound, $0) }
    }

    /// The first index whose name `isBefore` is false for (names sorted, `isBefore` true
    /// for a prefix of them).
    private static func partition(_ names: [String], _ isBefore: (String) -> Bool) -> Int {
        var low = 0, high = names.count
        while low < high {
            let middle = (low + high) / 2
            if isBefore(names[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    package func gear(named name: String) -> (any HostedGear)? {
        registry.withLock { registry in registry.gearIndex[name].map { registry.gears[$0] } }
    }

    // MARK: Spins made and removed while the host runs

    /// How many Spins are hosted.
    package var count: Int { registry.withLock { $0.spins.count } }

    /// Hosts `spin`, made while the host runs (`PUT /v1/spins/{name}`): listed and found at
    /// once; the caller recovers, observes and starts it. The sorted names take it in place
    /// (a binary search and a move of the names after it).
    package func insert(_ spin: any HostedSpin) throws(HostingError) {
        try Self.validate(spin.name)
        try registry.withLock { registry throws(HostingError) in
            guard registry.index[spin.name] == nil else { throw .duplicateName(spin.name) }
            registry.index[spin.name] = registry.spins.count
            registry.spins.append(spin)
            if registry.sortedNames != nil {
                let at = Self.firstIndex(in: registry.sortedNames!, notBelow: spin.name)
                registry.sortedNames!.insert(spin.name, at: at)
            }
        }
    }

    /// Stops hosting Spin `name` (deleted): it is no longer listed or found. The last Spin
    /// takes its place in hosting order. Returns it.
    @discardableResult
    package func remove(named name: String) -> (any HostedSpin)? {
        registry.withLock { registry in
            guard let index = registry.index.removeValue(forKey: name) else { return nil }
            let removed = registry.spins[index]
            let last = registry.spins.removeLast()
            if index < registry.spins.count {
                registry.spins[index] = last
                registry.index[last.name] = index
            }
            if registry.sortedNames != nil {
                let at = Self.firstIndex(in: registry.sortedNames!, notBelow: name)
                if at < registry.sortedNames!.count, registry.sortedNames![at] == name { registry.sortedNames!.remove(at: at) }
            }
            return removed
        }
    }

    /// Hosts `gear`, made while the host runs (for a Spin made then).
    package func insert(gear: any HostedGear) {
        registry.withLock { registry in
            guard registry.gearIndex[gear.name] == nil else { return }
            registry.gearIndex[gear.name] = registry.gears.count
            registry.gears.append(gear)
        }
    }

    /// Stops hosting the Gear `name` (its last Spin was deleted).
    package func removeGear(named name: String) {
        registry.withLock { registry in
            guard let index = registry.gearIndex.removeValue(forKey: name) else { return }
            let last = registry.gears.removeLast()
            if index < registry.gears.count {
                registry.gears[index] = last
                registry.gearIndex[last.name] = index
            }
        }
    }

    /// Names appear in URL paths: keep them to characters that need no escaping.
    static func validate(_ name: String) throws(HostingError) {
        guard !name.isEmpty, isNameText(name) else { throw .invalidName(name) }
    }

    /// Whether `text` has at most 64 bytes, each a letter, digit, `-`, `_` or `.` (what a
    /// name is made of; a name is not empty too).
    static func isNameText(_ text: String) -> Bool {
        text.utf8.count <= 64 && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
    }
}

/// Why a Spin or Gear could not be hosted.
public enum HostingError: Error, Equatable, CustomStringConvertible {
    case duplicateName(String)
    case invalidName(String)
    case alreadyStarted
    /// A Gear attached to a Spin that is not hosted.
    case unknownSpin(gear: String, spin: String)
    /// A config entry's kind that is not in the `SpinKindRegistry`.
    case unknownKind(String, known: [String])
    /// A kind asked for the Gear of an entry that names none.
    case noGear(spin: String)
    /// Two kinds asked for the same Gear with different event types.
    /// A configured Gear that no Spin's kind asked for.
    case gearNotMade(String)
    /// A `TypeTaggedEvent` whose `eventTypes` does not round-trip (`SpinHost.checkEvents`).
    case eventTypes(EventTypeError)

    public var description: String {
        switch self {
        case .duplicateName(let name): "\"\(name)\" is hosted twice"
        case .invalidName(let name): "\"\(name)\" is not a valid name: use 1 to 64 letters, digits, '-', '_' or '.'"
        case .alreadyStarted: "the host is started: register every Spin and Gear before start()"
        case .unknownSpin(let gear, let spin): "Gear \"\(gear)\" is attached to \"\(spin)\", which is not hosted (host the Spins before their Gears)"
        case .unknownKind(let kind, let known):
            "kind \"\(kind)\" is not registered (registered: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"
        case .noGear(let spin): "Spin \"\(spin)\" names no Gear: register its kind with gear: .required"
        case .gearNotMade(let gear): "no Spin's kind asked for Gear \"\(gear)\" (context.gear(of:))"
        case .eventTypes(let error): "the eventTypes of \(error) (they must round-trip: see TypeTaggedEvent)"
        }
    }
}
