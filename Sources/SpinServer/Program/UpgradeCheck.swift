import Foundation
import Logging
import SpinJSON
import SpinStorage

/// What restarting on the configured definitions would do to the stored Spins
/// (`spin-server --check-upgrade`, `LoopServer.checkUpgrade`): per definition, how many
/// Spins were checked, how many would migrate from each older version and to which
/// states, and which would be unrecoverable, and why.
public struct UpgradeReport: Sendable, CustomStringConvertible {
    /// One hosted definition (a machine kind, a configured machine Spin, a versioned Swift
    /// kind's configured Spins).
    public struct Definition: Sendable {
        /// What storage keeps its versions under (`kind.door`, `spin.light`).
        public var name: String
        /// The version the configuration runs.
        public var version: Int
        /// The Spins of it that storage holds, and how many of them were checked.
        public var stored = 0
        public var checked = 0
        /// Checked Spins already recorded under `version` (or with nothing recorded).
        public var current = 0
        /// Checked Spins that would migrate, by the version they were recorded under.
        public var migrating: [Int: Int] = [:]
        /// The states the migrating Spins would be in, by the JSON of their `value`
        /// (their whole state for a definition that is not a machine).
        public var states: [String: Int] = [:]
        /// The checked Spins that would be unrecoverable, with why (at most
        /// `UpgradeReport.listedFailures` listed; `failed` counts them all).
        public var failures: [(spin: String, problem: String)] = []
        public var failed = 0
    }

    /// How many failing Spins a definition lists.
    public static let listedFailures = 50

    /// A problem of the definition itself (a migration naming a state the stored older
    /// version lacks, a stored version that no longer loads), by definition name: no Spin
    /// of it was checked.
    public var problems: [(name: String, problem: String)] = []
    public var definitions: [Definition] = []

    /// Whether the upgrade would leave every checked Spin running.
    public var passes: Bool { problems.isEmpty && definitions.allSatisfy { $0.failed == 0 } }

    public var description: String {
        var lines: [String] = []
        for (name, problem) in problems { lines.append("\(name): cannot upgrade: \(problem)") }
        for definition in definitions {
            let sample = definition.checked < definition.stored ? " (a sample of \(definition.stored))" : ""
            var parts = ["\(definition.checked) Spin(s) checked\(sample)", "\(definition.current) at version \(definition.version)"]
            for (from, count) in definition.migrating.sorted(by: { $0.key < $1.key }) {
                parts.append("\(count) migrate from version \(from)")
            }
            if !definition.states.isEmpty {
                let states = definition.states.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
                    .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                parts.append("to \(states)")
            }
            parts.append("\(definition.failed) would be unrecoverable")
            lines.append("\(definition.name), version \(definition.version): " + parts.joined(separator: "; "))
            for (spin, problem) in definition.failures { lines.append("  \(spin): \(problem)") }
            if definition.failed > definition.failures.count {
                lines.append("  ... and \(definition.failed - definition.failures.count) more")
            }
        }
        return lines.joined(separator: "\n")
    }
}

