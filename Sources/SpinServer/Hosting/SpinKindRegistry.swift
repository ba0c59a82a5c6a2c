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
/// was loaded and validated with the configuration, and the Gears their files declare
/// carry `MachineEvent`s (one `Gear<MachineEvent>` per name, shared by every machine that
/// declares it; loading keeps the other kinds off such Gears).
public struct SpinKindRegistry: Sendable {
    /// Whether a kind's Spins attach to a Gear (their config entry then names one).
    public typealias GearUse = SpinServerConfiguration.SpinKinds.GearUse

    private struct Kind: Sendable {
        let gearUse: GearUse
        let make: @Sendable (SpinKindContext) throws -> Void
    }

    private var table: [String: Kind] = [:]

    /// No kinds; declarative machines are hosted all the same.
    public init() {}

    /// Registers `kind` (a second registration of the same name replaces the first).
    /// - Parameters:
    ///   - gear: `.required` when the kind's Spins attach to a Gear: loading then wants a
    ///     `gear` on each of its config entries, and `context.gear(of:)` gives it.
    ///   - make: hosts one Spin for a config entry, with `context.host(_:)`.
    public mutating func register(_ kind: String, gear: GearUse = .none,
                                  _ make: @escaping @Sendable (SpinKindContext) throws -> Void) {
        precondition(kind != SpinServerConfiguration.machineKind, "kind \"machine\" is the declarative machines'")
        table[kind] = Kind(gearUse: gear, make: make)
    }

    /// What configuration loading checks `kind` and `gear` against.
    public var kinds: SpinServerConfiguration.SpinKinds {
        SpinServerConfiguration.SpinKinds(table.mapValues(\.gearUse))
    }

    /// Hosts every configured Spin and Gear (not started): each entry by its kind's
    /// `make`, each machine from its definition, then each Gear attached to the Spins that
    /// name it.
    /// - Throws: `HostingError` for a kind not registered (a configuration not loaded with
    ///   `kinds`), a Gear no Spin made, or one asked for with two event types; and what a
    ///   kind's `make` throws.
    public func makeHost(_ configuration: SpinServerConfiguration) throws -> SpinHost {
        let host = SpinHost()
        let workshop = SpinKindContext.Workshop()
        for gear in configuration.gears
        where configuration.spins.contains(where: { $0.machine != nil && $0.attachedGears.contains(gear.name) }) {
            workshop.gears[gear.name] = .init(Gear<MachineEvent>())
        }
        for entry in configuration.spins {
            if let machine = entry.machine {
                let gears = workshop.gears.filter { entry.attachedGears.contains($0.key) }
                    .compactMapValues { $0.gear as? Gear<MachineEvent> }
                try host.host(machine.definition.spin(gears: gears), named: entry.name, kind: entry.kind)
                continue
            }
            guard let kind = table[entry.kind] else {
                throw HostingError.unknownKind(entry.kind, known: table.keys.sorted())
            }
            try kind.make(SpinKindContext(entry: entry, host: host, workshop: workshop))
        }
        for gear in configuration.gears {
            guard let made = workshop.gears[gear.name] else { throw HostingError.gearNotMade(gear.name) }
            let attached = configuration.spins.filter { $0.attachedGears.contains(gear.name) }.map(\.name)
            try made.hostOn(host, gear.name, attached)
        }
        return host
    }
}

/// What a kind's `make` gets for one config entry: its name, its Gear, and where to host.
public final class SpinKindContext {
    /// The Gears made so far and the values shared per Gear, for one `makeHost`.
    final class Workshop {
        struct MadeGear {
            let gear: Any
            let eventType: Any.Type
            let hostOn: (SpinHost, String, [String]) throws(HostingError) -> Void

            init<GearEvent: Codable & Sendable>(_ gear: Gear<GearEvent>) {
                self.gear = gear
                self.eventType = GearEvent.self
                self.hostOn = { host, name, spins throws(HostingError) in try host.host(gear, named: name, attachedTo: spins) }
            }
        }

        var gears: [String: MadeGear] = [:]
        var shared: [String: Any] = [:]
    }

    /// The config entry: `name`, `kind` and `gear`.
    public let entry: SpinServerConfiguration.SpinEntry
    private let spinHost: SpinHost
    private let workshop: Workshop

    init(entry: SpinServerConfiguration.SpinEntry, host: SpinHost, workshop: Workshop) {
        self.entry = entry
        self.spinHost = host
        self.workshop = workshop
    }

    /// The name the Spin is hosted under.
    public var name: String { entry.name }

    /// Hosts `spin` under the entry's name, with its kind.
    public func host<State: Codable & Sendable, Event: Codable & Sendable>(_ spin: Spin<State, Event>) throws(HostingError) {
        try spinHost.host(spin, named: entry.name, kind: entry.kind)
    }

    /// The Gear the entry names: one `Gear<GearEvent>` per Gear name, shared by every
    /// Spin that names it.
    /// - Throws: `HostingError.noGear` when the entry names none (register the kind with
    ///   `gear: .required`), `.gearEventMismatch` when another Spin asked for the same
    ///   Gear with another event type.
    public func gear<GearEvent: Codable & Sendable>(of _: GearEvent.Type = GearEvent.self) throws(HostingError) -> Gear<GearEvent> {
        guard let name = entry.gear else { throw .noGear(spin: entry.name) }
        if let made = workshop.gears[name] {
            guard let gear = made.gear as? Gear<GearEvent> else {
                throw .gearEventMismatch(gear: name, asked: String(reflecting: GearEvent.self), made: String(reflecting: made.eventType))
            }
            return gear
        }
        let gear = Gear<GearEvent>()
        workshop.gears[name] = .init(gear)
        return gear
    }

    /// One value per Gear name (or one for all Spins without a Gear) and type, made by
    /// `make` the first time: for what Spins on one Gear share besides it, such as a
    /// service both call.
    public func shared<Value>(_ make: () -> Value) -> Value {
        let key = "\(entry.gear ?? "")\u{0}\(ObjectIdentifier(Value.self))"
        if let value = workshop.shared[key] as? Value { return value }
        let value = make()
        workshop.shared[key] = value
        return value
    }
}
