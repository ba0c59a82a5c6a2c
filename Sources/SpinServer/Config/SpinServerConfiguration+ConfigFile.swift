import Foundation
import SpinWire
import SpinJSON

// MARK: - The config file

extension SpinServerConfiguration.Builder {
    /// - Parameter readFile: reads the machine files that `spins` entries name.
    mutating func apply(file: String, data: Data, kinds: SpinKinds,
                        readFile: (String) throws -> Data) throws(ConfigurationError) {
        // The server's own validator first: it gives a syntax error's line and column, and
        // refuses a key written twice in one object; then the one JSON tree of what it
        // accepted.
        let bytes = Array(data)
        if let problem = JSONValidator.firstProblem(in: bytes) {
            let located = problem.located(in: bytes)
            let text = if case .malformed = problem { "not valid JSON: \(located)" } else { located }
            throw ConfigurationError(source: file, key: "(file)", problem: text)
        }
        let root: JSONValue
        do {
            root = try JSONValue(parsing: bytes)
        } catch {
            throw ConfigurationError(source: file, key: "(file)", problem: "not valid JSON", underlying: error)
        }
        if let (text, path) = root.firstNumberBeyondDouble() {
            throw ConfigurationError(source: file, key: "(file)", problem: "not valid JSON: the number \(text) at \(path.isEmpty ? "(root)" : path) is beyond the range of a double")
        }
        let reader = FileReader(source: file)
        // `$schema` names Config/spin-server.schema.json for editors; the server ignores it.
        let top = try reader.object(root, at: "", known: ["$schema", "listen", "tls", "limits", "auth", "storage", "log", "spins",
                                                          "kinds", "gears", "testing", "cluster"])

        if let listen = try reader.optionalObject(top["listen"], at: "listen", known: ["host", "port", "allowedHosts"]) {
            if let value = listen["host"], value != .null {
                configuration.host = try Self.host(try reader.string(value, at: "listen.host"), source: file, key: "listen.host")
            }
            if let value = listen["port"], value != .null {
                configuration.port = try Self.port(try reader.int(value, at: "listen.port"), source: file, key: "listen.port")
            }
            if let names = try reader.optionalArray(listen["allowedHosts"], at: "listen.allowedHosts") {
                configuration.allowedHosts = try names.enumerated().map { index, value throws(ConfigurationError) in
                    let path = "listen.allowedHosts[\(index)]"
                    return try Self.allowedHost(try reader.string(value, at: path), source: file, key: path)
                }
            }
        }
        if let tls = try reader.optionalObject(top["tls"], at: "tls", known: ["certificate", "key"]) {
            if let value = tls["certificate"], value != .null {
                certificate = (try Self.path(try reader.string(value, at: "tls.certificate"), source: file, key: "tls.certificate"), file)
            }
            if let value = tls["key"], value != .null {
                key = (try Self.path(try reader.string(value, at: "tls.key"), source: file, key: "tls.key"), file)
            }
        }
        let limitNames = SpinServerConfiguration.limitKeys.map(\.name)
        if let limits = try reader.optionalObject(top["limits"], at: "limits", known: limitNames) {
            for (name, path) in SpinServerConfiguration.limitKeys {
                guard let value = limits[name], value != .null else { continue }
                let number = try reader.int(value, at: "limits.\(name)")
                guard number > 0 else {
                    throw reader.error("limits.\(name)", "must be a positive integer, got \(number)")
                }
                configuration.limits[keyPath: path] = number
            }
        }
        if let auth = try reader.optionalObject(top["auth"], at: "auth", known: ["tokens", "rules", "allowedOrigins", "jwt"]) {
            if let tokens = try reader.optionalArray(auth["tokens"], at: "auth.tokens") {
                configuration.tokens = try Self.tokens(tokens, reader: reader)
            }
            if let rules = try reader.optionalArray(auth["rules"], at: "auth.rules") {
                configuration.accessRules = try Self.rules(rules, reader: reader)
            }
            if let jwt = auth["jwt"], jwt != .null {
                try apply(jwt: jwt, reader: reader)
            }
            if let origins = try reader.optionalArray(auth["allowedOrigins"], at: "auth.allowedOrigins") {
                configuration.allowedOrigins = try origins.enumerated().map { index, value throws(ConfigurationError) in
                    let path = "auth.allowedOrigins[\(index)]"
                    return try Self.origin(try reader.string(value, at: path), reader: reader, at: path)
                }
            }
        }
        if let storage = try reader.optionalObject(top["storage"], at: "storage", known: ["backend", "directory", "url", "fsync", "retainEvents", "onCorruption",
                                                                                       "history", "snapshotEvery"]) {
            if let value = storage["backend"], value != .null {
                configuration.storage.backend = try Self.backend(try reader.string(value, at: "storage.backend"),
                                                                 source: file, key: "storage.backend")
                backendSource = file
            }
            if let value = storage["url"], value != .null {
                configuration.storage.url = try Self.databaseURL(try reader.string(value, at: "storage.url"),
                                                                 source: file, key: "storage.url")
                urlSource = file
            }
            if let value = storage["directory"], value != .null {
                configuration.storage.directory = try Self.path(try reader.string(value, at: "storage.directory"),
                                                                source: file, key: "storage.directory")
                storageSource = file
            }
            if let value = storage["fsync"], value != .null {
                let text = try reader.string(value, at: "storage.fsync")
                guard let fsync = Storage.Fsync(rawValue: text) else {
                    throw reader.error("storage.fsync", "unknown policy \"\(text)\" (use always, batch or none)")
                }
                configuration.storage.fsync = fsync
            }
            if let value = storage["retainEvents"], value != .null {
                configuration.storage.retainEvents = try reader.int(value, at: "storage.retainEvents", in: Storage.retainEventsRange)
            }
            if let value = storage["onCorruption"], value != .null {
                let text = try reader.string(value, at: "storage.onCorruption")
                guard let choice = Storage.OnCorruption(rawValue: text) else {
                    throw reader.error("storage.onCorruption", "unknown choice \"\(text)\" (use refuse, truncate or isolate)")
                }
                configuration.storage.onCorruption = choice
            }
            if let value = storage["history"], value != .null {
                let (history, events) = try Self.history(value, reader: reader)
                if let events {
                    // `retainEvents`, when given, was read above.
                    if let retained = storage["retainEvents"], retained != .null, configuration.storage.retainEvents != events {
                        throw reader.error("storage.history", "{\"events\": \(events)} and storage.retainEvents \(configuration.storage.retainEvents) disagree: give one of them")
                    }
                    configuration.storage.retainEvents = events
                }
                configuration.storage.history = history
            }
            if let value = storage["snapshotEvery"], value != .null {
                configuration.storage.snapshotEvery = try reader.int(value, at: "storage.snapshotEvery", in: 10...1_000_000)
            }
        }
        if let log = try reader.optionalObject(top["log"], at: "log", known: ["level", "format"]) {
            if let value = log["level"], value != .null {
                configuration.log.level = try Self.logLevel(try reader.string(value, at: "log.level"), source: file, key: "log.level")
            }
            if let value = log["format"], value != .null {
                configuration.log.format = try Self.logFormat(try reader.string(value, at: "log.format"), source: file, key: "log.format")
            }
        }
        if let testing = try reader.optionalObject(top["testing"], at: "testing", known: ["echoEndpoint"]),
           let value = testing["echoEndpoint"], value != .null {
            configuration.testing.echoEndpoint = try reader.bool(value, at: "testing.echoEndpoint")
        }
        if let cluster = try reader.optionalObject(top["cluster"], at: "cluster", known: ["node", "advertise", "leaseSeconds", "partitions"]) {
            let text = { (name: String) throws(ConfigurationError) -> String? in
                guard let value = cluster[name], value != .null else { return nil }
                return try reader.string(value, at: "cluster.\(name)")
            }
            var leaseSeconds: String?
            if let value = cluster["leaseSeconds"], value != .null {
                leaseSeconds = String(try reader.int(value, at: "cluster.leaseSeconds"))
            }
            var partitions: String?
            if let value = cluster["partitions"], value != .null {
                partitions = String(try reader.int(value, at: "cluster.partitions"))
            }
            try apply(node: try text("node"), advertise: try text("advertise"), leaseSeconds: leaseSeconds,
                      partitions: partitions, sources: (file, file, file), partitionsSource: file)
        }
        if let gears = try reader.optionalArray(top["gears"], at: "gears") {
            configuration.gears = try Self.gears(gears, reader: reader)
        }
        var machines: [String: SpinServerConfiguration.MachineSource] = [:]
        if let spins = try reader.optionalArray(top["spins"], at: "spins") {
            configuration.spins = try Self.spins(spins, gears: configuration.gears, kinds: kinds, reader: reader,
                                                 loaded: &machines, readFile: readFile)
        }
        if let entries = try reader.optionalArray(top["kinds"], at: "kinds") {
            configuration.kinds = try Self.kinds(entries, kinds: kinds, reader: reader, loaded: &machines, readFile: readFile)
        }
        // A Gear no Spin attaches to is most likely a typo in a Spin's `gear`.
        let kindGears = Set(configuration.kinds.flatMap { $0.fixedGears })
        for (index, gear) in configuration.gears.enumerated()
        where !kindGears.contains(gear.name) && !configuration.spins.contains(where: { $0.attachedGears.contains(gear.name) }) {
            throw reader.error("gears[\(index)].name", "no Spin attaches to Gear \"\(gear.name)\" (set \"gear\": \"\(gear.name)\" on a Swift Spin's entry, declare it in a machine file's \"gears\", or remove it)")
        }
    }
}

