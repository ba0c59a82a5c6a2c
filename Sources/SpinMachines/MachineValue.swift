/// A JSON value as a declarative machine holds it: its context, the fields of its
/// events, the literals of its definition.
///
/// Numbers are IEEE doubles, as in the JavaScript that XState machines run on: `1` and
/// `1.0` are the same number, and integers are exact up to 2^53. An object encodes its
/// members sorted by key, so the same value always gives the same JSON text.
///
/// Not SpinJSON's `JSONValue`, which keeps what a text says (a number's digits, the
/// order of members): a machine computes with its values, so it needs JavaScript's
/// numbers, comparison and hashing by value (events are `Hashable`), and a public type
/// (`MachineState.context`). A machine file is parsed by `JSONValue(parsing:)` and made a
/// `MachineValue` from that (`MachineValue+JSON`); a state or event a server hosts is
/// read and written through `Codable` (the server's encoder is SpinJSON's
/// `OrderedJSONEncoder`).
public enum MachineValue: Sendable, Hashable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number (a double, see above).
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([MachineValue])
    /// An object; member order is not kept (encoding sorts the keys).
    case object([String: MachineValue])

    /// The value at a dotted path below this one (`"a.b"`, `"items.0"`: a segment that
    /// is a number indexes an array); nil when some segment is missing. The empty path
    /// is the value itself.
    public func value(at path: some Sequence<some StringProtocol>) -> MachineValue? {
        var current = self
        for segment in path {
            switch current {
            case .object(let members):
                guard let next = members[String(segment)] else { return nil }
                current = next
            case .array(let elements):
                guard let index = Int(segment), elements.indices.contains(index) else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    /// The value at a dotted path: `value["context.a.b"]`-style lookups with one string.
    public subscript(path path: String) -> MachineValue? {
        path.isEmpty ? self : value(at: path.split(separator: ".", omittingEmptySubsequences: false))
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The number, if this is one.
    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: MachineValue]? {
        if case .object(let members) = self { return members }
        return nil
    }
}

extension MachineValue: Codable {
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var elements: [MachineValue] = []
            while !array.isAtEnd { elements.append(try array.decode(MachineValue.self)) }
            self = .array(elements)
            return
        }
        if let object = try? decoder.container(keyedBy: MachineKey.self) {
            var members: [String: MachineValue] = [:]
            for key in object.allKeys { members[key.stringValue] = try object.decode(MachineValue.self, forKey: key) }
            self = .object(members)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let bool = try? single.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? single.decode(Double.self) {
            self = .number(number)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let bool):
            var single = encoder.singleValueContainer()
            try single.encode(bool)
        case .number(let number):
            var single = encoder.singleValueContainer()
            // Integral numbers as integers (`1`, not `1.0`), as JavaScript writes them.
            if number.rounded() == number, abs(number) <= 9_007_199_254_740_992 {
                try single.encode(Int64(number))
            } else {
                try single.encode(number)
            }
        case .string(let string):
            var single = encoder.singleValueContainer()
            try single.encode(string)
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(element) }
        case .object(let members):
            var object = encoder.container(keyedBy: MachineKey.self)
            for key in members.keys.sorted() { try object.encode(members[key]!, forKey: MachineKey(key)) }
        }
    }
}

extension MachineValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral {
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: MachineValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, MachineValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Any string as a coding key: the members of machine JSON objects.
struct MachineKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
