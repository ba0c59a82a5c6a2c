/// An `Encoder` that writes compact JSON with object members in the order the value's
/// `encode(to:)` writes them. See `JSONValue` for why the server needs it.
///
/// Numbers: integers as they are; floating-point values that are integral and within
/// ±2^53 without a fraction (`1` for `1.0`), others in Swift's shortest round-trip form;
/// NaN and infinities are an `EncodingError`. Types encode themselves as with
/// Foundation's default strategies (a `Date` is its `timeIntervalSinceReferenceDate`).
package struct OrderedJSONEncoder: Sendable {
    package init() {}

    /// The value's JSON text, written straight from the encoded tree (no `JSONValue` in
    /// between): what a hosted Spin stores and streams for each state and event.
    package func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let slot = Slot()
        try Slot.encode(value, into: slot, codingPath: [])
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        if let node = slot.node { node.write(into: &bytes) } else { bytes += "{}".utf8 }
        return bytes
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
            slot.node = primitive
        } else {
            try value.encode(to: TreeEncoder(slot: slot, codingPath: codingPath))
        }
    }

    /// Values JSON has a literal for, written without going through `encode(to:)`.
    /// (`codingPath` is made only for an error: most values are fine.) Told by the type,
    /// not by `as?`: from generic code (a hosted Spin's state) each failing cast went
    /// through the runtime's dynamic casts, and most values here (a state, its structs)
    /// are none of the six.
    static func primitive<T: Encodable>(_ value: T, codingPath: @autoclosure () -> [any CodingKey]) throws -> Node? {
        if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if T.self == Int.self { return .number(String(unsafeBitCast(value, to: Int.self))) }
        if T.self == Int64.self { return .number(String(unsafeBitCast(value, to: Int64.self))) }
        if T.self == UInt64.self { return .number(String(unsafeBitCast(value, to: UInt64.self))) }
        if T.self == Double.self { return try number(unsafeBitCast(value, to: Double.self), codingPath: codingPath()) }
        return nil
    }

    static func number(_ value: Double, codingPath: @autoclosure () -> [any CodingKey]) throws -> Node {
        guard let text = JSONValue.numberText(value) else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath(),
                                                          debugDescription: "JSON has no \(value)"))
        }
        return .number(text)
    }
}

/// A written value. JSON's literals are cases of their own, not a `JSONValue` (an
/// indirect enum, one allocation per value): a state's members cost nothing beyond their text.
private enum Node {
    case null
    case bool(Bool)
    /// Its JSON text.
    case number(String)
    case string(String)
    case object(ObjectNode)
    case array(ArrayNode)

    var value: JSONValue {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .number(let text): .number(text)
        case .string(let text): .string(text)
        case .object(let object): .object(object.members.map { ($0.key, $0.value.node?.value ?? .null) })
        case .array(let array): .array(array.items.map { $0.node?.value ?? .null })
        }
    }

    /// The JSON text of the node, as `value.write(into:)` would write it.
    func write(into bytes: inout [UInt8]) {
        switch self {
        case .null: bytes += "null".utf8
        case .bool(let value): bytes += (value ? "true" : "false").utf8
        case .number(let text): bytes += text.utf8
        case .string(let text): JSONValue.writeString(text, into: &bytes)
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, into: &bytes)
                bytes.append(UInt8(ascii: ":"))
                if let node = member.value.node { node.write(into: &bytes) } else { bytes += "null".utf8 }
            }
            bytes.append(UInt8(ascii: "}"))
        case .array(let array):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in array.items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                if let node = item.node { node.write(into: &bytes) } else { bytes += "null".utf8 }
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }
}

/// What a container holds for one member or element: a literal written in place (no
/// object of its own), or a slot that a nested encoder writes into.
private enum Member {
    case node(Node)
    case slot(Slot)

    var node: Node? {
        switch self {
        case .node(let node): node
        case .slot(let slot): slot.node
        }
    }
}