extension LoopServer {
    /// Replays every stored Spin of the configured definitions — the configured Spins of a
    /// machine file or of a Swift kind registered with a version, and the Spins made of
    /// each machine kind (at most `sample` of each kind, chosen at random, when given) —
    /// through them and their migrations, as a start would, changing nothing: no journal,
    /// epoch or definition is written, and `host`'s Spins are not touched. The storage is opened
    /// as a server opens it: a storage directory must not be in use by a running server
    /// (check a copy of it); on PostgreSQL the check runs beside the cluster, as a node of
    /// its own name (`cluster.node`).
    /// - Throws: when the storage cannot be opened or read.
    public static func checkUpgrade(configuration: SpinServerConfiguration, host: SpinHost, sample: Int? = nil,
                                    logger: Logger) throws -> UpgradeReport {
        let storage = configuration.storage
        guard storage.persists else { return UpgradeReport() }
        let journal = Journal(store: makeStore(storage, node: configuration.cluster.node, fence: nil),
                              storage: storage, logger: logger)
        try journal.open()
        defer { journal.abandon() }
        var report = UpgradeReport()
        // The configured Spins of a versioned definition (a machine Spin is its own; the
        // Spins of a versioned Swift kind share one), each replayed by a fresh instance.
        var configured: [String: UpgradeReport.Definition] = [:]
        var order: [String] = []
        for spin in host.spins {
            guard let definition = spin.storedDefinition else { continue }
            let name = definition.storedName
            if configured[name] == nil {
                if report.problems.contains(where: { $0.name == name }) { continue }
                if let problem = try journal.take(definition) {
                    report.problems.append((name, problem))
                    continue
                }
                configured[name] = UpgradeReport.Definition(name: name, version: definition.version)
                order.append(name)
            }
            configured[name]?.stored += 1
            check(spin.fresh(), in: journal, into: &configured[name]!)
        }
        report.definitions += order.compactMap { configured[$0] }
        // Each machine kind, over the Spins made of it.
        if let factory = host.factory {
            let made = try sampled(journal, sample: sample)
            for kind in factory.machineKinds {
                guard let definition = factory.machineTraits(of: kind)?.stored else { continue }
                if let problem = try journal.take(definition) {
                    report.problems.append((definition.storedName, problem))
                    continue
                }
                var entry = UpgradeReport.Definition(name: definition.storedName, version: definition.version)
                entry.stored = made.counts[kind] ?? 0
                for name in (made.names[kind] ?? []).sorted() {
                    guard let spin = factory.machineSpin(named: name, of: kind) else { continue }
                    check(spin, in: journal, into: &entry)
                }
                report.definitions.append(entry)
            }
        }
        return report
    }

    /// Recovers `spin` from what storage holds of it, into `entry`.
    private static func check(_ spin: any HostedSpin, in journal: Journal, into entry: inout UpgradeReport.Definition) {
        entry.checked += 1
        do {
            let stored = try journal.store.read(spin: spin.name, repair: false)
            let recovered = try spin.recover(snapshot: stored.snapshot, records: stored.records, keep: 0)
            guard let migration = recovered.migration else {
                entry.current += 1
                return
            }
            entry.migrating[Int(migration.migratedFrom), default: 0] += 1
            entry.states[stateValue(recovered.state), default: 0] += 1
        } catch {
            entry.failed += 1
            if entry.failures.count < UpgradeReport.listedFailures {
                entry.failures.append((spin.name, (error as? RecoveryError)?.problem ?? "\(error)"))
            }
        }
    }

    /// A machine state's `value` as JSON text; the whole state otherwise.
    private static func stateValue(_ state: JSONValue) -> String {
        guard let parsed = try? JSONValue(parsing: state.bytes), case .object(let members) = parsed,
              let value = members.first(where: { $0.0 == "value" })?.1 else {
            return String(decoding: state.bytes, as: UTF8.self)
        }
        return String(decoding: value.bytes, as: UTF8.self)
    }

    /// The Spins made at run time, by kind: how many there are, and the names of at most
    /// `sample` of each (uniformly at random: a reservoir over the pages), or all.
    private static func sampled(_ journal: Journal, sample: Int?) throws -> (counts: [String: Int], names: [String: [String]]) {
        var counts: [String: Int] = [:]
        var names: [String: [String]] = [:]
        var after: String?
        while true {
            let page = try journal.storedSpins(prefix: "", after: after, limit: 1000)
            for spin in page {
                counts[spin.kind, default: 0] += 1
                let seen = counts[spin.kind] ?? 1
                if let sample, seen > sample {
                    let slot = Int.random(in: 0..<seen)
                    if slot < sample { names[spin.kind]?[slot] = spin.name }
                } else {
                    names[spin.kind, default: []].append(spin.name)
                }
            }
            guard let last = page.last, page.count == 1000 else { break }
            after = last.name
        }
        return (counts, names)
    }
}

extension Journal {
    /// Gives `definition` the older versions storage holds, storing nothing: nil, or what
    /// is wrong with it.
    func take(_ definition: any StoredDefinition) throws -> String? {
        let stored = try store.definitions(named: definition.storedName)
        return definition.take(older: stored.filter { $0.key < definition.version }).problem
    }
}
