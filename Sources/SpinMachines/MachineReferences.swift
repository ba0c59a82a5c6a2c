/// The paths a machine's guards and actions read (`context.<key>`, `event.<field>`) and the
/// plain strings among its guard operands, checked once the whole machine is parsed: a
/// context key may be defined by an `assign` anywhere in the file, before or after the
/// guard that reads it.
///
/// - `context.<key>…`: the first key must be a member of `context` or a key some `assign`
///   sets. Deeper segments are not checked (an `assign` may store any shape).
/// - `event.<field>…`: `event.type` always exists. Events declare no fields, so another
///   field is checked only where the event is known: an `after` transition sees
///   `{"type":"xstate.after","state":..,"delay":..}`.
/// - A guard operand that is a plain string one typo from a path (`"contxt.n"`,
///   `"Context.n"`, `"evnet.code"`, `"contextn"`) is refused with the path it likely
///   means; `{"literal": "contxt.n"}` writes such a string on purpose.
struct MachineReferences {
    /// The fields of the event an `after` transition sees (`MachineEvent.after`).
    static let afterEventFields: Set<String> = ["type", "state", "delay"]

    private enum Check {
        /// A path read; `eventFields`: the fields its event has, nil when unknown.
        case read(Reference, eventFields: Set<String>?)
        /// A guard operand that is a plain string.
        case string(String)
    }

    /// In the order the parser met them, so that issues come in the order of the file.
    private var checks: [(check: Check, path: JSONPath)] = []
    private var assigned: Set<String> = []

    /// A path read at `path`; `eventFields`: the fields its event has, nil when unknown.
    mutating func read(_ reference: Reference, at path: JSONPath, eventFields: Set<String>?) {
        checks.append((.read(reference, eventFields: eventFields), path))
    }

    /// A guard operand that is a plain string.
    mutating func string(_ text: String, at path: JSONPath) {
        checks.append((.string(text), path))
    }

    /// A key an `assign` sets.
    mutating func assign(_ key: String) {
        assigned.insert(key)
    }

    /// Every issue, in the order the parser met the paths and strings.
    func issues(file: String, context: [String: MachineValue]) -> [MachineIssue] {
        let keys = assigned.union(context.keys)
        let defined = keys.sorted()
        return checks.compactMap { check, path in
            Self.issue(check, keys: keys, defined: defined).map { MachineIssue(file: file, path: path.text, kind: $0) }
        }
    }

    private static func issue(_ check: Check, keys: Set<String>, defined: [String]) -> MachineIssue.Kind? {
        switch check {
        case .read(let reference, let eventFields):
            guard let first = reference.path.first else { return nil }
            switch reference.root {
            case .context where !keys.contains(first):
                return .unknownContextKey(first, defined: defined, suggestion: nearest(first, among: defined))
            case .event where first != "type":
                guard let eventFields, !eventFields.contains(first) else { return nil }
                let fields = eventFields.sorted()
                return .unknownEventField(first, fields: fields, suggestion: nearest(first, among: fields))
            default:
                return nil
            }
        case .string(let text):
            return meantPath(text, keys: defined).map { .looksLikePath(text, suggestion: $0) }
        }
    }

    /// The path a string that is not one likely means, if it is one typo away from one:
    /// in its root (`contxt.`, `Context.`, `evnet.`), or anywhere in `context.<key>` for
    /// a defined key or in `event.type`. With `keys` given, a root fixed this way gets
    /// the nearest defined key too (`contxt.pedestrains` → `context.pedestrians`).
    static func meantPath(_ text: String, keys: [String] = []) -> String? {
        if let dot = text.firstIndex(of: ".") {
            let head = text[..<dot].lowercased()
            let rest = text[text.index(after: dot)...]
            for root in ["context", "event"] where !text.hasPrefix("\(root).") {
                guard editDistance(head, root) <= 1, MachineParser.reference("\(root).\(rest)") != nil else { continue }
                var segments = rest.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                if root == "context", !keys.isEmpty, !keys.contains(segments[0]), let key = nearest(segments[0], among: keys) {
                    segments[0] = key
                }
                return ([root] + segments).joined(separator: ".")
            }
        }
        guard !text.hasPrefix("context."), !text.hasPrefix("event.") else { return nil }
        return (["event.type"] + keys.map { "context.\($0)" }).first { editDistance(text, $0) <= 1 }
    }

    /// The name in `names` closest to `name` (case aside), if it is close: none for a name
    /// of one or two characters (every other short name is as close), one edit for three,
    /// two for a longer one. Ties go to the first.
    static func nearest(_ name: String, among names: [String]) -> String? {
        let limit = name.count <= 2 ? 0 : name.count <= 3 ? 1 : 2
        let lowered = name.lowercased()
        let scored = names.map { ($0, editDistance(lowered, $0.lowercased())) }.filter { $0.1 <= limit }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// The spelling in `spellings` nearest to `written`, a state as a file writes it
    /// (`yelow`, `.iner`, `#bleu`, `#light.rde`): one that differs only in the last name
    /// (after the last `.` or `#`), and that name is `nearest`.
    static func nearestState(_ written: String, among spellings: [String]) -> String? {
        let cut = written.lastIndex { $0 == "." || $0 == "#" }.map { written.index(after: $0) } ?? written.startIndex
        let head = written[..<cut]
        let names = spellings.compactMap { spelling -> String? in
            guard spelling.hasPrefix(head) else { return nil }
            let rest = spelling.dropFirst(head.count)
            return rest.contains(".") || rest.contains("#") ? nil : String(rest)
        }
        return nearest(String(written[cut...]), among: names).map { head + $0 }
    }

    /// The optimal-string-alignment distance: insertions, deletions, substitutions and
    /// swaps of two neighbours (`evnet` → `event`) each count one, over characters.
    static func editDistance(_ a: some StringProtocol, _ b: some StringProtocol) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        // rows[i][j]: the distance between the first i characters of a and the first j of b.
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
                }
            }
        }
        return rows[a.count][b.count]
    }
}
