/// An `Encoder` that writes compact JSON with object members in the order the value's
/// `encode(to:)` writes them. See `JSONValue` for why the server needs it.
///
/// Numbers: integers as they are; floating-point values that are integral and within
/// ±2^53 without a fraction (`1` for `1.0`), others in Swift's shortest round-trip form;
/// NaN and infinities are an `EncodingError`. Types encode themselves as with
/// Foundation's default strategies (a `Date` is its `timeIntervalSinceReferenceDate`).
package struct OrderedJSONEncoder: Sendable {
    package init() {}

    package func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try encodeValue(value).bytes
    }

    package func encodeValue<T: Encodable>(_ value: T) throws -> JSONValue {
        let slot = Slot()
        try Slot.encode(value, into: slot, codingPath: [])
        return slot.node?.value ?? .object([])
    }
}

/// Where an encoder writes one value. A class so that containers handed out by an
/// encoder keep writing into the same place.
private final class Slot {
    var node: Node?

    static func encode<T: Encodable>(_ value: T, into slot: Slot, codingPath: [any CodingKey]) throws {
        if let primitive = try primitive(value, codingPath: codingPath) {
            slot.node = .value(primitive)
        } else {
            try value.encode(to: TreeEncoder(slot: slot, codingPath: codingPath))
        }
    }

    /// Values JSON has a literal for, written without going through `encode(to:)`.
    static func primitive<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> JSONValue? {
        switch value {
        case let value as String: return .string(value)
        case let value as Bool: return .bool(value)
        case let value as Int: return .number(String(value))
        case let value as Int64: return .number(String(value))
        case let value as UInt64: return .number(String(value))
        case let value as Double: return try number(value, codingPath: codingPath)
        default: return nil
        }
    }

    static func number(_ value: Double, codingPath: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath,
                                                          debugDescription: "JSON has no \(value)"))
        }
        if abs(value) <= 9_007_199_254_740_992, let integral = Int64(exactly: value) {
            return .number(String(integral))
        }
        return .number("\(value)")
    }
}

private enum Node {
    case value(JSONValue)
    case object(ObjectNode)
    case array(ArrayNode)

    var value: JSONValue {
        switch self {
        case .value(let value): value
        case .object(let object): .object(object.keys.map { ($0, object.members[$0]!.node?.value ?? .null) })
        case .array(let array): .array(array.items.map { $0.node?.value ?? .null })
        }
    }
}

private final class ObjectNode {
    var keys: [String] = []
    var members: [String: Slot] = [:]

    /// The slot of `key`, made (and put last in order) the first time.
    func slot(for key: String) -> Slot {
        if let slot = members[key] { return slot }
        let slot = Slot()
        keys.append(key)
        members[key] = slot
        return slot
    }
}

private final class ArrayNode {
    var items: [Slot] = []

    func append() -> Slot {
        let slot = Slot()
        items.append(slot)
        return slot
    }
}

private struct TreeEncoder: Encoder {
    let slot: Slot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: ObjectNode
        if case .object(let existing)? = slot.node {
            object = existing
        } else {
            object = ObjectNode()
            slot.node = .object(object)
        }
        return KeyedEncodingContainer(KeyedContainer(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: ArrayNode
        if case .array(let existing)? = slot.node {
            array = existing
        } else {
            array = ArrayNode()
            slot.node = .array(array)
        }
        return UnkeyedContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(slot: slot, codingPath: codingPath)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: ObjectNode
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        object.slot(for: key.stringValue).node = .value(.null)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try Slot.encode(value, into: object.slot(for: key.stringValue), codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
    -> KeyedEncodingContainer<NestedKey> {
        TreeEncoder(slot: object.slot(for: key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        TreeEncoder(slot: object.slot(for: key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        TreeEncoder(slot: object.slot(for: "super"), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        TreeEncoder(slot: object.slot(for: key.stringValue), codingPath: codingPath + [key])
    }
}

private struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { String(intValue ?? 0) }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { return nil }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let array: ArrayNode
    let codingPath: [any CodingKey]
    var count: Int { array.items.count }

    private var nextPath: [any CodingKey] { codingPath + [IndexKey(intValue: count)] }

    mutating func encodeNil() throws {
        array.append().node = .value(.null)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = nextPath
        try Slot.encode(value, into: array.append(), codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        return TreeEncoder(slot: array.append(), codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        return TreeEncoder(slot: array.append(), codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let path = nextPath
        return TreeEncoder(slot: array.append(), codingPath: path)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { slot.node = .value(.null) }
    mutating func encode(_ value: Bool) throws { slot.node = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { slot.node = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { slot.node = .value(try Slot.number(value, codingPath: codingPath)) }
    mutating func encode(_ value: Float) throws {
        // Float's own shortest form: 0.1 stays "0.1", not Double(0.1f)'s digits.
        let number = try Slot.number(Double(value), codingPath: codingPath)
        slot.node = .value(Int64(exactly: value) != nil ? number : .number("\(value)"))
    }
    mutating func encode(_ value: Int) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { slot.node = .value(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { slot.node = .value(.number(String(value))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try Slot.encode(value, into: slot, codingPath: codingPath)
    }
}
