import SpinCore
import SpinExamples
import SpinMachines
import SpinServer

/// The Spin kinds the default executable can host, by the `kind` of a config entry:
///
/// | kind | makes | Gear |
/// |---|---|---|
/// | `counter` | `Counter.spin()` | none |
/// | `levels` | `Levels.spin()` | none |
/// | `feature` | `AuthRouting(session:gear:).feature` | required |
/// | `router` | `AuthRouting(session:gear:).router` | required |
///
/// Spins that name the same Gear share one `Gear<AuthRouting.GearEvent>` and one
/// `SessionService`, which is what makes `feature` and `router` one example.
///
/// Entries with a `machine` file (kind `machine`) are declarative machines: their
/// definition was loaded and validated with the configuration; the Gears their files
/// declare carry `MachineEvent`s (one `Gear<MachineEvent>` per name, shared by every
/// machine that declares it; loading keeps the other kinds off such Gears).
enum SpinCatalog {
    /// What a Spin of a Gear-using kind is wired to.
    struct SharedGear {
        let gear = Gear<AuthRouting.GearEvent>()
        let session = SessionService()
    }

    struct Kind: Sendable {
        let gearUse: SpinServerConfiguration.SpinKinds.GearUse
        let host: @Sendable (SpinHost, SpinServerConfiguration.SpinEntry, SharedGear?) throws(HostingError) -> Void
    }

    static let table: [String: Kind] = [
        "counter": Kind(gearUse: .none) { host, entry, _ throws(HostingError) in
            try host.host(Counter.spin(), named: entry.name, kind: entry.kind)
        },
        "levels": Kind(gearUse: .none) { host, entry, _ throws(HostingError) in
            try host.host(Levels.spin(), named: entry.name, kind: entry.kind)
        },
        "feature": Kind(gearUse: .required) { host, entry, shared throws(HostingError) in
            let shared = shared!
            try host.host(AuthRouting(session: shared.session, gear: shared.gear).feature, named: entry.name, kind: entry.kind)
        },
        "router": Kind(gearUse: .required) { host, entry, shared throws(HostingError) in
            let shared = shared!
            try host.host(AuthRouting(session: shared.session, gear: shared.gear).router, named: entry.name, kind: entry.kind)
        },
    ]

    /// What configuration loading checks `kind` and `gear` against.
    static var kinds: SpinServerConfiguration.SpinKinds {
        SpinServerConfiguration.SpinKinds(table.mapValues(\.gearUse))
    }

    /// Hosts every configured Spin and Gear (not started). The configuration must come
    /// from `SpinServerConfiguration.load(…, kinds: SpinCatalog.kinds)`, which guarantees
    /// every kind is in the table and every needed Gear is listed.
    static func makeHost(_ configuration: SpinServerConfiguration) throws(HostingError) -> SpinHost {
        let host = SpinHost()
        var shared: [String: SharedGear] = [:]
        var machineGears: [String: Gear<MachineEvent>] = [:]
        for gear in configuration.gears {
            if configuration.spins.contains(where: { $0.machine != nil && $0.attachedGears.contains(gear.name) }) {
                machineGears[gear.name] = Gear()
            } else {
                shared[gear.name] = SharedGear()
            }
        }
        for entry in configuration.spins {
            if let machine = entry.machine {
                try host.host(machine.definition.spin(gears: machineGears.filter { entry.attachedGears.contains($0.key) }),
                              named: entry.name, kind: entry.kind)
                continue
            }
            guard let kind = table[entry.kind] else {
                preconditionFailure("kind \"\(entry.kind)\" passed configuration loading but is not in the catalog")
            }
            try kind.host(host, entry, entry.gear.flatMap { shared[$0] })
        }
        for gear in configuration.gears {
            let attached = configuration.spins.filter { $0.attachedGears.contains(gear.name) }.map(\.name)
            if let machineGear = machineGears[gear.name] {
                try host.host(machineGear, named: gear.name, attachedTo: attached)
            } else {
                try host.host(shared[gear.name]!.gear, named: gear.name, attachedTo: attached)
            }
        }
        return host
    }
}
