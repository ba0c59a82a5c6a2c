import Foundation
import SpinCore
import SpinMachines
import SpinConcurrency

/// Makes Spins of the configured kinds (`kinds` in the config) while the server runs:
/// what `PUT /v1/spins/{name}` and an event for a name of an `onEvent` kind use. Made by
/// `SpinKindRegistry.makeHost`, with the Gears and shared values it made for the
/// configured Spins, so that a Spin made later on a Gear of theirs shares them.
///
/// Each Gear a kind uses is a bus of JSON events (`Gear<MachineEvent>`), made with the
/// first Spin that uses it (or at start-up, for a name without `{key}`); a Swift kind's
/// Spin joins it through a Gear of its own event type (`GearBridge`).
package final class SpinFactory: Sendable {
    private let table: [String: @Sendable (SpinKindContext) throws -> Void]
    /// The registered Swift kinds with a version, by kind.
    private let versions: [String: SwiftKindVersions]
    private let kinds: [String: SpinServerConfiguration.KindEntry]
    /// The kinds whose instances an event makes, in config order.
    private let onEvent: [SpinServerConfiguration.KindEntry]
    /// The names of the configured Spins (`spins`): never made, never deleted.
    package let configured: Set<String>
    /// The Gears that stay when no Spin is attached to them: configured ones, and the
    /// kinds' Gears without `{key}`.
    private let lasting: Set<String>
    private let storage: SpinServerConfiguration.Storage
    private let documented = Protected<[OpenAPIDocument.DocumentedKind]?>(nil)
    /// What every Spin of each machine kind shares (its definition as a Spin shows it,
    /// its schemas, its hooks), made once.
    private let machineTraits: [String: SpinHost.MachineTraits]
    /// The machine kinds' definitions as storage keeps them, by kind, then the versioned
    /// Swift kinds'.
    var storedDefinitions: [any StoredDefinition] {
        machineKinds.compactMap { machineTraits[$0]?.stored } + versions.keys.sorted().compactMap { versions[$0] }
    }

    /// The kinds made of a machine file, sorted.
    var machineKinds: [String] { machineTraits.keys.sorted() }

    /// What every Spin of the machine kind `kind` shares.
    func machineTraits(of kind: String) -> SpinHost.MachineTraits? { machineTraits[kind] }

    /// A Spin `name` of the machine kind `kind` on no Gear, never started: what replays its
    /// history (`LoopServer.checkUpgrade`). Nil for a kind that is not a machine's.
    func machineSpin(named name: String, of kind: String) -> (any HostedSpin)? {
        guard let machine = kinds[kind]?.machine?.definition, let traits = machineTraits[kind] else { return nil }
        return SpinHost.machineLoop(machine, gears: [:], named: name, kind: kind, traits: traits)
    }
    /// The kinds whose Spins are made asleep (`startsAsleep`).
    private let restingKinds: Set<String>
    /// The Gears and shared values made so far: touched under its lock only.
    private let workshop: Protected<SpinKindContext.Workshop>
    /// Each kind's Gear templates with `{key}` (hosted names, the key unfilled): how the
    /// Spins on one Gear are found from its name (`peers(on:)`).
    private let keyedTemplates: [(kind: SpinServerConfiguration.KindEntry, template: GearTemplate)]
    /// The kinds whose instances all share a Gear (`sharesGears`).
    private let sharing: Set<String>
    /// Each kind's hosted Gear names, `{key}` unfilled, each once, sorted (`hostedGears`).
    private let hostedTemplates: [String: [String]]

    init(table: [String: @Sendable (SpinKindContext) throws -> Void], versions: [String: SwiftKindVersions] = [:],
         kinds: [SpinServerConfiguration.KindEntry],
         configured: [String], storage: SpinServerConfiguration.Storage, workshop: SpinKindContext.Workshop) {
        self.table = table
        self.versions = versions
        var byName: [String: SpinServerConfiguration.KindEntry] = [:]
        for kind in kinds { byName[kind.name] = kind }
        self.kinds = byName
        self.onEvent = kinds.filter { $0.create == .onEvent }
        var traits: [String: SpinHost.MachineTraits] = [:]
        var resting: Set<String> = []
        for kind in kinds {
            guard let machine = kind.machine?.definition else { continue }
            traits[kind.name] = SpinHost.machineTraits(machine, storedAs: "kind.\(kind.name)")
            if !machine.awaitsTime(in: machine.initialState) { resting.insert(kind.name) }
        }
        self.machineTraits = traits
        self.restingKinds = resting
        var keyed: [(kind: SpinServerConfiguration.KindEntry, template: GearTemplate)] = []
        var sharing: Set<String> = []
        var hostedTemplates: [String: [String]] = [:]
        for kind in kinds {
            let templates = kind.gearTemplates
            hostedTemplates[kind.name] = templates
            for template in templates {
                if template.contains(SpinServerConfiguration.NamePattern.keyPlaceholder), kind.names?.hasWildcard == true {
                    keyed.append((kind, GearTemplate(template)))
                } else {
                    sharing.insert(kind.name)
                }
            }
        }
        self.keyedTemplates = keyed
        self.sharing = sharing
        self.hostedTemplates = hostedTemplates
        self.configured = Set(configured)
        self.lasting = Set(workshop.gears.keys)
        self.storage = storage
        self.workshop = Protected(workshop)
    }

    /// The kinds as the OpenAPI document lists them, with their Spins' schemas: a
    /// machine's from its definition, a Swift kind's from a Spin made for the purpose (in a
    /// scratch workshop, with in-memory storage: nothing of it is hosted or kept). Made on
    /// first use.
    var documentedKinds: [OpenAPIDocument.DocumentedKind] {
        if let made = documented.withLock({ $0 }) { return made }
        var list: [OpenAPIDocument.DocumentedKind] = []
        for name in kindNames {
            guard let kind = kinds[name] else { continue }
            var schema: SpinSchema?
            if kind.machine != nil {
                schema = machineTraits[kind.name]?.schema
            } else if let make = table[kind.kind] {
                let entry = SpinServerConfiguration.SpinEntry(name: "schema", kind: kind.name,
                                                              gear: kind.gears.values.first.map { _ in "schema" })
                let scratch = SpinKindContext.Workshop()
                try? make(SpinKindContext(entry: entry, storage: SpinServerConfiguration.Storage(), workshop: scratch) { spin throws(HostingError) in
                    schema = spin.schema
                })
            }
            if let schema { list.append(.init(name: kind.name, names: kind.names, schema: schema)) }
        }
        documented.withLock { $0 = list }
        return list
    }

    /// Whether some kind's Gears have a `{key}`: Gears come and go with Spins.
    package var makesGearsPerKey: Bool {
        kinds.values.contains { kind in kind.gears.values.contains { $0.contains(SpinServerConfiguration.NamePattern.keyPlaceholder) } }
    }

    /// The configured kinds' names, sorted.
    package var kindNames: [String] { kinds.keys.sorted() }

    package func kind(named name: String) -> SpinServerConfiguration.KindEntry? { kinds[name] }

    /// Whether a Spin of `kind` is made asleep: a machine whose initial state waits for
    /// no time (no `after` timer, no delayed `raise`). Started, such a Spin would do
    /// nothing until its first event (a loop that starts propagates nothing), so it
    /// costs no loop until then: its first request or Gear event wakes it.
    package func startsAsleep(_ kind: String) -> Bool { restingKinds.contains(kind) }

    /// Whether the instances of kind `kind` are on a Gear whose name their names do not
    /// give (a Gear name without `{key}`, or `names` without `*`): such Spins are all
    /// hosted from the start and never let go of (each Gear event must find every Spin it
    /// is for).
    package func sharesGears(_ kind: String) -> Bool { sharing.contains(kind) }

    /// The kinds whose instances share a Gear (`sharesGears`).
    package var sharingKinds: Set<String> { sharing }

    /// Whether Spin `name` may be one made at run time: not a configured Spin, and one of
    /// some kind's names.
    package func mayBeMade(_ name: String) -> Bool {
        !configured.contains(name) && kinds.values.contains { $0.names?.matches(name) ?? true }
    }

    /// Whether the Gear `gear` stays without Spins (a configured Gear, or a kind's Gear
    /// without `{key}`): the Spins on it are never let go of.
    package func lasts(_ gear: String) -> Bool { lasting.contains(gear) }

    /// Whether the Spins on Gear `gear` share values besides it (`SpinKindContext.shared`,
    /// such as the auth-routing example's session service in memory): what is in them is
    /// not in any journal, so those Spins are never let go of from memory.
    package func holdsShared(on gear: String) -> Bool {
        workshop.withLock { !($0.shared[gear]?.isEmpty ?? true) }
    }

    /// The names of the Spins a kind would put on the Gear `gear` through a Gear name with
    /// `{key}` (`doors-{key}`: `doors-7` is door-7's), configured Spins left out: a cost
    /// of the kinds, not of the Spins.
    package func peers(on gear: String) -> [String] {
        var found: [String] = []
        for (kind, template) in keyedTemplates {
            guard let key = template.key(in: gear), let name = kind.names?.name(key: key),
                  SpinHost.isNameText(name), !configured.contains(name), !found.contains(name) else { continue }
            found.append(name)
        }
        return found
    }

    /// What Spin `name` is placed by in a cluster (`SpinPartitions`): for a Spin a kind
    /// with `{key}` Gears would make, the key its `names` give it, so that the Spins on one
    /// Gear (`feature-42`, `router-42` on `auth-42`) share a partition; nil for any other
    /// name (configured Spins, kinds without `{key}` Gears).
    package func groupKey(of name: String) -> String? {
        guard !configured.contains(name) else { return nil }
        for (kind, _) in keyedTemplates {
            if let key = kind.names?.key(of: name) { return key }
        }
        return nil
    }

    /// The key that fills `template` to `gear`, or nil when none does.
    static func key(in gear: String, template: String) -> String? { GearTemplate(template).key(in: gear) }

    /// A Gear name with `{key}`, cut where the key goes: which key gives a Gear name is
    /// read off its bytes.
    struct GearTemplate: Sendable {
        /// The bytes around each `{key}` (one more than the keys).
        let parts: [[UInt8]]
        let fixed: Int

        init(_ template: String) {
            let placeholder = Array(SpinServerConfiguration.NamePattern.keyPlaceholder.utf8)
            var parts: [[UInt8]] = [[]]
            let bytes = Array(template.utf8)
            var index = 0
            while index < bytes.count {
                if index + placeholder.count <= bytes.count, bytes[index..<(index + placeholder.count)].elementsEqual(placeholder) {
                    parts.append([])
                    index += placeholder.count
                } else {
                    parts[parts.count - 1].append(bytes[index])
                    index += 1
                }
            }
            self.parts = parts
            self.fixed = parts.reduce(0) { $0 + $1.count }
        }

        /// The key `gear` has in this template, or nil when the template does not make it.
        func key(in gear: String) -> String? {
            let keys = parts.count - 1
            var bytes: [UInt8] = []
            bytes.append(contentsOf: gear.utf8)
            let length = bytes.count - fixed
            guard keys > 0, length >= 0, length % keys == 0 else { return nil }
            let width = length / keys
            var offset = 0
            var key: ArraySlice<UInt8>?
            for (index, part) in parts.enumerated() {
                guard bytes[offset...].starts(with: part) else { return nil }
                offset += part.count
                guard index < keys else { break }
                let run = bytes[offset..<(offset + width)]
                if let key, !key.elementsEqual(run) { return nil }
                key = key ?? run
                offset += width
            }
            return offset == bytes.count ? String(decoding: key ?? [], as: UTF8.self) : nil
        }
    }

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
        let gearNames = try gears(of: name, kind: kind)
        return try workshop.withLock { (workshop: inout SpinKindContext.Workshop) throws(APIError) -> Made in
            try make(name, of: kind, gearNames: gearNames, in: workshop)
        }
    }

    /// The Gears a Spin `name` of `kind` is on: each the machine declares, by its hosted
    /// name. Throws what `make` does for a name that is not the kind's or a Gear name that
    /// is not one.
    private func gears(of name: String, kind: SpinServerConfiguration.KindEntry) throws(APIError) -> [String: String] {
        guard let gearNames = kind.gears(of: name) else {
            throw .badRequest("Spin name \"\(name)\" is not one of kind \"\(kind.name)\"'s names (\"\(kind.names?.pattern ?? "")\")")
        }
        for (declared, gear) in gearNames.sorted(by: { $0.key < $1.key }) where gear.isEmpty || !SpinHost.isNameText(gear) {
            throw .badRequest("Spin \"\(name)\" of kind \"\(kind.name)\" would attach to Gear \"\(gear)\" (for \(declared)), which is not a valid name")
        }
        return gearNames
    }

    /// The hosted Gears a Spin `name` of `kind` is on, each once: what its Gear receiver
    /// catches when it is made or hosted asleep, without making it. Throws as `gears` does.
    package func hostedGears(of name: String, kind: SpinServerConfiguration.KindEntry) throws(APIError) -> [String] {
        guard let templates = hostedTemplates[kind.name], let key = kind.key(of: name) else {
            return Set(try gears(of: name, kind: kind).values).sorted()
        }
        // The templates filled (each made once per kind); what `gears` would refuse, it
        // refuses the same way.
        var names: [String] = []
        names.reserveCapacity(templates.count)
        for template in templates {
            let gear = SpinServerConfiguration.NamePattern.filling(template, with: key)
            guard !gear.isEmpty, SpinHost.isNameText(gear) else { return Set(try gears(of: name, kind: kind).values).sorted() }
            names.append(gear)
        }
        return Set(names).sorted()
    }

    /// `make`, with the workshop's lock held.
    private func make(_ name: String, of kind: SpinServerConfiguration.KindEntry, gearNames: [String: String],
                      in workshop: SpinKindContext.Workshop) throws(APIError) -> Made {
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
                made = SpinHost.machineLoop(machine.definition, gears: gears, named: name, kind: kind.name,
                                            traits: machineTraits[kind.name]
                                                ?? SpinHost.machineTraits(machine.definition, storedAs: "kind.\(kind.name)"))
            } else if let make = table[kind.kind] {
                let entry = SpinServerConfiguration.SpinEntry(name: name, kind: kind.name, gear: gearNames.values.first)
                try make(SpinKindContext(entry: entry, storage: storage, workshop: workshop,
                                         versions: versions[kind.kind]) { spin throws(HostingError) in
                    made = spin
                })
            }
        } catch {
            rollBack(fresh, bridgedBefore, in: workshop)
            throw .internal("kind \"\(kind.name)\" could not make Spin \"\(name)\": \(error)")
        }
        guard let spin = made else {
            rollBack(fresh, bridgedBefore, in: workshop)
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
        workshop.withLock { workshop in forgetLocked(names, in: workshop) }
    }

    /// A make that failed: the Gears it made go, and so do the bridges it added to the
    /// others (a later make adds and routes its own). With the lock held.
    private func rollBack(_ fresh: Set<String>, _ bridgedBefore: [String: Set<ObjectIdentifier>],
                          in workshop: SpinKindContext.Workshop) {
        forgetLocked(fresh, in: workshop)
        for (gear, before) in bridgedBefore where !fresh.contains(gear) {
            workshop.bridged[gear] = workshop.bridged[gear]?.filter { before.contains($0.key) }
        }
    }

    /// `forget`, with the lock held.
    @discardableResult
    private func forgetLocked(_ names: some Sequence<String>, in workshop: SpinKindContext.Workshop) -> [String] {
        let gone = names.filter { !lasting.contains($0) }
        for name in gone {
            workshop.gears[name] = nil
            workshop.bridged[name] = nil
            workshop.shared[name] = nil
        }
        return gone
    }
}
