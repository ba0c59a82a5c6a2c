extension JSONPatch {
    /// A patch that turns `old` into `new`: `add`, `remove` and `replace` only, as few as
    /// this simple walk finds.
    ///
    /// - Objects: a `remove` per member that went, the difference of each member that
    ///   stayed, an `add` per new member. Member order is not patched: applied, the patch
    ///   gives `new` with its members in an order that may differ (JSON objects are
    ///   unordered; only our own writing of them keeps an order).
    /// - Arrays: the common prefix and suffix are skipped; in what is left, elements at the
    ///   same place are compared pairwise, and the rest removed or added. A changed element
    ///   is one operation at its index, and so is one element inserted or removed anywhere.
    /// - Numbers compare as their JSON text (`1.0` is not `1`): that is what a client reads.
    ///
    /// `.raw` values are parsed first; one that does not parse is replaced whole.
    package static func diff(from old: JSONValue, to new: JSONValue) -> JSONPatch {
        var operations: [Operation] = []
        diff(old, new, at: .root, into: &operations)
        return JSONPatch(operations)
    }

    private static func diff(_ old: JSONValue, _ new: JSONValue, at path: JSONPointer, into operations: inout [Operation]) {
        switch (old, new) {
        case (.raw(let a), .raw(let b)) where a == b:
            return
        case (.raw, _), (_, .raw):
            guard let old = try? old.parsed(), let new = try? new.parsed() else {
                return operations.append(.replace(path, new))
            }
            diff(old, new, at: path, into: &operations)
        case (.object(let a), .object(let b)):
            diffObjects(a, b, at: path, into: &operations)
        case (.array(let a), .array(let b)):
            diffArrays(a, b, at: path, into: &operations)
        default:
            if old != new { operations.append(.replace(path, new)) }
        }
    }

    private static func diffObjects(_ old: [(key: String, value: JSONValue)], _ new: [(key: String, value: JSONValue)],
                                    at path: JSONPointer, into operations: inout [Operation]) {
        // Same keys in the same order (the usual case for a Codable state): pairwise.
        if old.count == new.count, zip(old, new).allSatisfy({ $0.key == $1.key }) {
            for (a, b) in zip(old, new) { diff(a.value, b.value, at: path.appending(a.key), into: &operations) }
            return
        }
        let oldIndex = MemberIndex(old)
        let newIndex = MemberIndex(new)
        for member in old where newIndex.position(of: member.key, in: new) == nil {
            operations.append(.remove(path.appending(member.key)))
        }
        for member in new {
            if let position = oldIndex.position(of: member.key, in: old) {
                diff(old[position].value, member.value, at: path.appending(member.key), into: &operations)
            } else {
                operations.append(.add(path.appending(member.key), member.value))
            }
        }
    }

    private static func diffArrays(_ old: [JSONValue], _ new: [JSONValue], at path: JSONPointer,
                                   into operations: inout [Operation]) {
        let shorter = min(old.count, new.count)
        var prefix = 0
        while prefix < shorter, old[prefix] == new[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < shorter - prefix, old[old.count - 1 - suffix] == new[new.count - 1 - suffix] { suffix += 1 }
        let oldMiddle = old.count - prefix - suffix
        let newMiddle = new.count - prefix - suffix
        let common = min(oldMiddle, newMiddle)
        for index in prefix..<prefix + common {
            diff(old[index], new[index], at: path.appending(String(index)), into: &operations)
        }
        if oldMiddle > newMiddle {
            // From the last, so that each index still names the element it did.
            for index in stride(from: prefix + oldMiddle - 1, through: prefix + common, by: -1) {
                operations.append(.remove(path.appending(String(index))))
            }
        } else {
            for index in prefix + common..<prefix + newMiddle {
                operations.append(.add(path.appending(String(index)), new[index]))
            }
        }
    }
}

/// Finds an object's member by key: by scanning a small object, through a dictionary
/// for a large one (a state's object of thousands of members stays linear to diff).
struct MemberIndex {
    private let positions: [String: Int]?

    init(_ members: [(key: String, value: JSONValue)]) {
        if members.count > 16 {
            var positions: [String: Int] = [:]
            positions.reserveCapacity(members.count)
            for (index, member) in members.enumerated() where positions[member.key] == nil { positions[member.key] = index }
            self.positions = positions
        } else {
            positions = nil
        }
    }

    func position(of key: String, in members: [(key: String, value: JSONValue)]) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }
}
