import Foundation
import SpinJSON

extension SpinServerConfiguration {
    /// A template of Spins made at run time (`kinds` in the config file): what makes an
    /// instance (a machine file or a registered Swift kind), which names it may take, the
    /// Gears its instances use, and whether an event for an unknown name makes one.
    ///
    /// ```json
    /// {"name": "door", "machine": "machines/door.json", "names": "door-*",
    ///  "gears": {"doors": "doors-{key}"}, "create": "onEvent"}
    /// ```
    /// `PUT /v1/spins/door-7 {"kind":"door"}` makes `door-7`; its machine's Gear `doors` is
    /// hosted as `doors-7` (`{key}` is what the `*` of `names` matched), shared with every
    /// other instance whose key is `7`.
    public struct KindEntry: Sendable, Equatable {
        /// How instances come to be.
        public enum Creation: String, Sendable, Equatable, CaseIterable {
            /// Only by `PUT /v1/spins/{name}` (the default).
            case explicit
            /// Also by the first event or stream for an unknown name that `names` matches.
            case onEvent
        }

        /// The kind's name, as `PUT /v1/spins/{name}` `{"kind": ..}` gives it.
        public var name: String
        /// The registered Swift kind that makes an instance, or `machine`.
        public var kind: String
        /// The machine file, for a kind made of one.
        public var machine: MachineSource?
        /// The names instances may take; nil: any valid name.
        public var names: NamePattern?
        /// The Gears instances attach to: the Gear's name as the kind knows it (the name a
        /// machine declares in its `gears`; for a Swift kind, its one Gear) → the hosted
        /// Gear's name, where `{key}` stands for what the `*` of `names` matched.
        public var gears: [String: String]
        public var create: Creation

        public init(name: String, kind: String, machine: MachineSource? = nil, names: NamePattern? = nil,
                    gears: [String: String] = [:], create: Creation = .explicit) {
            self.name = name
            self.kind = kind
            self.machine = machine
            self.names = names
            self.gears = gears
            self.create = create
        }

        /// The key `name` gives this kind's Gear templates (what `*` matched), or nil when
        /// the name is not one of the kind's.
        public func key(of name: String) -> String? {
            guard let names else { return "" }
            return names.key(of: name)
        }

        /// The Gear names an instance named `name` attaches to, by the names the kind knows
        /// them by (`{key}` replaced); nil when `name` is not one of the kind's names.
        public func gears(of name: String) -> [String: String]? {
            guard let key = key(of: name) else { return nil }
            return hostedGearTemplates.mapValues { NamePattern.filling($0, with: key) }
        }

        /// The Gears every instance shares: the kind's Gears whose names have no `{key}`.
        public var fixedGears: [String] {
            gearTemplates.filter { !$0.contains(NamePattern.keyPlaceholder) }
        }

        /// The hosted names of the kind's Gears, `{key}` unfilled, each once, sorted.
        var gearTemplates: [String] { Set(hostedGearTemplates.values).sorted() }

        /// The Gears instances attach to, by the names the kind knows them by, as hosted
        /// names with `{key}` unfilled: a machine's declared Gears, a Swift kind's `gears`.
        private var hostedGearTemplates: [String: String] { machine != nil ? declaredGears : gears }

        /// The Gears a machine kind's instances attach to, by the names its machine declares:
        /// a declared Gear without a template keeps its own name (one Gear for all of them).
        var declaredGears: [String: String] {
            var all: [String: String] = [:]
            for name in machine?.definition.gears.keys.sorted() ?? [] { all[name] = name }
            return all.merging(gears) { $1 }
        }
    }

    /// Which names a kind's instances may take: letters, digits, `.`, `_` and `-`, with at
    /// most one `*`, which matches any run of them (none included). `door-*` matches `door-`
    /// and `door-7`; the run `*` matched (`7`) is the instance's key.
    public struct NamePattern: Sendable, Equatable, CustomStringConvertible {
        /// What a Gear template says for the key.
        public static let keyPlaceholder = "{key}"

        public let pattern: String
        private let prefix: String
        private let suffix: String?

        /// Nil when `pattern` is not a name with at most one `*`.
        public init?(_ pattern: String) {
            let parts = pattern.split(separator: "*", omittingEmptySubsequences: false).map(String.init)
            guard !pattern.isEmpty, parts.count <= 2,
                  parts.allSatisfy({ $0.isEmpty || SpinHost.isNameText($0) }) else { return nil }
            self.pattern = pattern
            self.prefix = parts[0]
            self.suffix = parts.count == 2 ? parts[1] : nil
        }

        public var description: String { pattern }

