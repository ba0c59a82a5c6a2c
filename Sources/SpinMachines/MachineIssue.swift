/// One thing wrong with a machine definition: where (the file and the JSON path inside
/// it) and what.
///
/// Its description is the line a user sees, e.g.
/// `machines/door.json: states.locked.on.UNLOCK[0].target: unknown state "clsoed"`.
public struct MachineIssue: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public enum Kind: Sendable, Hashable {
        /// The bytes are not a JSON object (the detail says why).
        case notJSON(String)
        /// The text is not JSON (RFC 8259, no key twice in one object), as a machine and
        /// its host read it: the detail says where and why (`line 12, column 7: expected
        /// ',' or '}' after an object member`).
        case syntax(String)
        /// The file cannot be read (the detail says why).
        case unreadable(String)
        /// A key the format does not know: a typo is never ignored.
        case unknownKey
        /// A JSON value of the wrong kind (the associated string names the expected one).
        case expected(String)
        /// `initial` is missing at the root or in a state that has `states`.
        case missingInitial
        /// A target, an `initial` or an `in` guard names no state of the machine; the
        /// nearest name that would, written the same way, if one is close.
        case unknownState(String, suggestion: String? = nil)
        /// A migration maps a state the older version it starts from (as stored) does not
        /// define; the nearest one it does, if one is close.
        case unknownOlderState(String, version: Int, suggestion: String?)
        /// `initial` on a state that takes none: a parallel state (it enters every region),
        /// a final state, or a state without `states`.
        case initialNotTaken(String)
        /// No transition (nor `initial`) ever enters this state.
        case unreachableState
        /// A Gear named by `gear.propagate` that `gears` does not declare.
        case undeclaredGear(String)
        /// A Gear declared in `gears` that the host does not provide.
        case unknownGear(String)
        /// An `after` key that is not a positive whole number of milliseconds, or a
        /// `raise` delay that is not a whole number of them (`orZero`: 0 is one, as in XState).
        case badDelay(String, orZero: Bool = false)
        /// An action that is not one of the forms `assign` / `gear.propagate`.
        case unknownAction(String)
        /// A guard that is not one of the forms `eq neq lt lte gt gte and or not in`.
        case unknownGuard(String)
        /// A value form (`from`, `add`, `literal`) or an operand that is malformed.
        case badValue(String)
        /// A state `type` other than `atomic`, `compound`, `final`.
        case unknownStateType(String)
        /// A final state with `on`, `after` or `states`: it accepts no events.
        case finalWithTransitions
        /// An event type the interpreter keeps for itself (`xstate.` ones: `xstate.after`,
        /// `xstate.raise`, `xstate.done.state.*`, `xstate.init`).
        case reservedEvent(String)
        /// A `catch` maps to an event type no state handles.
        case unhandledEvent(String)
        /// Two states (or a state and the machine) have the same `id`.
        case duplicateID(String)
        /// `always` transitions that would be taken without end.
        case eventlessLoop(String)
        /// `context.<key>` where no `context` member and no `assign` defines the key: the
        /// keys that are defined, sorted, and the nearest of them if one is close.
        case unknownContextKey(String, defined: [String], suggestion: String?)
        /// `event.<field>` where the machine knows its event's fields (the `xstate.after`
        /// event of an `after` transition) and this is none of them.
        case unknownEventField(String, fields: [String], suggestion: String?)
        /// A guard operand written as a plain string one typo away from a path
        /// (`"contxt.n"`): the path it likely means.
        case looksLikePath(String, suggestion: String)
    }

    /// The file name given when the definition was loaded.
    public let file: String
    /// The JSON path inside the file (`states.locked.on.UNLOCK[0].target`); empty for
    /// the file as a whole.
    public let path: String
    /// What is wrong.
    public let kind: Kind

    /// An issue at `path` (empty: the whole file) of `file`.
    public init(file: String, path: String, kind: Kind) {
        self.file = file
        self.path = path
        self.kind = kind
    }

    public var description: String {
        path.isEmpty ? "\(file): \(message)" : "\(file): \(path): \(message)"
    }

    /// The message without file and path.
    public var message: String {
        switch kind {
        case .notJSON(let detail): "not a JSON object: \(detail)"
        case .syntax(let detail): detail
        case .unreadable(let detail): "cannot read the file: \(detail)"
        case .unknownKey: "unknown key"
        case .expected(let what): "expected \(what)"
        case .missingInitial: "missing: a machine, and every state with \"states\", names its initial state"
        case .unknownState(let name, let suggestion):
            "unknown state \"\(name)\"" + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? "")
        case .unknownOlderState(let name, let version, let suggestion):
            "version \(version) has no state \"\(name)\"" + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? "")
        case .initialNotTaken(let reason): "no \"initial\" here: \(reason)"
        case .unreachableState: "unreachable: no transition or initial enters this state"
        case .undeclaredGear(let name): "unknown gear \"\(name)\": not declared in \"gears\""
        case .unknownGear(let name): "unknown gear \"\(name)\": the host provides no such gear"
        case .badDelay(let key, let orZero):
            "bad delay \"\(key)\": a delay is a \(orZero ? "whole number of milliseconds, 0 or more" : "positive whole number of milliseconds")"
        case .unknownAction(let detail): "unknown action: \(detail)"
        case .unknownGuard(let detail): "unknown guard: \(detail)"
        case .badValue(let detail): "bad value: \(detail)"
        case .unknownStateType(let type): "unknown state type \"\(type)\": expected \"atomic\", \"compound\", \"parallel\" or \"final\""
        case .finalWithTransitions: "a final state accepts no events: no \"on\", \"after\" or \"states\""
        case .reservedEvent(let type): "event type \"\(type)\" is the machine's own: \"xstate.\" types are taken through \"after\" and \"onDone\", not \"on\" or \"raise\""
        case .unhandledEvent(let type): "no state handles event \"\(type)\""
        case .duplicateID(let id): "duplicate id \"\(id)\": \"#\(id)\" must name one state"
        case .eventlessLoop(let detail): "endless loop: \(detail)"
        case .unknownContextKey(let key, let defined, let suggestion):
            "unknown context key \"\(key)\" ("
                + (defined.isEmpty ? "no \"context\" member or \"assign\" defines any key"
                    : "\"context\" and \"assign\" define \(Self.quoted(defined))")
                + (suggestion.map { "; did you mean \"\($0)\"?" } ?? "") + ")"
        case .unknownEventField(let field, let fields, let suggestion):
            "unknown event field \"\(field)\": the event of an \"after\" transition has \(Self.quoted(fields))"
                + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? "")
        case .looksLikePath(let text, let suggestion):
            "\"\(text)\" looks like a path: did you mean \"\(suggestion)\"? (write {\"literal\": \"\(text)\"} for the string)"
        }
    }

    /// `"a", "b", "c"`.
    private static func quoted(_ names: [String]) -> String {
        names.map { "\"\($0)\"" }.joined(separator: ", ")
    }
}

/// Every issue found in one machine definition, in the order of the file.
public struct MachineValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The issues, at least one.
    public let issues: [MachineIssue]

    /// An error reporting `issues`.
    public init(issues: [MachineIssue]) {
        self.issues = issues
    }

    /// One issue per line.
    public var description: String {
        issues.map(\.description).joined(separator: "\n")
    }
}
