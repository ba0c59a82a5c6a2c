import Foundation
import Logging
import SpinCore
import SpinMachines

/// The Spin kinds a configuration may name, and how to make each: what turns the
/// `spins` and `gears` of a config file into a `SpinHost`.
///
/// ```swift
/// var kinds = SpinKindRegistry()
/// kinds.register("todo") { context in try context.host(Todo.spin()) }
/// kinds.register("stats", gear: .required) { context in
///     try context.host(Stats.spin(gear: context.gear(of: TodoGearEvent.self)))
/// }
/// let loaded = try SpinServerConfiguration.load(flags: flags, environment: environment, kinds: kinds.kinds)
/// let host = try kinds.makeHost(loaded.configuration)
/// ```
///
/// Entries with a `machine` file (kind `machine`) need no registration: their definition
/// was loaded and validated with the configuration.
///
/// **Gears.** One Gear is hosted per configured name. Spins whose Gear events are one
/// Swift type share a `Gear<ThatType>`. When a name carries more than one type — JSON
/// machines (`MachineEvent`s) beside Swift Spins, or two Swift kinds with different event
/// types — the hosted Gear is a bus of JSON events (`Gear<MachineEvent>`) and each type
/// gets its own Gear joined to it by a `GearBridge`: an event crosses in its JSON form
/// (`{"type":"authorizationIssueHappened"}`), and reaches the Spins whose type can decode
/// it.
public struct SpinKindRegistry: Sendable {
    /// Whether a kind's Spins attach to a Gear (their config entry then names one).
    public typealias GearUse = SpinServerConfiguration.SpinKinds.GearUse

    private struct Kind: Sendable {
        let gearUse: GearUse
        let make: @Sendable (SpinKindContext) throws -> Void
        /// Set when the kind was registered with a version or a `migrate`.
        let versions: SwiftKindVersions?
    }

    private var table: [String: Kind] = [:]

    /// No kinds; declarative machines are hosted all the same.
    public init() {}

    /// Registers `kind` (a second registration of the same name replaces the first).
    /// - Parameters:
    ///   - gear: `.required` when the kind's Spins attach to a Gear: loading then wants a
    ///     `gear` on each of its config entries, and `context.gear(of:)` gives it.
    ///   - version: the version of the kind's code (from 1): raise it when the state's
    ///     JSON changes shape, with `migrate`. Events are journaled with it.
    ///   - migrate: a snapshot's state JSON of an older version (the `Int`) as this
    ///     version's; throwing leaves that Spin unrecoverable, saying why. A server keeps
    ///     no older code: a Spin recorded under an older version replays its events after
    ///     the snapshot through the current reducer (each must decode as the current
    ///     `Event`, or the Spin is unrecoverable, naming the event), and is then marked
    ///     migrated (`{"type":"spin.migrated","from":1,"to":2}`).
    ///   - make: hosts one Spin for a config entry, with `context.host(_:)`.
    public mutating func register(_ kind: String, gear: GearUse = .none, version: Int = 1,
                                  migrate: (@Sendable (_ state: Data, _ fromVersion: Int) throws -> Data)? = nil,
                                  _ make: @escaping @Sendable (SpinKindContext) throws -> Void) {
        precondition(kind != SpinServerConfiguration.machineKind, "kind \"machine\" is the declarative machines'")
        precondition(version >= 1 && version <= Int(Int32.max), "a kind's version is a whole number from 1")
        let versions = version > 1 || migrate != nil ? SwiftKindVersions(kind: kind, version: version, migrate: migrate) : nil
        table[kind] = Kind(gearUse: gear, make: make, versions: versions)
    }

    /// What configuration loading checks `kind` and `gear` against.
    public var kinds: SpinServerConfiguration.SpinKinds {
        SpinServerConfiguration.SpinKinds(table.mapValues(\.gearUse))
    }

