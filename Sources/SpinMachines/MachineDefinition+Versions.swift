/// How the Spins of an older version of a machine file become Spins of a newer one: one
/// entry of the newer file's `"migrations"`, keyed by the version it starts from.
///
/// ```json
/// "version": 2,
/// "migrations": { "1": { "states": { "green": "go", "door.opened": "open" },
///                        "context": { "set": { "honks": 0 }, "rename": { "cycles": "rounds" },
///                                     "remove": [ "legacy" ] } } }
/// ```
///
/// A state is mapped by the longest old path that starts its path (`door.opened` maps
/// `door.opened.ajar` to `open.ajar`); a path no entry starts stays as it is. A compound
/// state mapped to is entered through its initial states. Context: keys renamed, then
/// removed, then set; a key the newer file's `context` has and the state lacks then takes
/// the value it has when a Spin of the newer version starts. What the newer version cannot
/// take after that — a state it does not define, a history record of one, a pending
/// delayed `raise` of an event no state takes — is a `MachineMigrationFailure`.
public struct MachineMigration: Sendable, Equatable {
    /// Old state path → new state path.
    public var states: [[String]: [String]] = [:]
    /// Context keys given a value (after `rename` and `remove`).
    public var set: [String: MachineValue] = [:]
    /// Context keys renamed: old name → new name.
    public var rename: [String: String] = [:]
    /// Context keys removed.
    public var remove: [String] = []

    public init() {}
}

/// Why a state of an older version of a machine cannot become a state of the newer one.
public struct MachineMigrationFailure: Error, Sendable, CustomStringConvertible {
    /// The version the state was of, and the one it was to become.
    public let from: Int
    public let to: Int
    /// The state path at fault (`"door.opened"`), when one is.
    public let path: String?
    /// What is wrong and how to fix it.
    public let reason: String

    public var description: String { "version \(from) → \(to): \(reason)" }
}

extension MachineDefinition {
    /// The file's `"version"`: 1 when it has none.
    public var version: Int { versioning.version }

    /// The file's `"migrations"`, by the version each starts from.
    public var migrations: [Int: MachineMigration] { versioning.migrations }

    /// `state`, of a Spin of version `older` of this machine, as a state of this version
    /// (see `MachineMigration`): its active states mapped, its context changed, its
    /// history records mapped, its pending delayed events kept.
    /// - Throws: `MachineMigrationFailure` naming what this version cannot take.
    public func migrate(_ state: MachineState, fromVersion older: Int) throws(MachineMigrationFailure) -> MachineState {
        let migration = migrations[older] ?? MachineMigration()
        func fail(_ path: [String]?, _ reason: String) -> MachineMigrationFailure {
            MachineMigrationFailure(from: older, to: version, path: path?.joined(separator: "."), reason: reason)
        }
        func mapped(_ path: [String]) -> [String] {
            for length in stride(from: path.count, through: 1, by: -1) {
                if let target = migration.states[Array(path.prefix(length))] { return target + path.dropFirst(length) }
            }
            return path
        }
        func unmapped(_ path: [String], _ what: String) -> MachineMigrationFailure {
            let name = path.joined(separator: ".")
            return fail(path, "\(what) \"\(name)\" (version \(older)) is not a state of version \(version) (\(file)), and no migration maps it: map it in \"migrations\": {\"\(older)\": {\"states\": {\"\(name)\": \"<a state of version \(version)>\"}}}")
        }
        var leaves: [[String]] = []
        for leaf in state.leaves {
            let target = mapped(leaf)
            guard !target.isEmpty, let node = nodes[target] else { throw unmapped(leaf, "its state") }
            let entered: [String]
            switch node.kind {
            case .atomic, .final: entered = target
            case .compound: entered = Self.initialLeaf(from: target, node: { nodes[$0] }).leaf
            case .parallel, .history:
                throw fail(leaf, "its state \"\(leaf.joined(separator: "."))\" (version \(older)) becomes \"\(target.joined(separator: "."))\", a \(node.kind) state in version \(version): map it to a state a machine can be in, in \"migrations\": {\"\(older)\": {\"states\": ..}}")
            }
            if !leaves.contains(entered) { leaves.append(entered) }
        }
        // Two leaves are active together only in two regions of a parallel state.
        for (index, first) in leaves.enumerated() {
            for second in leaves[(index + 1)...] {
                let shared = Array(zip(first, second).prefix { $0 == $1 }.map(\.0))
                guard nodes[shared]?.kind == .parallel else {
                    throw fail(first, "its states become \"\(first.joined(separator: "."))\" and \"\(second.joined(separator: "."))\" in version \(version), which are not regions of one parallel state: map them to one state")
                }
            }
        }
        var history: [String: [String]] = [:]
        for (parent, recorded) in state.history.sorted(by: { $0.key < $1.key }) {
            let parentPath = parent.isEmpty ? [] : parent.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            let newParent = parentPath.isEmpty ? [] : mapped(parentPath)
            guard nodes[newParent] != nil else { throw unmapped(parentPath, "its history has a record for state") }
            let newRecorded = mapped(recorded)
            guard let node = nodes[newRecorded], node.kind == .atomic || node.kind == .final else {
                throw unmapped(recorded, "its history records")
            }
            history[newParent.joined(separator: ".")] = newRecorded
        }
        var context = state.context
        for (old, new) in migration.rename.sorted(by: { $0.key < $1.key }) {
            if let value = context.removeValue(forKey: old) { context[new] = value }
        }
        for key in migration.remove { context[key] = nil }
        for (key, value) in migration.set { context[key] = value }
        for (key, value) in initialState.context where context[key] == nil { context[key] = value }
        for scheduled in state.scheduled where !takes(scheduled.event.type) {
            throw fail(nil, "a delayed raise of \"\(scheduled.event.type)\" is pending (key \(scheduled.key)) and no state of version \(version) takes that event: let it be sent before upgrading, or take it in version \(version)")
        }
        let migrated = MachineState(leaves: leaves, context: context, history: history, scheduled: state.scheduled)
        if let problem = problem(taking: migrated) { throw fail(nil, problem) }
        return migrated
    }

