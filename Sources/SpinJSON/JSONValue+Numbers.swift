extension JSONValue {
    /// An object of whole numbers by name, its members in name order: a Spin's Gear
    /// positions by sender, a node's definition versions by name.
    @inlinable
    package static func numbers<Number: BinaryInteger>(_ numbers: [String: Number]) -> JSONValue {
        .object(numbers.sorted { $0.key < $1.key }.map { ($0.key, .number(String($0.value))) })
    }

    /// The double a JSON number's text denotes; nil when no double holds it (`1e400`,
    /// which Foundation's decoder refuses and JavaScript reads as `Infinity`). The one
    /// reading of a number's range: the config loader and machine files both ask it.
    package static func double(_ text: String) -> Double? {
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// The first number in this value that no double holds, with its path
    /// (`limits.sizes[2]`; empty for this value itself), in document order.
    package func firstNumberBeyondDouble(at path: String = "") -> (text: String, path: String)? {
        switch self {
        case .number(let text): return Self.double(text) == nil ? (text, path) : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = item.firstNumberBeyondDouble(at: "\(path)[\(index)]") { return found }
            }
        case .object(let members):
            for member in members {
                if let found = member.value.firstNumberBeyondDouble(at: path.isEmpty ? member.key : "\(path).\(member.key)") {
                    return found
                }
            }
        case .null, .bool, .string, .raw: break
        }
        return nil
    }
}