    /// Hosts every configured Spin and Gear (not started): each entry by its kind's
    /// `make`, each machine from its definition, then each Gear attached to the Spins that
    /// name it.
    /// - Throws: `HostingError` for a kind not registered (a configuration not loaded with
    ///   `kinds`) or a Gear no Spin made; and what a kind's `make` throws.
    public func makeHost(_ configuration: SpinServerConfiguration) throws -> SpinHost {
        let host = SpinHost()
        let workshop = SpinKindContext.Workshop()
        for gear in configuration.gears
        where configuration.spins.contains(where: { $0.machine != nil && $0.attachedGears.contains(gear.name) }) {
            workshop.gears[gear.name] = .init(Gear<MachineEvent>())
        }
        defer {
            host.factory = SpinFactory(table: table.mapValues { $0.make }, versions: table.compactMapValues(\.versions),
                                       kinds: configuration.kinds,
                                       configured: configuration.spins.map(\.name), storage: configuration.storage,
                                       workshop: workshop)
        }
        for entry in configuration.spins {
            if let machine = entry.machine {
                var gears: [String: Gear<MachineEvent>] = [:]
                for name in entry.attachedGears { gears[name] = workshop.gear(named: name, of: MachineEvent.self) }
                try host.host(machine: machine.definition, gears: gears, named: entry.name)
                continue
            }
            guard let kind = table[entry.kind] else {
                throw HostingError.unknownKind(entry.kind, known: table.keys.sorted())
            }
            try kind.make(SpinKindContext(entry: entry, storage: configuration.storage, workshop: workshop,
                                          versions: kind.versions) { spin throws(HostingError) in
                try host.add(spin)
            })
        }
        // A Gear of a kind is a bus of JSON events from the start: Spins of any kind, made
        // at any time, join it (`SpinFactory`).
        let kindGears = Set(configuration.kinds.flatMap(\.fixedGears))
        for name in kindGears.sorted() { _ = workshop.gear(named: name, of: MachineEvent.self) }
        let hosted = configuration.gears.map(\.name) + kindGears.subtracting(configuration.gears.map(\.name)).sorted()
        for name in hosted {
            let gear = SpinServerConfiguration.GearEntry(name: name)
            guard let made = workshop.gears[gear.name] else { throw HostingError.gearNotMade(gear.name) }
            let attached = configuration.spins.filter { $0.attachedGears.contains(gear.name) }.map(\.name)
            let members = (workshop.bridged[gear.name] ?? [:]).values.map(\.port)
            try made.hostOn(host, gear.name, attached, members)
        }
        return host
    }
}

/// What a kind's `make` gets for one config entry: its name, its Gear, where the server
/// keeps its Spins, a logger, and where to host.
public final class SpinKindContext {
    /// The Gears made so far and the values shared per Gear, for one `makeHost` and then
    /// for the Spins made at run time (`SpinFactory`, which locks it).
    final class Workshop {
        /// A Gear made for a name, typed by its events: one object per Gear (a Gear per
        /// user or device is one per Spin), its port made when a JSON bus joins it.
        final class MadeGear {
            private let typed: any TypedGear

            init<GearEvent: Codable & Sendable>(_ gear: Gear<GearEvent>) {
                self.typed = gear
            }

            /// The Gear (a `Gear<eventType>`).
            var gear: Any { typed }
            var eventType: Any.Type { typed.eventType }

            func hostOn(_ host: SpinHost, _ name: String, _ spins: [String], _ members: [any GearPort]) throws(HostingError) {
                try typed.host(on: host, named: name, attachedTo: spins, members: members)
            }

            /// Joins this Gear to a JSON bus (`GearBridge`).
            func bridge(_ bus: Gear<MachineEvent>) { typed.bridge(to: bus) }

            /// This Gear as a member of a JSON bus's hosted Gear (routed with it).
            var port: any GearPort { typed.port }
        }

        /// The Gear hosted under each name.
        var gears: [String: MadeGear] = [:]
        /// Per name, the Gears of each event type joined to its JSON bus, with their ports.
        var bridged: [String: [ObjectIdentifier: (gear: Any, port: any GearPort)]] = [:]
        /// The values shared on each Gear name ("" for Spins without one), by type.
        var shared: [String: [ObjectIdentifier: Any]] = [:]

        /// The one `Gear<GearEvent>` of the Gear `name`: the hosted one while every Spin on
        /// `name` uses `GearEvent`; else one joined to the name's JSON bus, which then
        /// becomes the hosted Gear (the first type's Gear is joined to it too).
        func gear<GearEvent: Codable & Sendable>(named name: String, of _: GearEvent.Type) -> Gear<GearEvent> {
            guard let made = gears[name] else {
                let gear = Gear<GearEvent>()
                gears[name] = MadeGear(gear)
                return gear
            }
            if let gear = made.gear as? Gear<GearEvent> { return gear }
            let bus: Gear<MachineEvent>
            if let existing = made.gear as? Gear<MachineEvent> {
                bus = existing
            } else {
                bus = Gear<MachineEvent>()
                made.bridge(bus)
                bridged[name, default: [:]][ObjectIdentifier(made.eventType)] = (made.gear, made.port)
                gears[name] = MadeGear(bus)
            }
            if let gear = bus as? Gear<GearEvent> { return gear }   // JSON events: the bus itself
            if let gear = bridged[name]?[ObjectIdentifier(GearEvent.self)]?.gear as? Gear<GearEvent> { return gear }
            let gear = Gear<GearEvent>()
            GearBridge.connect(gear, to: bus)
            bridged[name, default: [:]][ObjectIdentifier(GearEvent.self)] = (gear, TypedGearPort(gear))
            return gear
        }
    }