/// The config file's sections, checked with the key path of every value.
extension SpinServerConfiguration.Builder {
    /// `storage.history`: `{"events": K}` (also the events kept for streams,
    /// `retainEvents`, which it sets), `{"days": D}` or `"all"`.
    static func history(_ value: JSONValue, reader: FileReader) throws(ConfigurationError)
        -> (SpinServerConfiguration.Storage.History, events: Int?) {
        let expected = "must be {\"events\": K}, {\"days\": D} or \"all\""
        if case .string(let text) = value {
            guard text == "all" else { throw reader.error("storage.history", "unknown choice \"\(text)\": \(expected)") }
            return (.all, nil)
        }
        guard case .object(let members) = value, members.count == 1, let (key, count) = members.first else {
            throw reader.error("storage.history", expected)
        }
        switch key {
        case "events":
            return (.events, try reader.int(count, at: "storage.history.events", in: SpinServerConfiguration.Storage.retainEventsRange))
        case "days":
            return (.days(try reader.int(count, at: "storage.history.days", in: 1...36_500)), nil)
        default:
            throw reader.error("storage.history", "unknown key \"\(key)\": \(expected)")
        }
    }

    static func tokens(_ values: [JSONValue], reader: FileReader) throws(ConfigurationError) -> [AccessToken] {
        var tokens: [AccessToken] = []
        for (index, value) in values.enumerated() {
            let path = "auth.tokens[\(index)]"
            let entry = try reader.object(value, at: path, known: ["token", "scopes", "subject", "spin", "gear"])
            let token = try reader.string(try reader.required(entry["token"], at: "\(path).token"), at: "\(path).token")
            guard !token.isEmpty, !token.contains(where: \.isWhitespace) else {
                throw reader.error("\(path).token", "must be non-empty with no spaces")
            }
            // The token itself never goes into a message: it is a secret.
            if let first = tokens.firstIndex(where: { $0.token == token }) {
                throw reader.error("\(path).token", "the same token as auth.tokens[\(first)]")
            }
            let grants = try Self.grants(entry, at: path, reader: reader)
            let subject = try entry["subject"].map { (value) throws(ConfigurationError) in
                try Self.subject(value, at: "\(path).subject", reader: reader)
            }
            let scopeValues = try reader.optionalArray(entry["scopes"], at: "\(path).scopes") ?? []
            guard !scopeValues.isEmpty || !grants.isEmpty else {
                throw reader.error(entry["scopes"] == nil ? "\(path)" : "\(path).scopes",
                                   "must list at least one scope (read, write or admin) or grant Spin or Gear permissions (\"spin\", \"gear\")")
            }
            var scopes: [Scope] = []
            for (scopeIndex, scopeValue) in scopeValues.enumerated() {
                let scopePath = "\(path).scopes[\(scopeIndex)]"
                let name = try reader.string(scopeValue, at: scopePath)
                guard let scope = Scope(rawValue: name) else {
                    throw reader.error(scopePath, "unknown scope \"\(name)\" (use read, write or admin)")
                }
                scopes.append(scope)
            }
            tokens.append(AccessToken(token: token, scopes: scopes, subject: subject, grants: grants))
        }
        return tokens
    }