private final class ObjectNode {
    /// Members in the order first written.
    var members: [(key: String, value: Member)] = []
    /// An index of `members` by key, made once an object grows past a few members
    /// (events and states have a handful, looked up faster by a scan).
    var index: [String: Int]?

    /// Where `key`'s member is, nil before it is first written.
    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return members.firstIndex { $0.key == key }
    }

    /// Puts `member` last in order (a key not written before).
    private func add(_ key: String, _ member: Member) {
        members.append((key, member))
        if index != nil {
            index?[key] = members.count - 1
        } else if members.count > 8 {
            index = Dictionary(uniqueKeysWithValues: members.enumerated().map { ($0.element.key, $0.offset) })
        }
    }

    /// The slot of `key`, made (and put last in order) the first time: where a nested
    /// encoder writes.
    func slot(for key: String) -> Slot {
        guard let position = position(of: key) else {
            let slot = Slot()
            add(key, .slot(slot))
            return slot
        }
        if case .slot(let slot) = members[position].value { return slot }
        let slot = Slot()
        slot.node = members[position].value.node
        members[position].value = .slot(slot)
        return slot
    }

    /// Writes a literal as `key`'s value (in the place of one written before).
    func set(_ node: Node, for key: String) {
        guard let position = position(of: key) else { return add(key, .node(node)) }
        switch members[position].value {
        case .slot(let slot): slot.node = node
        case .node: members[position].value = .node(node)
        }
    }
}

private final class ArrayNode {
    var items: [Member] = []

    func append() -> Slot {
        let slot = Slot()
        items.append(.slot(slot))
        return slot
    }

    func append(_ node: Node) {
        items.append(.node(node))
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
        object.set(.null, for: key.stringValue)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if let primitive = try Slot.primitive(value, codingPath: codingPath + [key]) {
            return object.set(primitive, for: key.stringValue)
        }
        try Slot.encode(value, into: object.slot(for: key.stringValue), codingPath: codingPath + [key])
    }

    // The common primitives directly: no coding path made and no dynamic cast.
    mutating func encode(_ value: String, forKey key: Key) throws { object.set(.string(value), for: key.stringValue) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { object.set(.bool(value), for: key.stringValue) }
    mutating func encode(_ value: Int, forKey key: Key) throws { object.set(.number(String(value)), for: key.stringValue) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { object.set(.number(String(value)), for: key.stringValue) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { object.set(.number(String(value)), for: key.stringValue) }

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
        array.append(.null)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        if let primitive = try Slot.primitive(value, codingPath: nextPath) { return array.append(primitive) }
        let path = nextPath
        try Slot.encode(value, into: array.append(), codingPath: path)
    }

    // The common primitives directly: no coding path made and no dynamic cast.
    mutating func encode(_ value: String) throws { array.append(.string(value)) }
    mutating func encode(_ value: Bool) throws { array.append(.bool(value)) }
    mutating func encode(_ value: Int) throws { array.append(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { array.append(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { array.append(.number(String(value))) }

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

    mutating func encodeNil() throws { slot.node = .null }
    mutating func encode(_ value: Bool) throws { slot.node = .bool(value) }
    mutating func encode(_ value: String) throws { slot.node = .string(value) }
    mutating func encode(_ value: Double) throws { slot.node = try Slot.number(value, codingPath: codingPath) }
    mutating func encode(_ value: Float) throws {
        // Float's own shortest form: 0.1 stays "0.1", not Double(0.1f)'s digits.
        let number = try Slot.number(Double(value), codingPath: codingPath)
        slot.node = Int64(exactly: value) != nil ? number : .number("\(value)")
    }
    mutating func encode(_ value: Int) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: Int8) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: Int16) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: Int32) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: Int64) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: UInt) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: UInt8) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: UInt16) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: UInt32) throws { slot.node = .number(String(value)) }
    mutating func encode(_ value: UInt64) throws { slot.node = .number(String(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try Slot.encode(value, into: slot, codingPath: codingPath)
    }
}