    /// `state`, of a Spin of version `from`, as a state of this version, through the
    /// versions between: at each version, the migration this file declares from it when it
    /// has one, else that of the lowest newer version in `older` that does, else straight
    /// to this version. Returns the versions it went through, `from` and this one included.
    /// - Parameter older: the older versions of this machine, by version.
    public func upgrade(_ state: MachineState, from: Int,
                        through older: [Int: MachineDefinition]) throws(MachineMigrationFailure) -> (state: MachineState, versions: [Int]) {
        var (current, versions, at) = (state, [from], from)
        while at < version {
            let next: MachineDefinition
            if migrations[at] != nil {
                next = self
            } else if let between = older.keys.sorted().first(where: { $0 > at && $0 < version && older[$0]?.migrations[at] != nil }),
                      let definition = older[between] {
                next = definition
            } else {
                next = self
            }
            do {
                current = try next.migrate(current, fromVersion: at)
            } catch {
                throw MachineMigrationFailure(from: from, to: version, path: error.path,
                                              reason: next.version == version ? error.reason : "at version \(next.version): \(error.reason)")
            }
            at = next.version
            versions.append(at)
        }
        return (current, versions)
    }

    /// What is wrong with this file's migration from `older` (the stored copy of that
    /// version): each old state path it maps that `older` does not define.
    public func migrationIssues(from older: MachineDefinition) -> [MachineIssue] {
        guard let migration = migrations[older.version] else { return [] }
        let spellings = older.statePaths.map { $0.joined(separator: ".") }
        return migration.states.keys.sorted { $0.lexicographicallyPrecedes($1) }.compactMap { path in
            guard older.nodes[path] == nil else { return nil }
            let name = path.joined(separator: ".")
            return MachineIssue(file: file, path: JSONPath().key("migrations").key(String(older.version)).key("states").key(name).text,
                                kind: .unknownOlderState(name, version: older.version,
                                                         suggestion: MachineReferences.nearestState(name, among: spellings)))
        }
    }

    /// Whether some state of this version takes events of `type`.
    func takes(_ type: String) -> Bool { MachineParser.handles(type, among: versioning.handledEvents) }
}