    /// `auth.rules`: `[{"subject": pattern, "spin": {..}, "gear": {..}}]`.
    static func rules(_ values: [JSONValue], reader: FileReader) throws(ConfigurationError) -> [AccessRule] {
        var rules: [AccessRule] = []
        for (index, value) in values.enumerated() {
            let path = "auth.rules[\(index)]"
            let entry = try reader.object(value, at: path, known: ["subject", "spin", "gear"])
            let subject = try Self.subject(try reader.required(entry["subject"], at: "\(path).subject"),
                                           at: "\(path).subject", reader: reader)
            let grants = try Self.grants(entry, at: path, reader: reader)
            guard !grants.isEmpty else {
                throw reader.error(path, "grants nothing: give \"spin\" and/or \"gear\" permissions")
            }
            rules.append(AccessRule(subject: subject, grants: grants))
        }
        return rules
    }

    /// A subject (or a subject pattern): a non-empty string.
    private static func subject(_ value: JSONValue, at path: String, reader: FileReader) throws(ConfigurationError) -> String {
        let subject = try reader.string(value, at: path)
        guard !subject.isEmpty else { throw reader.error(path, "must not be empty") }
        return subject
    }

    /// The `spin` (`{"read": [..], "write": [..], "admin": [..]}`) and `gear`
    /// (`{"read": [..]}`) permissions of a token or a rule: lists of name patterns.
    private static func grants(_ entry: [String: JSONValue], at path: String, reader: FileReader) throws(ConfigurationError) -> Grants {
        func patterns(_ value: JSONValue?, at path: String) throws(ConfigurationError) -> [String] {
            guard let values = try reader.optionalArray(value, at: path) else { return [] }
            return try values.enumerated().map { index, value throws(ConfigurationError) in
                let pattern = try reader.string(value, at: "\(path)[\(index)]")
                guard !pattern.isEmpty, !pattern.contains(where: \.isWhitespace) else {
                    throw reader.error("\(path)[\(index)]", "a name pattern must be non-empty with no spaces (* matches any run of characters)")
                }
                return pattern
            }
        }
        var grants = Grants()
        if let spin = try reader.optionalObject(entry["spin"], at: "\(path).spin", known: ["read", "write", "admin"]) {
            grants.spinRead = try patterns(spin["read"], at: "\(path).spin.read")
            grants.spinWrite = try patterns(spin["write"], at: "\(path).spin.write")
            grants.spinAdmin = try patterns(spin["admin"], at: "\(path).spin.admin")
        }
        if let gear = try reader.optionalObject(entry["gear"], at: "\(path).gear", known: ["read"]) {
            grants.gearRead = try patterns(gear["read"], at: "\(path).gear.read")
        }
        return grants
    }

