import SpinCore

extension MachineDefinition {
    /// Every event type some state's `on` table names (not the wildcard nor a partial
    /// descriptor such as `mouse.*`), sorted.
    public var eventTypes: [String] {
        Set(nodes.values.flatMap(\.on.keys)).subtracting([MachineEvent.wildcardType]).filter { !$0.hasSuffix(".*") }.sorted()
    }

    /// The JSON Schema of the machine's events: one branch per type its `on` tables name
    /// (`{"type":"OPEN"}`, other members free: guards and actions may read them), and one
    /// for any other string `type`, which the machine accepts and ignores (no transition),
    /// but those that start with `xstate.`: the machine's own, refused when a client sends one.
    public var eventSchema: JSONSchema {
        let known = eventTypes
        // `"*"` and partial descriptors (`"mouse.*"`) take types the list does not name.
        let descriptors = nodes.values.contains { !$0.partials.isEmpty || $0.on[MachineEvent.wildcardType] != nil }
        // An event no `on` takes still ends a macrostep whose `always` guards see it.
        let ignored = hasAlways ? "accepted, and applied when an \"always\" transition's guard then holds, else ignored (no_transition)"
            : "accepted and ignored (no_transition)"
        let otherTypes = descriptors
            ? "A type not listed: taken by a \"prefix.*\" or \"*\" transition where one matches, else \(ignored)."
            : "A type no state of the machine has a transition for: \(ignored)."
        // The machine's own types (`xstate.after`, ..) are not a client's to send.
        let own = JSONSchema.JSON.object([.init("pattern", .string("^xstate\\."))])
        let other = JSONSchema.object(["type": JSONSchema.string()
                                        .with("not", .object([.init("anyOf", .array([
                                            .object([.init("enum", .array(known.map(JSONSchema.JSON.string)))]), own]))]))])
            .described(otherTypes)
        guard !known.isEmpty else {
            return JSONSchema.object(["type": JSONSchema.string().with("not", own)])
                .described(descriptors ? otherTypes
                           : hasAlways ? "No state has an \"on\" transition: every event is \(ignored)."
                           : "The machine has no transitions: every event is accepted and ignored (no_transition).")
        }
        return .oneOf(known.map { JSONSchema.object(["type": .const($0)]) } + [other])
    }

    /// The JSON Schema of the machine's state, `{"value":..,"context":{..}}`: `value` is
    /// the name of a top-level state, or an object for a nested or parallel one (`{"a":"b"}`,
    /// `{"p":{"r1":"x","r2":"y"}}`), the object of the regions for a parallel root (the
    /// name of the region when it is the only one, and atomic); a machine with history
    /// states may add `history`, one with delayed raises `scheduled`.
    public var stateSchema: JSONSchema {
        let topLevel = nodes.values.filter { $0.path.count == 1 && $0.kind != .history }
        let isNested: (StateNode) -> Bool = { $0.kind == .compound || $0.kind == .parallel }
        let atomic = topLevel.filter { !isNested($0) && (!parallelRoot || topLevel.count == 1) }.map { $0.path[0] }.sorted()
        let nested = parallelRoot || topLevel.contains(where: isNested)
        var forms: [JSONSchema] = []
        if !atomic.isEmpty { forms.append(.oneOf(strings: atomic)) }
        if nested { forms.append(JSONSchema.object([:])) }
        let value = forms.count == 1 ? forms[0] : .oneOf(forms)
        var members: [(key: String, value: JSONSchema)] = [("value", value), ("context", JSONSchema.object([:]))]
        if nodes.values.contains(where: \.recordsHistory) {
            members.append(("history", JSONSchema.object([:])
                .described("What each compound state with a history child (and each region below a deep history) recorded when last left: its path → the leaf's path.")))
        }
        if schedulesEvents {
            let scheduled: KeyValuePairs<String, JSONSchema> = ["key": .integer(minimum: 1), "id": .string(), "delay": .integer(minimum: 0),
                                                                 "event": JSONSchema.object(["type": .string()])]
            members.append(("scheduled", JSONSchema.array(of: JSONSchema.object(scheduled, required: ["key", "delay", "event"]))
                .described("The events delayed raise actions scheduled that the machine has not been sent yet, in order.")))
        }
        return .object(members, required: ["value", "context"])
    }
}