        /// Whether the pattern has a `*` (so a key).
        public var hasWildcard: Bool { suffix != nil }

        /// What `*` matched in `name`, or nil when `name` does not match ("" for a pattern
        /// without `*` that is `name`).
        public func key(of name: String) -> String? {
            guard let suffix else { return name == prefix ? "" : nil }
            let bytes = name.utf8
            guard bytes.count >= prefix.utf8.count + suffix.utf8.count,
                  bytes.starts(with: prefix.utf8), bytes.reversed().starts(with: suffix.utf8.reversed()) else { return nil }
            let start = name.utf8.index(name.utf8.startIndex, offsetBy: prefix.utf8.count)
            let end = name.utf8.index(name.utf8.endIndex, offsetBy: -suffix.utf8.count)
            return String(name.utf8[start..<end])
        }

        public func matches(_ name: String) -> Bool { key(of: name) != nil }

        /// The name whose key is `key` (`door-*`, `7`: `door-7`); for a pattern without `*`,
        /// the pattern when `key` is empty, else nil.
        public func name(key: String) -> String? {
            guard let suffix else { return key.isEmpty ? prefix : nil }
            return prefix + key + suffix
        }

        /// `template` with every `{key}` replaced by `key` (on each make: bytes, not
        /// Foundation's string search).
        static func filling(_ template: String, with key: String) -> String {
            let placeholder = Array(keyPlaceholder.utf8)
            let bytes = Array(template.utf8)
            var filled: [UInt8] = []
            filled.reserveCapacity(bytes.count + key.utf8.count)
            var index = 0
            while index < bytes.count {
                if index + placeholder.count <= bytes.count, bytes[index..<(index + placeholder.count)].elementsEqual(placeholder) {
                    filled += key.utf8
                    index += placeholder.count
                } else {
                    filled.append(bytes[index])
                    index += 1
                }
            }
            return String(decoding: filled, as: UTF8.self)
        }

        /// Whether some name matches both patterns.
        public func overlaps(_ other: NamePattern) -> Bool {
            switch (suffix, other.suffix) {
            case (nil, nil): return prefix == other.prefix
            case (nil, _): return other.matches(prefix)
            case (_, nil): return matches(other.prefix)
            case (let mine?, let theirs?):
                let prefixes = prefix.utf8.starts(with: other.prefix.utf8) || other.prefix.utf8.starts(with: prefix.utf8)
                let suffixes = mine.utf8.reversed().starts(with: theirs.utf8.reversed())
                    || theirs.utf8.reversed().starts(with: mine.utf8.reversed())
                return prefixes && suffixes
            }
        }
    }
}

// MARK: - The config file's `kinds`

extension SpinServerConfiguration.Builder {
    typealias KindEntry = SpinServerConfiguration.KindEntry
    typealias NamePattern = SpinServerConfiguration.NamePattern

