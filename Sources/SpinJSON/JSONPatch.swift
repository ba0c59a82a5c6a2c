/// A JSON Patch (RFC 6902): operations that turn one JSON document into another, applied
/// in order. What a state stream with `?delta=json-patch` sends instead of each whole state.
///
/// `diff(from:to:)` writes only `add`, `remove` and `replace`; `apply(to:)` takes all six
/// operations. Pure values, no I/O:
///
/// ```swift
/// let patch = JSONPatch.diff(from: try JSONValue(parsing: Array(#"{"a":[1,2,3]}"#.utf8)),
///                            to: try JSONValue(parsing: Array(#"{"a":[1,9,2,3]}"#.utf8)))
/// patch.json.text                 // [{"op":"add","path":"/a/1","value":9}]
/// ```
package struct JSONPatch: Sendable, Equatable {
    package enum Operation: Sendable, Equatable {
        case add(JSONPointer, JSONValue)
        case remove(JSONPointer)
        case replace(JSONPointer, JSONValue)
        case move(from: JSONPointer, to: JSONPointer)
        case copy(from: JSONPointer, to: JSONPointer)
        case test(JSONPointer, JSONValue)
    }

    /// Why a patch was refused: a malformed operation, or one that does not apply to the
    /// document (a missing member, an index out of range, a failed `test`).
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The operation's index in the patch.
        package var operation: Int
        package var reason: String

        package var description: String { "JSON Patch operation \(operation): \(reason)" }
    }

    package var operations: [Operation]

    package init(_ operations: [Operation]) {
        self.operations = operations
    }

    package var isEmpty: Bool { operations.isEmpty }

    // MARK: JSON

    /// The patch as RFC 6902 JSON text: `[{"op":"replace","path":"/a","value":1}]`.
    package var bytes: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    /// The patch as a JSON value (its text, `.raw`).
    package var json: JSONValue { .raw(bytes) }

    package func write(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (index, operation) in operations.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            switch operation {
            case .add(let path, let value): Self.write("add", path, value: value, into: &out)
            case .remove(let path): Self.write("remove", path, into: &out)
            case .replace(let path, let value): Self.write("replace", path, value: value, into: &out)
            case .move(let from, let path): Self.write("move", path, from: from, into: &out)
            case .copy(let from, let path): Self.write("copy", path, from: from, into: &out)
            case .test(let path, let value): Self.write("test", path, value: value, into: &out)
            }
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func write(_ op: StaticString, _ path: JSONPointer, value: JSONValue? = nil, from: JSONPointer? = nil,
                              into out: inout [UInt8]) {
        out += #"{"op":""#.utf8
        out += UnsafeBufferPointer(start: op.utf8Start, count: op.utf8CodeUnitCount)
        out += #"","path":"#.utf8
        JSONValue.writeString(path.description, into: &out)
        if let from {
            out += #","from":"#.utf8
            JSONValue.writeString(from.description, into: &out)
        }
        if let value {
            out += #","value":"#.utf8
            value.write(into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// The patch a JSON document holds: an array of operation objects. Members other than
    /// `op`, `path`, `from` and `value` are ignored (RFC 6902 §4).
    package init(json: JSONValue) throws(Failure) {
        guard case .array(let items) = try Self.parsed(json, operation: 0) else {
            throw Failure(operation: 0, reason: "a JSON Patch is an array of operations")
        }
        var operations: [Operation] = []
        operations.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard case .object(let members) = try Self.parsed(item, operation: index) else {
                throw Failure(operation: index, reason: "an operation is a JSON object")
            }
            func member(_ key: String) -> JSONValue? { members.first { $0.key == key }?.value }
            func pointer(_ key: String) throws(Failure) -> JSONPointer {
                guard case .string(let text) = try Self.parsed(member(key) ?? .null, operation: index) else {
                    throw Failure(operation: index, reason: "\"\(key)\" must be a JSON Pointer string")
                }
                guard let pointer = JSONPointer(text) else {
                    throw Failure(operation: index, reason: "\"\(text)\" is not a JSON Pointer (RFC 6901)")
                }
                return pointer
            }
            func value() throws(Failure) -> JSONValue {
                guard let value = member("value") else { throw Failure(operation: index, reason: "\"value\" is missing") }
                return value
            }
            guard case .string(let op) = try Self.parsed(member("op") ?? .null, operation: index) else {
                throw Failure(operation: index, reason: "\"op\" must be a string")
            }
            switch op {
            case "add": operations.append(.add(try pointer("path"), try value()))
            case "remove": operations.append(.remove(try pointer("path")))
            case "replace": operations.append(.replace(try pointer("path"), try value()))
            case "move": operations.append(.move(from: try pointer("from"), to: try pointer("path")))
            case "copy": operations.append(.copy(from: try pointer("from"), to: try pointer("path")))
            case "test": operations.append(.test(try pointer("path"), try value()))
            default: throw Failure(operation: index, reason: "unknown op \"\(op)\"")
            }
        }
        self.operations = operations
    }

    private static func parsed(_ value: JSONValue, operation: Int) throws(Failure) -> JSONValue {
        do {
            return try value.parsed()
        } catch {
            throw Failure(operation: operation, reason: error.description)
        }
    }
}
