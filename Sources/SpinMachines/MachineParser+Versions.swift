// A machine file's `version` and `migrations` (see `MachineMigration`).
extension MachineParser {
    static let migrationKeys: Set<String> = ["states", "context"]
    static let migrationContextKeys: Set<String> = ["set", "rename", "remove"]

    /// `"version": n`, a whole number from 1; 1 when the file has none.
    mutating func parseVersion(_ value: MachineValue?) -> Int {
        guard let value else { return 1 }
        guard case .number(let number) = value, number >= 1, number <= Double(Int32.max), number.rounded() == number else {
            issue(JSONPath().key("version"), .badValue("a version is a whole number from 1 (the first version is 1)"))
            return 1
        }
        return Int(number)
    }

    /// `"migrations": {"<from version>": {"states": {"<old path>": "<new path>"}, "context":
    /// {"set": {..}, "rename": {"old": "new"}, "remove": ["key"]}}}`. The new paths name
    /// states of this file (the old ones are checked against the stored older version,
    /// `MachineDefinition.migrationIssues(from:)`).
    mutating func parseMigrations(_ value: MachineValue?, version: Int, nodes: [[String]: StateNode]) -> [Int: MachineMigration] {
        let path = JSONPath().key("migrations")
        guard let members = objectMembers(value, at: path) else { return [:] }
        var migrations: [Int: MachineMigration] = [:]
        for key in members.keys.sorted() {
            let at = path.key(key)
            guard key.allSatisfy(\.isASCII), let from = Int(key), from >= 1, !key.hasPrefix("+"), String(from) == key else {
                issue(at, .badValue("a migration is keyed by the version it starts from, a whole number from 1"))
                continue
            }
            guard from < version else {
                issue(at, .badValue("a migration starts from an older version than this file's (\"version\": \(version))"))
                continue
            }
            guard let body = objectMembers(members[key], at: at) else { continue }
            checkKeys(body, allowed: Self.migrationKeys, at: at)
            var migration = MachineMigration()
            if let states = objectMembers(body["states"], at: at.key("states")) {
                for old in states.keys.sorted() {
                    let entryPath = at.key("states").key(old)
                    guard let target = states[old].flatMap({ string($0, at: entryPath) }) else { continue }
                    guard let oldPath = Self.statePath(old) else {
                        issue(entryPath, .badValue("a state is named by its path from the top, its names joined by dots (\"door.opened\")"))
                        continue
                    }
                    guard let newPath = Self.statePath(target), let node = nodes[newPath] else {
                        let spellings = declared.map { $0.joined(separator: ".") }.sorted()
                        issue(entryPath, .unknownState(target, suggestion: MachineReferences.nearestState(target, among: spellings)))
                        continue
                    }
                    guard node.kind != .history, node.kind != .parallel else {
                        issue(entryPath, .badValue("\"\(target)\" is a \(node.kind) state: a migration maps to a state a machine can be in (a leaf, or a compound state, entered by its initial states)"))
                        continue
                    }
                    migration.states[oldPath] = newPath
                }
            }
            if let context = objectMembers(body["context"], at: at.key("context")) {
                let contextPath = at.key("context")
                checkKeys(context, allowed: Self.migrationContextKeys, at: contextPath)
                if let set = objectMembers(context["set"], at: contextPath.key("set")) { migration.set = set }
                if let rename = objectMembers(context["rename"], at: contextPath.key("rename")) {
                    for old in rename.keys.sorted() {
                        guard let new = rename[old].flatMap({ string($0, at: contextPath.key("rename").key(old)) }) else { continue }
                        migration.rename[old] = new
                    }
                }
                if let remove = context["remove"] {
                    if case .array(let keys) = remove {
                        for (index, key) in keys.enumerated() {
                            if let name = string(key, at: contextPath.key("remove").index(index)) { migration.remove.append(name) }
                        }
                    } else {
                        issue(contextPath.key("remove"), .expected("an array of context keys"))
                    }
                }
                for key in migration.set.keys.sorted() where migration.rename[key] != nil {
                    issue(contextPath.key("set").key(key), .badValue("\"\(key)\" is renamed too: set the new name, \"\(migration.rename[key]!)\""))
                }
            }
            migrations[from] = migration
        }
        return migrations
    }

    /// `["door", "opened"]` of `"door.opened"`; nil for an empty name in it.
    static func statePath(_ text: String) -> [String]? {
        let names = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return names.contains(where: \.isEmpty) ? nil : names
    }
}
