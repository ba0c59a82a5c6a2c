import Foundation
import SpinCore
import SpinMachines

/// Makes Spins of the configured kinds (`kinds` in the config) while the server runs:
/// what `PUT /v1/spins/{name}` and an event for a name of an `onEvent` kind use. Made by
/// `SpinKindRegistry.makeHost`, with the Gears and shared values it made for the
/// configured Spins, so that a Spin made later on a Gear of theirs shares them.
///
/// Each Gear a kind uses is a bus of JSON events (`Gear<MachineEvent>`), made with the
/// first Spin that uses it (or at start-up, for a name without `{key}`); a Swift kind's
/// Spin joins it through a Gear of its own event type (`GearBridge`).
package final class SpinFactory: @unchecked Sendable {
    // `workshop` is touched under `lock` only (after `makeHost` returned).
    private let lock = NSLock()
    private let table: [String: @Sendable (SpinKindContext) throws -> Void]
    private let kinds: [String: SpinServerConfiguration.KindEntry]
    /// The kinds whose instances an event makes, in config order.
    private let onEvent: [SpinServerConfiguration.KindEntry]
    /// The names of the configured Spins (`spins`): never made, never deleted.
    package let configured: Set<String>
    /// The Gears that stay when no Spin is attached to them: configured ones, and the
    /// kinds' Gears without `{key}`.
    private let lasting: Set<String>
    private let storage: SpinServerConfiguration.Storage
    private let workshop: SpinKindContext.Workshop

    init(table: [String: @Sendable (SpinKindContext) throws -> Void], kinds: [SpinServerConfiguration.KindEntry],
         configured: [String], storage: SpinServerConfiguration.Storage, workshop: SpinKindContext.Workshop) {
        self.table = table
        var byName: [String: SpinServerConfiguration.KindEntry] = [:]
        for kind in kinds { byName[kind.name] = kind }
        self.kinds = byName
        self.onEvent = kinds.filter { $0.create == .onEvent }
        self.configured = Set(configured)
        self.lasting = Set(workshop.gears.keys)
        self.storage = storage
        self.workshop = workshop
    }

    /// The configured kinds' names, sorted.
    package var kindNames: [String] { kinds.keys.sorted() }

    package func kind(named name: String) -> SpinServerConfiguration.KindEntry? { kinds[name] }

    /// The kind an event for the unknown Spin `name` makes it of, if any.
    package func kindMadeOnEvent(for name: String) -> SpinServerConfiguration.KindEntry? {
        onEvent.first { $0.names?.matches(name) == true }
    }

    /// A Spin made for `name`, not hosted yet, with the Gears it attaches to.
    package struct Made {
        package var spin: any HostedSpin
        /// Each Gear by its hosted name: a new hosted Gear to host and install (`new`), or
        /// the Gear objects this Spin brought to a hosted one (`ports`).
        package var gears: [(name: String, new: (any HostedGear)?, ports: [any GearPort])]
    }

    /// Makes Spin `name` of `kind` (not hosted, not started).
    /// - Throws: 400 `bad_request` when `name` is not one of the kind's names or makes a
    ///   Gear name that is not one; 500 for what the kind's `make` throws.
    package func make(_ name: String, of kind: SpinServerConfiguration.KindEntry) throws(APIError) -> Made {
        guard let gearNames = kind.gears(of: name) else {
            throw .badRequest("Spin name \"\(name)\" is not one of kind \"\(kind.name)\"'s names (\"\(kind.names?.pattern ?? "")\")")
        }
        for (declared, gear) in gearNames.sorted(by: { $0.key < $1.key }) where gear.isEmpty || !SpinHost.isNameText(gear) {
            throw .badRequest("Spin \"\(name)\" of kind \"\(kind.name)\" would attach to Gear \"\(gear)\" (for \(declared)), which is not a valid name")
        }
        lock.lock()
        defer { lock.unlock() }
        let hosted = Set(gearNames.values)
        var fresh: Set<String> = []
        var bridgedBefore: [String: Set<ObjectIdentifier>] = [:]
        for gear in hosted {
            if workshop.gears[gear] == nil {
                workshop.gears[gear] = .init(Gear<MachineEvent>())
                fresh.insert(gear)
            }
            bridgedBefore[gear] = Set((workshop.bridged[gear] ?? [:]).keys)
        }
        var made: (any HostedSpin)?
        do {
            if let machine = kind.machine {
                var gears: [String: Gear<MachineEvent>] = [:]
                for (declared, gear) in gearNames { gears[declared] = workshop.gear(named: gear, of: MachineEvent.self) }
                made = SpinHost.machineLoop(machine.definition, gears: gears, named: name, kind: kind.name)
            } else if let make = table[kind.kind] {
                let entry = SpinServerConfiguration.SpinEntry(name: name, kind: kind.name, gear: gearNames.values.first)
                try make(SpinKindContext(entry: entry, storage: storage, workshop: workshop) { spin throws(HostingError) in
                    made = spin
                })
            }
        } catch {
            forgetLocked(fresh)
            throw .internal("kind \"\(kind.name)\" could not make Spin \"\(name)\": \(error)")
        }
        guard let spin = made else {
            forgetLocked(fresh)
            throw .internal("kind \"\(kind.name)\" made no Spin for \"\(name)\" (its make must call context.host)")
        }
        var gears: [(name: String, new: (any HostedGear)?, ports: [any GearPort])] = []
        for gear in hosted.sorted() {
            guard let bus = workshop.gears[gear]?.gear as? Gear<MachineEvent> else { continue }
            let bridged = workshop.bridged[gear] ?? [:]
            if fresh.contains(gear) {
                gears.append((gear, HostedGearOf(name: gear, attached: [], gear: bus, members: bridged.values.map(\.port)), []))
            } else {
                let before = bridgedBefore[gear] ?? []
                gears.append((gear, nil, bridged.filter { !before.contains($0.key) }.map(\.value.port)))
            }
        }
        return Made(spin: spin, gears: gears)
    }

    /// Forgets the Gears `names` (no Spin is attached to them any more) and what was
    /// shared on them, but those that last: a Spin made later with the same key starts
    /// afresh. Returns the names forgotten.
    @discardableResult
    package func forget(_ names: some Sequence<String>) -> [String] {
        lock.lock()
        defer { lock.unlock() }
        return forgetLocked(names)
    }

    /// `forget`, with the lock held.
    @discardableResult
    private func forgetLocked(_ names: some Sequence<String>) -> [String] {
        let gone = names.filter { !lasting.contains($0) }
        for name in gone {
            workshop.gears[name] = nil
            workshop.bridged[name] = nil
            let prefix = "\(name)\u{0}"
            for key in workshop.shared.keys where key.hasPrefix(prefix) { workshop.shared[key] = nil }
        }
        return gone
    }
}