    /// An origin as browsers send it (RFC 6454 §6.1): scheme, host, optional port;
    /// no path, no trailing slash.
    static func origin(_ text: String, reader: FileReader, at path: String) throws(ConfigurationError) -> String {
        let lower = text.lowercased()
        let rest = lower.hasPrefix("https://") ? lower.dropFirst(8) : lower.hasPrefix("http://") ? lower.dropFirst(7) : nil
        guard let rest, !rest.isEmpty, !rest.contains(where: { "/?#@ ".contains($0) }) else {
            throw reader.error(path, "\"\(text)\" is not an origin: write scheme://host[:port], e.g. https://dash.example")
        }
        return text
    }

    static func gears(_ values: [JSONValue], reader: FileReader) throws(ConfigurationError) -> [GearEntry] {
        var gears: [GearEntry] = []
        for (index, value) in values.enumerated() {
            let path = "gears[\(index)]"
            let entry = try reader.object(value, at: path, known: ["name"])
            let name = try reader.string(try reader.required(entry["name"], at: "\(path).name"), at: "\(path).name")
            try Self.name(name, reader: reader, at: "\(path).name")
            if let first = gears.firstIndex(where: { $0.name == name }) {
                throw reader.error("\(path).name", "Gear \"\(name)\" is already listed at gears[\(first)]")
            }
            gears.append(GearEntry(name: name))
        }
        return gears
    }

