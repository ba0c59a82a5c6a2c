import Foundation

/// The order a machine file writes the members of its `states` objects in: XState's
/// document order, which decides the order of a parallel state's regions (their entry and
/// exit actions, which region's transition wins a conflict). `MachineValue` keeps no member
/// order, so this reads it from the file's bytes.
///
/// It reads the text that `JSONDecoder` has already accepted as JSON; should it still fail
/// (it reads only what it needs, and stops deeper than `maximumDepth`), it knows no order,
/// and states fall back to name order.
struct StatesOrder {
    /// Deeper objects are not read: the order is then the names' (`JSONDecoder` refuses
    /// much deeper documents anyway).
    static let maximumDepth = 256

    /// The member names of each `states` object, in the order written, by the path of
    /// member names leading to it (`["states", "editor", "states"]`).
    private var orders: [[String]: [String]] = [:]

    init(json bytes: [UInt8]) {
        var reader = Reader(bytes: bytes)
        if reader.value(path: [], depth: 0), reader.atEnd { orders = reader.orders }
    }

    /// The names of `members`, the `states` object of the state at `parent` (the root:
    /// `[]`), in the order the file writes them; in name order where that is not known.
    func names(_ members: [String: MachineValue], under parent: [String]) -> [String] {
        let path = parent.flatMap { ["states", $0] } + ["states"]
        guard let order = orders[path], order.count == members.count, order.allSatisfy({ members[$0] != nil }) else {
            return members.keys.sorted()
        }
        return order
    }

    /// A reader of JSON text that records the member order of `states` objects and skips
    /// everything else. It returns false on anything that is not JSON.
    private struct Reader {
        let bytes: [UInt8]
        var index = 0
        var orders: [[String]: [String]] = [:]

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        var atEnd: Bool {
            mutating get {
                skipSpace()
                return index == bytes.count
            }
        }

        mutating func value(path: [String], depth: Int) -> Bool {
            guard depth < StatesOrder.maximumDepth else { return false }
            skipSpace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(path: path, depth: depth)
            case UInt8(ascii: "["): return array(path: path, depth: depth)
            case UInt8(ascii: "\""): return string() != nil
            default:
                // A number, true, false or null: up to the next delimiter.
                let start = index
                while index < bytes.count, !Self.delimiters.contains(bytes[index]) { index += 1 }
                return index > start
            }
        }

        private static let delimiters: Set<UInt8> = [UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"),
                                                     0x20, 0x09, 0x0A, 0x0D]

        private mutating func object(path: [String], depth: Int) -> Bool {
            index += 1
            var names: [String] = []
            var seen: Set<String> = []
            skipSpace()
            if consume(UInt8(ascii: "}")) { return record(names, at: path) }
            while true {
                skipSpace()
                guard let name = string() else { return false }
                skipSpace()
                guard consume(UInt8(ascii: ":")) else { return false }
                // Only what leads to a `states` object needs its path: the rest is skipped
                // under a path no order is kept for.
                guard value(path: path + [name], depth: depth + 1) else { return false }
                if seen.insert(name).inserted { names.append(name) }
                skipSpace()
                if consume(UInt8(ascii: ",")) { continue }
                guard consume(UInt8(ascii: "}")) else { return false }
                return record(names, at: path)
            }
        }

        private mutating func array(path: [String], depth: Int) -> Bool {
            index += 1
            skipSpace()
            if consume(UInt8(ascii: "]")) { return true }
            while true {
                // States are never inside arrays: what is inside one is skipped.
                guard value(path: path + ["[]"], depth: depth + 1) else { return false }
                skipSpace()
                if consume(UInt8(ascii: ",")) { continue }
                return consume(UInt8(ascii: "]"))
            }
        }

        private mutating func record(_ names: [String], at path: [String]) -> Bool {
            if path.last == "states" { orders[path] = names }
            return true
        }

        /// A JSON string, escapes decoded; nil if there is none here.
        private mutating func string() -> String? {
            guard consume(UInt8(ascii: "\"")) else { return nil }
            let start = index - 1
            var escaped = false
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\\") {
                    escaped = true
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    let text = bytes[start..<index]
                    guard escaped else { return String(decoding: text.dropFirst().dropLast(), as: UTF8.self) }
                    return try? JSONDecoder().decode(String.self, from: Data(text))
                }
            }
            return nil
        }

        private mutating func consume(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        private mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }
    }
}
