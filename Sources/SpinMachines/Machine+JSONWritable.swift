import SpinJSON

// A machine's state, its values and events write their JSON themselves (`JSONWritable`):
// the same bytes their `encode(to:)` makes through `OrderedJSONEncoder`, which a hosted
// machine Spin's every transition and every history entry would otherwise go through.

extension MachineValue: JSONWritable {
    package func writeJSON(into bytes: inout [UInt8]) -> Bool {
        switch self {
        case .null:
            bytes += "null".utf8
        case .bool(let value):
            bytes += (value ? "true" : "false").utf8
        case .number(let number):
            // As `encode(to:)`: integral numbers as integers (`1`, not `1.0`).
            if number.rounded() == number, abs(number) <= 9_007_199_254_740_992 {
                bytes += String(Int64(number)).utf8
            } else {
                guard let text = JSONValue.numberText(number) else { return false }
                bytes += text.utf8
            }
        case .string(let string):
            JSONValue.writeString(string, into: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                guard element.writeJSON(into: &bytes) else { return false }
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            return Self.write(members, into: &bytes)
        }
        return true
    }

    /// The members in name order and `}`, `leaving` out one name (an event's `type`,
    /// written before); after `{` when `open`, else after members written before.
    static func write(_ members: [String: MachineValue], leaving left: String? = nil, open: Bool = true,
                      into bytes: inout [UInt8]) -> Bool {
        if open { bytes.append(UInt8(ascii: "{")) }
        var first = open
        for key in members.keys.sorted() where key != left {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            JSONValue.writeString(key, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
            guard members[key]!.writeJSON(into: &bytes) else { return false }
        }
        bytes.append(UInt8(ascii: "}"))
        return true
    }
}

extension MachineEvent: JSONWritable {
    package func writeJSON(into bytes: inout [UInt8]) -> Bool {
        bytes += #"{"type":"#.utf8
        JSONValue.writeString(type, into: &bytes)
        return MachineValue.write(payload, leaving: "type", open: false, into: &bytes)
    }
}

extension MachineScheduledEvent: JSONWritable {
    package func writeJSON(into bytes: inout [UInt8]) -> Bool {
        bytes += #"{"key":"#.utf8
        bytes += String(key).utf8
        if let id {
            bytes += #","id":"#.utf8
            JSONValue.writeString(id, into: &bytes)
        }
        bytes += #","delay":"#.utf8
        bytes += String(delay).utf8
        bytes += #","event":"#.utf8
        guard event.writeJSON(into: &bytes) else { return false }
        bytes.append(UInt8(ascii: "}"))
        return true
    }
}

extension MachineState: JSONWritable {
    package func writeJSON(into bytes: inout [UInt8]) -> Bool {
        bytes += #"{"value":"#.utf8
        guard valueJSON.writeJSON(into: &bytes) else { return false }
        bytes += #","context":"#.utf8
        guard MachineValue.write(context, into: &bytes) else { return false }
        if !history.isEmpty {
            bytes += #","history":"#.utf8
            guard MachineValue.write(history.mapValues { .string($0.joined(separator: ".")) }, into: &bytes) else { return false }
        }
        let scheduled = self.scheduled
        if !scheduled.isEmpty {
            bytes += #","scheduled":["#.utf8
            for (index, event) in scheduled.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                guard event.writeJSON(into: &bytes) else { return false }
            }
            bytes.append(UInt8(ascii: "]"))
        }
        bytes.append(UInt8(ascii: "}"))
        return true
    }
}