    /// `kinds`: `[{"name", "machine" | "kind", "names", "gears", "create"}]`, checked against
    /// the registered kinds; a kind's Gears need no line in `gears` (they are the kind's).
    static func kinds(_ values: [JSONValue], kinds registered: SpinKinds, reader: FileReader,
                      loaded: inout [String: SpinServerConfiguration.MachineSource],
                      readFile: (String) throws -> Data) throws(ConfigurationError) -> [KindEntry] {
        var entries: [KindEntry] = []
        for (index, value) in values.enumerated() {
            let path = "kinds[\(index)]"
            let entry = try reader.object(value, at: path, known: ["name", "machine", "kind", "names", "gears", "gear", "create"])
            let name = try reader.string(try reader.required(entry["name"], at: "\(path).name"), at: "\(path).name")
            try Self.name(name, reader: reader, at: "\(path).name")
            if let first = entries.firstIndex(where: { $0.name == name }) {
                throw reader.error("\(path).name", "kind \"\(name)\" is already listed at kinds[\(first)]")
            }
            var kind = KindEntry(name: name, kind: SpinServerConfiguration.machineKind)
            if let value = entry["names"], value != .null {
                let text = try reader.string(value, at: "\(path).names")
                guard let pattern = NamePattern(text) else {
                    throw reader.error("\(path).names", "\"\(text)\" is not a name pattern: use letters, digits, '.', '_' or '-' with at most one '*' (\"door-*\")")
                }
                kind.names = pattern
            }
            if let value = entry["create"], value != .null {
                let text = try reader.string(value, at: "\(path).create")
                guard let creation = KindEntry.Creation(rawValue: text) else {
                    throw reader.error("\(path).create", "unknown choice \"\(text)\" (use explicit or onEvent)")
                }
                kind.create = creation
            }
            if kind.create == .onEvent, kind.names?.hasWildcard != true {
                throw reader.error("\(path).create", "\"onEvent\" makes a Spin for any name \"names\" matches: give \"names\" a '*' (\"\(name)-*\")")
            }
            var templates: [(key: String, value: String, path: String)] = []
            if let gears = try reader.optionalMembers(entry["gears"], at: "\(path).gears") {
                for key in gears.keys.sorted() {
                    let gearPath = "\(path).gears.\(key)"
                    templates.append((key, try reader.string(gears[key] ?? .null, at: gearPath), gearPath))
                }
            }
            if let value = entry["gear"], value != .null {
                guard templates.isEmpty else { throw reader.error("\(path).gear", "give \"gear\" or \"gears\", not both") }
                templates.append(("gear", try reader.string(value, at: "\(path).gear"), "\(path).gear"))
            }
            for template in templates {
                try Self.gearTemplate(template.value, names: kind.names, reader: reader, at: template.path)
                kind.gears[template.key] = template.value
            }
            if let value = entry["machine"], value != .null {
                if let other = entry["kind"], other != .null {
                    throw reader.error("\(path).kind", "a kind made of a machine file has no \"kind\": remove it, or \"machine\"")
                }
                if entry["gear"] != nil, entry["gear"] != .null {
                    throw reader.error("\(path).gear", "a machine's Gears are named in its file: map them with \"gears\": {\"<declared name>\": \"<hosted name>\"}")
                }
                let file = try reader.string(value, at: "\(path).machine")
                let source: SpinServerConfiguration.MachineSource
                if let cached = loaded[file] {
                    source = cached
                } else {
                    do {
                        // A kind's Gears are its own: any name its machine declares is hosted.
                        source = try .load(path: file, configFile: reader.source, hostGears: nil, readFile: readFile)
                    } catch {
                        throw reader.error("\(path).machine", error.issues.map(\.description).joined(separator: "; "))
                    }
                    loaded[file] = source
                }
                let declared = source.definition.gears.keys.sorted()
                for template in templates where !declared.contains(template.key) {
                    throw reader.error(template.path, "machine \(file) declares no Gear \"\(template.key)\" (it declares: \(declared.isEmpty ? "none" : declared.joined(separator: ", ")))")
                }
                kind.machine = source
            } else {
                let registeredKind = try reader.string(try reader.required(entry["kind"], at: "\(path).kind"), at: "\(path).kind")
                guard let gearUse = registered.kinds[registeredKind] else {
                    throw reader.error("\(path).kind", "unknown kind \"\(registeredKind)\" (known: \(registered.knownList), or give \"machine\")")
                }
                kind.kind = registeredKind
                switch (gearUse, templates.count) {
                case (.none, 0), (.required, 1): break
                case (.none, _):
                    throw reader.error(templates[0].path, "kind \"\(registeredKind)\" does not attach to a Gear: remove it")
                case (.required, 0):
                    throw reader.error("\(path).gear", "missing: kind \"\(registeredKind)\" attaches to a Gear; name it (\"gear\": \"auth-{key}\")")
                case (.required, _):
                    throw reader.error("\(path).gears", "kind \"\(registeredKind)\" attaches to one Gear: name one")
                }
            }
            for (other, earlier) in entries.enumerated()
            where kind.create == .onEvent && earlier.create == .onEvent {
                if let mine = kind.names, let theirs = earlier.names, mine.overlaps(theirs) {
                    throw reader.error("\(path).names", "\"\(mine)\" and kinds[\(other)].names \"\(theirs)\" both match some names, and both make Spins on events: an event for such a name could make either kind")
                }
            }
            entries.append(kind)
        }
        return entries
    }

    /// A hosted Gear's name with `{key}` where an instance's key goes: a name once the key
    /// is put in; `{key}` only with a `names` that has a `*`.
    private static func gearTemplate(_ template: String, names: NamePattern?, reader: FileReader,
                                     at path: String) throws(ConfigurationError) {
        let hasKey = template.contains(NamePattern.keyPlaceholder)
        if hasKey, names?.hasWildcard != true {
            throw reader.error(path, "\(NamePattern.keyPlaceholder) is what the '*' of \"names\" matched: give the kind \"names\" with a '*'")
        }
        let sample = NamePattern.filling(template, with: "k")
        guard !sample.isEmpty, SpinHost.isNameText(sample) else {
            throw reader.error(path, "\"\(template)\" is not a Gear name: use letters, digits, '.', '_' or '-', and {key} for the instance's key")
        }
    }
}