    static func spins(_ values: [JSONValue], gears: [GearEntry], kinds: SpinKinds,
                      reader: FileReader, loaded machines: inout [String: SpinServerConfiguration.MachineSource],
                      readFile: (String) throws -> Data) throws(ConfigurationError) -> [SpinEntry] {
        var spins: [SpinEntry] = []
        // Where each name was listed, and each machine file read: a config of thousands of
        // Spins of one machine loads in time linear in its length.
        var listed: [String: Int] = [:]
        for (index, value) in values.enumerated() {
            let path = "spins[\(index)]"
            let entry = try reader.object(value, at: path, known: ["name", "kind", "gear", "machine"])
            let name = try reader.string(try reader.required(entry["name"], at: "\(path).name"), at: "\(path).name")
            try Self.name(name, reader: reader, at: "\(path).name")
            if let first = listed[name] {
                throw reader.error("\(path).name", "Spin \"\(name)\" is already listed at spins[\(first)]")
            }
            listed[name] = index
            if let value = entry["machine"], value != .null {
                spins.append(try machine(named: name, file: try reader.string(value, at: "\(path).machine"), entry: entry,
                                         at: path, gears: gears, reader: reader, loaded: &machines, readFile: readFile))
                continue
            }
            let kind = try reader.string(try reader.required(entry["kind"], at: "\(path).kind"), at: "\(path).kind")
            guard let gearUse = kinds.kinds[kind] else {
                throw reader.error("\(path).kind", "unknown kind \"\(kind)\" (known: \(kinds.knownList))")
            }
            var gear: String?
            if let value = entry["gear"], value != .null {
                gear = try reader.string(value, at: "\(path).gear")
            }
            switch (gearUse, gear) {
            case (.none, .some):
                throw reader.error("\(path).gear", "kind \"\(kind)\" does not attach to a Gear: remove \"gear\"")
            case (.required, .none):
                throw reader.error("\(path).gear", "missing: kind \"\(kind)\" attaches to a Gear; name one listed in gears")
            case (.required, .some(let gearName)) where !gears.contains(where: { $0.name == gearName }):
                let listed = gears.isEmpty ? "gears is empty" : "listed: \(gears.map(\.name).joined(separator: ", "))"
                throw reader.error("\(path).gear", "Gear \"\(gearName)\" is not listed in gears (\(listed))")
            default:
                break
            }
            spins.append(SpinEntry(name: name, kind: kind, gear: gear))
        }
        return spins
    }

    /// An entry `{"name":..,"machine":"machines/x.json"}`: the machine file, relative to
    /// the config file, loaded and validated against the Gears listed in `gears`.
    static func machine(named name: String, file: String, entry: [String: JSONValue], at path: String,
                        gears: [GearEntry], reader: FileReader,
                        loaded: inout [String: SpinServerConfiguration.MachineSource],
                        readFile: (String) throws -> Data) throws(ConfigurationError) -> SpinEntry {
        if let kind = entry["kind"], kind != .null {
            throw reader.error("\(path).kind", "an entry with \"machine\" has no kind: remove \"kind\"")
        }
        if let gear = entry["gear"], gear != .null {
            throw reader.error("\(path).gear", "a machine names its Gears in its own file (\"gears\"): remove \"gear\"")
        }
        if let source = loaded[file] {
            return SpinEntry(name: name, kind: SpinServerConfiguration.machineKind, machine: source)
        }
        let source: SpinServerConfiguration.MachineSource
        do {
            source = try .load(path: file, configFile: reader.source, hostGears: Set(gears.map(\.name)), readFile: readFile)
            loaded[file] = source
        } catch {
            // A Gear the machine declares and the config does not list: say the line to add.
            let issues = error.issues.map { issue -> String in
                guard case .unknownGear(let gear) = issue.kind else { return issue.description }
                let listed = gears.isEmpty ? "gears is empty" : "listed: \(gears.map(\.name).joined(separator: ", "))"
                return "\(issue.file): \(issue.path): Gear \"\(gear)\" is not listed in the config's gears (\(listed)): add {\"name\": \"\(gear)\"} to \"gears\" in \(reader.source)"
            }
            throw reader.error("\(path).machine", issues.joined(separator: "; "))
        }
        return SpinEntry(name: name, kind: SpinServerConfiguration.machineKind, machine: source)
    }

