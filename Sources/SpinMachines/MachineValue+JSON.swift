import SpinJSON

extension MachineValue {
    /// What a machine file cannot hold although it is JSON: a number beyond a double's
    /// range (`1e400`), which JavaScript would read as `Infinity`.
    struct OutOfRange: Error {
        /// The number as the file writes it.
        let number: String
    }

    /// The value of a parsed JSON document (`JSONValue(parsing:)`): numbers become
    /// doubles (`1` and `1.0` the same), object members lose their order (an object of
    /// a machine encodes its keys sorted).
    init(_ json: JSONValue) throws(OutOfRange) {
        switch json {
        case .null: self = .null
        case .bool(let bool): self = .bool(bool)
        case .number(let text):
            guard let number = JSONValue.double(text) else { throw OutOfRange(number: text) }
            self = .number(number)
        case .string(let string): self = .string(string)
        case .array(let items):
            var elements: [MachineValue] = []
            elements.reserveCapacity(items.count)
            for item in items { elements.append(try MachineValue(item)) }
            self = .array(elements)
        case .object(let members):
            var object: [String: MachineValue] = [:]
            object.reserveCapacity(members.count)
            for member in members { object[member.key] = try MachineValue(member.value) }
            self = .object(object)
        case .raw:
            // Text someone vouched for: its tree (never `.raw` again).
            self = try MachineValue((try? json.parsed()) ?? .null)
        }
    }
}
