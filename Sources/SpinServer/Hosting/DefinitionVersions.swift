import Foundation
import SpinCore
import SpinJSON
import SpinMachines
import SpinConcurrency

/// A hosted definition as storage keeps it, whatever its Spins' types: its name there,
/// its version, its source, and how it takes the older versions storage holds. What the
/// server stores at start-up (`SpinStore.storeDefinition`) and reads back.
package protocol StoredDefinition: AnyObject, Sendable {
    /// The name storage keeps its versions under: `kind.<kind>` for a machine kind's Spins,
    /// `spin.<name>` for a configured machine Spin, `swift.<kind>` for a versioned Swift kind.
    var storedName: String { get }
    /// The version the server runs (a machine file's `"version"`, 1 when it has none; a
    /// Swift kind's registered version).
    var version: Int { get }
    /// What storage keeps of this version (a machine file's bytes; a Swift kind's
    /// `{"swift":..,"version":..}`).
    var source: [UInt8] { get }
    /// Takes the older versions storage holds (each source by version) for replays and
    /// migrations. Returns what is wrong with the definition given them (its migrations
    /// name states an older version lacks: nil when nothing is), and the stored versions
    /// it could not take (a copy that no longer loads): a Spin that needs one of those is
    /// unrecoverable, naming it, and the others run.
    func take(older: [Int: [UInt8]]) -> (problem: String?, skipped: [String])
}

/// How Spins of one definition recorded under older versions of it are recovered: the
/// reducers of those versions (the events a Spin applied under a version replay through
/// it), their initial states (where a history with no snapshot begins), and the upgrade of
/// a state from an older version to a newer one. Shared by every Spin of a kind (or by
/// the configured Spin).
package final class DefinitionVersions<State: Sendable, Event: Sendable>: Sendable {
    /// The older versions the server has taken, as Spins of this definition use them.
    package struct Older: Sendable {
        /// Each older version's reducer and initial state, by version.
        var versions: [Int: (reduce: @Sendable (State, Event) -> State, initial: State)] = [:]
        /// No older version's code is kept (a Swift kind): events of every older version
        /// replay through the current reducer, from the current initial state, and
        /// `upgrade` leaves a state as it is (a snapshot's JSON was migrated before it was
        /// decoded, `migrateSnapshot`).
        var replaysThroughCurrent = false
        /// A snapshot's state JSON of an older version (the version) as the current
        /// version's JSON (a Swift kind's `migrate`).
        var migrateSnapshot: (@Sendable (Data, Int) throws -> Data)?
        /// A state of version `from` as one of version `to` (the current one or an older one):
        /// the migrations between applied; throws why it cannot be.
        var upgrade: @Sendable (State, _ from: Int, _ to: Int) throws -> State = { _, from, to in
            throw UpgradeFailure(reason: "no migration from version \(from) to \(to)")
        }
    }

    /// Why a state cannot be upgraded, as the definition says it.
    package struct UpgradeFailure: Error, CustomStringConvertible {
        package let reason: String
        package var description: String { reason }
    }

    package let version: Int
    private let taken = Protected(Older())

    package init(version: Int) {
        self.version = version
    }

    /// What the server took of the older versions (nothing before start-up reads storage).
    package var older: Older { taken.withLock { $0 } }

    func set(_ older: Older) { taken.withLock { $0 = older } }
}

/// A machine file's versions: the machine a kind (or a configured Spin) runs now and the
/// older versions of its file that storage holds.
final class MachineVersions: StoredDefinition {
    let storedName: String
    let machine: MachineDefinition
    let versions: DefinitionVersions<MachineState, MachineEvent>
    var version: Int { machine.version }
    var source: [UInt8] { machine.source }

    init(storedName: String, machine: MachineDefinition) {
        self.storedName = storedName
        self.machine = machine
        self.versions = DefinitionVersions(version: machine.version)
    }

    func take(older sources: [Int: [UInt8]]) -> (problem: String?, skipped: [String]) {
        var definitions: [Int: MachineDefinition] = [:]
        var problems: [String] = []
        var skipped: [String] = []
        for (version, source) in sources.sorted(by: { $0.key < $1.key }) where version < machine.version {
            do {
                let definition = try MachineDefinition(json: source, file: "\(machine.file) (version \(version), as stored)")
                guard definition.version == version else {
                    skipped.append("the stored copy of version \(version) says \"version\": \(definition.version)")
                    continue
                }
                definitions[version] = definition
                problems += machine.migrationIssues(from: definition).map(\.description)
            } catch {
                skipped.append("the stored copy of version \(version) no longer loads: \(error)")
            }
        }
        guard problems.isEmpty else { return (problems.joined(separator: "; "), skipped) }
        var older = DefinitionVersions<MachineState, MachineEvent>.Older()
        for (version, definition) in definitions {
            older.versions[version] = ({ state, event in definition.transition(state, event) ?? state }, definition.initialState)
        }
        let (machine, stored) = (self.machine, definitions)
        older.upgrade = { state, from, to in
            guard let target = to == machine.version ? machine : stored[to] else {
                throw DefinitionVersions<MachineState, MachineEvent>.UpgradeFailure(reason: "version \(to) is not stored")
            }
            do {
                return try target.upgrade(state, from: from, through: stored).state
            } catch {
                throw DefinitionVersions<MachineState, MachineEvent>.UpgradeFailure(reason: "\(error)")
            }
        }
        versions.set(older)
        return (nil, skipped)
    }
}

/// A Swift kind registered with a version (`SpinKindRegistry.register(_:gear:version:migrate:_:)`):
/// its code is the one definition a server has, so a Spin recorded under an older version
/// replays its events through the current reducer, from its snapshot's state migrated by
/// `migrate` (or the current initial state), and is then marked migrated. Storage keeps
/// `{"swift":"<kind>","version":n}` of each version, so that a node knows a newer one ran.
final class SwiftKindVersions: StoredDefinition {
    let kind: String
    let version: Int
    let migrate: (@Sendable (Data, Int) throws -> Data)?
    /// The `DefinitionVersions` of the kind's Spins, made by the first (their types are
    /// the kind's `State` and `Event`).
    private let made = Protected<AnyObject?>(nil)

    init(kind: String, version: Int, migrate: (@Sendable (Data, Int) throws -> Data)?) {
        self.kind = kind
        self.version = version
        self.migrate = migrate
    }

    var storedName: String { "swift.\(kind)" }

    var source: [UInt8] {
        JSONValue.object([("swift", .string(kind)), ("version", .number(String(version)))]).bytes
    }

    func take(older: [Int: [UInt8]]) -> (problem: String?, skipped: [String]) { (nil, []) }

    /// The versions of a Spin of this kind with `State` and `Event`: one object per kind.
    func versions<State: Sendable, Event: Sendable>(_: State.Type, _: Event.Type) -> DefinitionVersions<State, Event> {
        made.withLock { cached in
            if let versions = cached as? DefinitionVersions<State, Event> { return versions }
            let versions = DefinitionVersions<State, Event>(version: version)
            var older = DefinitionVersions<State, Event>.Older()
            older.replaysThroughCurrent = true
            older.migrateSnapshot = migrate
            versions.set(older)
            cached = versions
            return versions
        }
    }
}