    /// Names appear in URL paths (`/v1/spins/{name}`): 1 to 64 of `[A-Za-z0-9._-]`.
    static func name(_ name: String, reader: FileReader, at path: String) throws(ConfigurationError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard !name.isEmpty, name.utf8.count <= 64, allowed else {
            throw reader.error(path, "\"\(name)\" is not a valid name: use 1 to 64 letters, digits, '.', '_' or '-'")
        }
    }
}

// MARK: - JSON with key paths

/// The config file is read into the server's one JSON tree (`JSONValue`), so that unknown
/// keys and wrong types are found with the exact path rather than by a `Decodable` that
/// ignores extra keys. (With `FileReader`, internal, for the sections parsed in their own
/// files: `auth.jwt` in `+JWT.swift`.)
extension JSONValue {
    /// What a message calls the value's type.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        case .raw: "JSON text"
        }
    }
}

/// Reads values out of the config file, naming `source` and the key path in errors.
struct FileReader {
    let source: String

    func error(_ key: String, _ problem: String) -> ConfigurationError {
        ConfigurationError(source: source, key: key.isEmpty ? "(root)" : key, problem: problem)
    }

    /// An object whose keys are all in `known`.
    func object(_ value: JSONValue, at path: String, known: [String]) throws(ConfigurationError) -> [String: JSONValue] {
        let members = try members(value, at: path)
        if let unknown = members.keys.filter({ !known.contains($0) }).sorted().first {
            let child = path.isEmpty ? unknown : "\(path).\(unknown)"
            throw error(child, "unknown key (known here: \(known.joined(separator: ", ")))")
        }
        return members
    }

    func optionalObject(_ value: JSONValue?, at path: String, known: [String]) throws(ConfigurationError) -> [String: JSONValue]? {
        guard let value, value != .null else { return nil }
        return try object(value, at: path, known: known)
    }

    /// An object whose keys are the caller's to check (a map of names).
    func optionalMembers(_ value: JSONValue?, at path: String) throws(ConfigurationError) -> [String: JSONValue]? {
        guard let value, value != .null else { return nil }
        return try members(value, at: path)
    }

    /// An object's members by key (the file was refused if one repeats a key).
    private func members(_ value: JSONValue, at path: String) throws(ConfigurationError) -> [String: JSONValue] {
        guard case .object(let members) = value else { throw error(path, "must be an object, got \(value.typeName)") }
        return Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    func array(_ value: JSONValue, at path: String) throws(ConfigurationError) -> [JSONValue] {
        guard case .array(let items) = value else { throw error(path, "must be an array, got \(value.typeName)") }
        return items
    }

    func optionalArray(_ value: JSONValue?, at path: String) throws(ConfigurationError) -> [JSONValue]? {
        guard let value, value != .null else { return nil }
        return try array(value, at: path)
    }

    func required(_ value: JSONValue?, at path: String) throws(ConfigurationError) -> JSONValue {
        guard let value, value != .null else { throw error(path, "missing (required)") }
        return value
    }

    func string(_ value: JSONValue, at path: String) throws(ConfigurationError) -> String {
        guard case .string(let text) = value else { throw error(path, "must be a string, got \(value.typeName)") }
        return text
    }

    func bool(_ value: JSONValue, at path: String) throws(ConfigurationError) -> Bool {
        guard case .bool(let flag) = value else { throw error(path, "must be true or false, got \(value.typeName)") }
        return flag
    }

    func int(_ value: JSONValue, at path: String) throws(ConfigurationError) -> Int {
        guard case .number(let text) = value else { throw error(path, "must be an integer, got \(value.typeName)") }
        // Foundation's reading of a number as an `Int` (`80.0` and `8e1` are 80), as when
        // the file was decoded with it.
        if let number = try? JSONDecoder().decode(Int.self, from: Data(text.utf8)) { return number }
        throw error(path, "must be an integer, got \(JSONValue.double(text) ?? .infinity)")
    }

    /// An integer within `range`, refused as "must be L to U, got N" otherwise.
    func int(_ value: JSONValue, at path: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        let number = try int(value, at: path)
        guard range.contains(number) else {
            throw error(path, "must be \(range.lowerBound) to \(range.upperBound), got \(number)")
        }
        return number
    }
}
