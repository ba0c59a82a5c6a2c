/// The parser's reading of actions (`assign`, `gear.propagate`, `raise`, `cancel`),
/// the value forms they compute, and guard conditions.
extension MachineParser {
    // MARK: Actions

    mutating func parseActions(_ value: MachineValue?, at path: JSONPath) -> [MachineAction] {
        guard let value else { return [] }
        guard case .array(let elements) = value else {
            issue(path, .expected("an array of actions"))
            return []
        }
        return elements.enumerated().compactMap { index, element in parseAction(element, at: path.index(index)) }
    }

    mutating func parseAction(_ value: MachineValue, at path: JSONPath) -> MachineAction? {
        guard case .object(let members) = value, case .string(let type)? = members["type"] else {
            issue(path, .unknownAction("an action is an object with a \"type\": \"assign\", \"gear.propagate\", \"raise\" or \"cancel\""))
            return nil
        }
        switch type {
        case "assign":
            guard Set(members.keys) == ["type", "set"], case .object(let set)? = members["set"] else {
                issue(path, .unknownAction("\"assign\" takes exactly \"set\": an object of context keys"))
                return nil
            }
            for key in set.keys { references.assign(key) }
            return .assign(set.keys.sorted().compactMap { key in
                parseValueForm(set[key]!, allowsAdd: true, at: path.key("set").key(key)).map { (key, $0) }
            })
        case "gear.propagate":
            guard Set(members.keys) == ["type", "gear", "event"], case .string(let gear)? = members["gear"],
                  case .object(var event)? = members["event"], case .string(let eventType)? = event.removeValue(forKey: "type") else {
                issue(path, .unknownAction("\"gear.propagate\" takes \"gear\" (a name) and \"event\" (an object with a string \"type\")"))
                return nil
            }
            if !declaredGears.contains(gear) { issue(path.key("gear"), .undeclaredGear(gear)) }
            return .propagate(gear: gear, type: eventType, fields: event.keys.sorted().compactMap { key in
                parseValueForm(event[key]!, allowsAdd: false, at: path.key("event").key(key)).map { (key, $0) }
            })
        case "raise":
            return parseRaise(members, at: path)
        case "cancel":
            guard Set(members.keys) == ["type", "id"], case .string(let id)? = members["id"] else {
                issue(path, .unknownAction("\"cancel\" takes \"id\": the id of a delayed \"raise\""))
                return nil
            }
            // An id no `raise` has is no error: the cancel finds nothing to cancel, as in
            // XState v5 (actions.test.ts, "should not try to clear an undefined timeout when
            // canceling an unscheduled timer").
            return .cancel(id: id)
        default:
            issue(path.key("type"), .unknownAction("\"\(type)\" is not \"assign\", \"gear.propagate\", \"raise\" or \"cancel\""))
            return nil
        }
    }

    /// `{"type":"raise","event":{"type":t, ..},"delay"?:ms,"id"?:s}`.
    mutating func parseRaise(_ members: [String: MachineValue], at path: JSONPath) -> MachineAction? {
        guard Set(members.keys).isSubset(of: ["type", "event", "delay", "id"]), case .object(var event)? = members["event"],
              case .string(let eventType)? = event.removeValue(forKey: "type") else {
            issue(path, .unknownAction("\"raise\" takes \"event\" (an object with a string \"type\"), and \"delay\" (ms) and \"id\" if it waits"))
            return nil
        }
        if eventType.hasPrefix(MachineEvent.reservedPrefix) {
            issue(path.key("event").key("type"), .reservedEvent(eventType))
        } else {
            raisedTypes.append((eventType, path.key("event").key("type")))
        }
        var delay: Int?
        if let value = members["delay"] {
            guard case .number(let number) = value, number >= 0, number == number.rounded(), number < 1e9 else {
                var written = "\(value)"
                if case .number(let number) = value, number.isFinite, abs(number) < 1e15 {
                    written = number == number.rounded() ? String(Int(number)) : String(number)
                }
                issue(path.key("delay"), .badDelay(written, orZero: true))
                return nil
            }
            delay = Int(number)
        }
        var id: String?
        if let value = members["id"] {
            id = string(value, at: path.key("id"))
        }
        return .raise(type: eventType, fields: event.keys.sorted().compactMap { key in
            parseValueForm(event[key]!, allowsAdd: false, at: path.key("event").key(key)).map { (key, $0) }
        }, delay: delay, id: id)
    }

    mutating func parseValueForm(_ value: MachineValue, allowsAdd: Bool, at path: JSONPath) -> ValueForm? {
        guard case .object(let members) = value, members.count == 1, let (key, inner) = members.first else {
            return .literal(value)
        }
        switch key {
        case "from":
            guard case .string(let text) = inner, let reference = Self.reference(text) else {
                let meant = inner.stringValue.flatMap { MachineReferences.meantPath($0) }.map { "; did you mean \"\($0)\"?" }
                issue(path.key("from"), .badValue("\"from\" reads \"event.<path>\" or \"context.<path>\"" + (meant ?? "")))
                return nil
            }
            references.read(reference, at: path.key("from"), eventFields: eventFields)
            return .from(reference)
        case "add":
            guard allowsAdd else {
                issue(path, .badValue("\"add\" is only for assign"))
                return nil
            }
            guard case .number(let amount) = inner else {
                issue(path.key("add"), .badValue("\"add\" takes a number"))
                return nil
            }
            return .add(amount)
        case "literal":
            return .literal(inner)
        default:
            // An object of one member reads as a value form: an unknown one is a typo
            // (`{"ad": 1}`, `{"increment": 1}`), never a literal kept by accident.
            let forms = allowsAdd ? ["from", "add", "literal"] : ["from", "literal"]
            let meant = Self.meantForm(key, among: forms).map { " (did you mean \"\($0)\"?)" } ?? ""
            let written = allowsAdd ? "{\"from\": \"event.<path>\"}, {\"add\": n} or {\"literal\": x}"
                : "{\"from\": \"event.<path>\"} or {\"literal\": x}"
            issue(path.key(key), .badValue("unknown value form \"\(key)\"\(meant): an object of one member is a value form, "
                                           + "\(written); write {\"literal\": {\"\(key)\": ...}} for the object itself"))
            return nil
        }
    }