    /// The config entry: `name`, `kind` and `gear`.
    public let entry: SpinServerConfiguration.SpinEntry
    /// Where the server keeps its Spins (the configuration's `storage`): with `persists`
    /// and the `postgres` backend, the database at `url`, which every node of a cluster
    /// shares — the place for what Spins on different nodes must see alike (the
    /// auth-routing example's session).
    public let storage: SpinServerConfiguration.Storage
    /// A logger labelled with the Spin's name, for the kind and the Spin's feedbacks. It
    /// is made when the entry is hosted, with the handlers the process has then: after
    /// `LoopServer.bootstrap(log:)` (which `SpinServerProgram` calls before hosting), it
    /// writes in the configured `log.format` at `log.level`.
    public let logger: Logger
    private let workshop: Workshop
    /// The kind's version, when it was registered with one (`register(_:gear:version:migrate:_:)`).
    private let versions: SwiftKindVersions?
    /// Where `host(_:schema:)` puts the Spin: the host, or a Spin made at run time.
    private let receive: (any HostedSpin) throws(HostingError) -> Void

    init(entry: SpinServerConfiguration.SpinEntry, storage: SpinServerConfiguration.Storage, workshop: Workshop,
         versions: SwiftKindVersions? = nil, receive: @escaping (any HostedSpin) throws(HostingError) -> Void) {
        self.entry = entry
        self.storage = storage
        self.logger = Logger(label: entry.name)
        self.workshop = workshop
        self.versions = versions
        self.receive = receive
    }

    /// The name the Spin is hosted under.
    public var name: String { entry.name }

    /// Hosts `spin` under the entry's name, with its kind.
    /// - Parameter schema: the JSON Schemas of its events and state; nil takes what the
    ///   types describe (`SpinSchema.of`).
    public func host<State: Codable & Sendable, Event: Codable & Sendable>(_ spin: Spin<State, Event>,
                                                                           schema: SpinSchema? = nil) throws(HostingError) {
        try SpinHost.checkEvents(Event.self)
        let traits = HostedLoop<State, Event>.Traits(schema: schema, versions: versions?.versions(State.self, Event.self),
                                                     stored: versions)
        try receive(HostedLoop(name: entry.name, kind: entry.kind, spin: spin, traits: traits))
    }

    /// The Gear the entry names, as a `Gear<GearEvent>`: one per Gear name and event
    /// type, shared by every Spin that names it. Spins of other event types (and JSON
    /// machines) on the same name reach it through the Gear's JSON bus (see
    /// `SpinKindRegistry`, Gears).
    /// - Throws: `HostingError.noGear` when the entry names none (register the kind with
    ///   `gear: .required`).
    public func gear<GearEvent: Codable & Sendable>(of _: GearEvent.Type = GearEvent.self) throws(HostingError) -> Gear<GearEvent> {
        guard let name = entry.gear else { throw .noGear(spin: entry.name) }
        return workshop.gear(named: name, of: GearEvent.self)
    }

    /// One value per Gear name (or one for all Spins without a Gear) and type, made by
    /// `make` the first time: for what Spins on one Gear share besides it, such as a
    /// service both call.
    public func shared<Value>(_ make: () -> Value) -> Value {
        let (gear, type) = (entry.gear ?? "", ObjectIdentifier(Value.self))
        if let value = workshop.shared[gear]?[type] as? Value { return value }
        let value = make()
        workshop.shared[gear, default: [:]][type] = value
        return value
    }
}

/// What `SpinKindContext.Workshop.MadeGear` does with its Gear, by the Gear's event type.
private protocol TypedGear: AnyObject, Sendable {
    var eventType: Any.Type { get }
    func host(on host: SpinHost, named name: String, attachedTo spins: [String], members: [any GearPort]) throws(HostingError)
    func bridge(to bus: Gear<MachineEvent>)
    var port: any GearPort { get }
}

extension Gear: TypedGear where Event: Codable {
    fileprivate var eventType: Any.Type { Event.self }

    fileprivate func host(on host: SpinHost, named name: String, attachedTo spins: [String],
                          members: [any GearPort]) throws(HostingError) {
        try host.host(self, named: name, attachedTo: spins, members: members)
    }

    fileprivate func bridge(to bus: Gear<MachineEvent>) { GearBridge.connect(self, to: bus) }

    fileprivate var port: any GearPort { TypedGearPort(self) }
}