    /// The value form an unknown one likely means: one typo away, or a word for the same
    /// thing (`increment` for `add`, `value` for `literal`, `path` for `from`).
    static func meantForm(_ key: String, among forms: [String]) -> String? {
        let synonyms = ["increment": "add", "inc": "add", "incr": "add", "plus": "add", "sum": "add", "by": "add",
                        "delta": "add", "value": "literal", "const": "literal", "constant": "literal", "lit": "literal",
                        "raw": "literal", "exact": "literal", "path": "from", "read": "from", "get": "from",
                        "copy": "from", "ref": "from", "source": "from", "src": "from"]
        if let meant = synonyms[key.lowercased()], forms.contains(meant) { return meant }
        // Three short names far apart: one edit is a typo even in two letters (`ad`).
        let lowered = key.lowercased()
        return forms.first { MachineReferences.editDistance(lowered, $0) <= (key.count <= 3 ? 1 : 2) }
    }

    static func reference(_ text: String) -> Reference? {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let root: Reference.Root
        switch segments.first {
        case "event": root = .event
        case "context": root = .context
        default: return nil
        }
        let path = Array(segments.dropFirst())
        guard !path.contains("") else { return nil }
        return Reference(root: root, path: path)
    }

    // MARK: Guards

    mutating func parseGuard(_ value: MachineValue, at path: JSONPath) -> MachineGuard? {
        let forms = "a guard is one of {\"eq\"|\"neq\"|\"lt\"|\"lte\"|\"gt\"|\"gte\": [a, b]}, {\"and\"|\"or\": [guards]}, {\"not\": guard}, {\"in\": \"state\"}"
        guard case .object(let members) = value, members.count == 1, let (key, inner) = members.first else {
            issue(path, .unknownGuard(forms))
            return nil
        }
        let at = path.key(key)
        if let comparison = MachineGuard.Comparison(rawValue: key) {
            guard case .array(let operands) = inner, operands.count == 2 else {
                issue(at, .unknownGuard("\"\(key)\" takes an array of two operands"))
                return nil
            }
            guard let lhs = parseOperand(operands[0], at: at.index(0)),
                  let rhs = parseOperand(operands[1], at: at.index(1)) else { return nil }
            return .compare(comparison, lhs, rhs)
        }
        switch key {
        case "and", "or":
            guard case .array(let elements) = inner, !elements.isEmpty else {
                issue(at, .unknownGuard("\"\(key)\" takes a non-empty array of guards"))
                return nil
            }
            let guards = elements.enumerated().compactMap { index, element in parseGuard(element, at: at.index(index)) }
            guard guards.count == elements.count else { return nil }
            return key == "and" ? .and(guards) : .or(guards)
        case "not":
            return parseGuard(inner, at: at).map(MachineGuard.not)
        case "in":
            guard case .string(let name) = inner else {
                issue(at, .unknownGuard("\"in\" takes a state path from the root, such as \"a.b\""))
                return nil
            }
            // `#id` (or `#id.child`) names a state by its `id`, as XState's `stateIn("#id")`
            // does; `#<machine id>.a.b` by its path, as a target may.
            let candidates = name.hasPrefix("#") ? identified(name, orFromTheRoot: false)
                : [name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)]
            guard let statePath = candidates.first(where: { declared.contains($0) }) else {
                let spellings = declared.map { $0.joined(separator: ".") } + stateIDs.keys.map { "#\($0)" }
                issue(at, .unknownState(name, suggestion: MachineReferences.nearestState(name, among: spellings.sorted())))
                return nil
            }
            return .isIn(statePath)
        default:
            issue(path, .unknownGuard(forms))
            return nil
        }
    }

    mutating func parseOperand(_ value: MachineValue, at path: JSONPath) -> MachineGuard.Operand? {
        switch value {
        case .string(let text) where text.hasPrefix("event.") || text.hasPrefix("context.") || text == "event" || text == "context":
            guard let reference = Self.reference(text) else {
                issue(path, .badValue("\"\(text)\" is not a path: use {\"literal\": ...} for such a string"))
                return nil
            }
            references.read(reference, at: path, eventFields: eventFields)
            return .reference(reference)
        case .string(let text):
            references.string(text, at: path)
            return .literal(value)
        case .object(let members):
            guard members.count == 1, let literal = members["literal"] else {
                issue(path, .badValue("an operand is \"event.<path>\", \"context.<path>\", a literal or {\"literal\": x}"))
                return nil
            }
            return .literal(literal)
        default:
            return .literal(value)
        }
    }
}
