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
    /// - Values compare as their compact JSON text: numbers as written (`1.0` is not `1`,
    ///   which is what a client reads), strings as escaped.
    ///
    /// The walk reads the two texts without building either tree: a value whose bytes are
    /// the same on both sides is skipped with one comparison, and only containers whose
    /// bytes differ are taken apart, one level at a time. A state of 10,000 items with one
    /// changed costs a few scans of its text, not 10,000 parsed objects. The values in the
    /// operations are `.raw` slices of `new`. A text that is not JSON is replaced whole.
    package static func diff(from old: JSONValue, to new: JSONValue) -> JSONPatch {
        let a = RawJSON(old.bytes), b = RawJSON(new.bytes)
        var operations: [Operation] = []
        guard let aRoot = a.root, let bRoot = b.root,
              (try? diff(a, aRoot, b, bRoot, at: .root, into: &operations)) != nil else {
            return JSONPatch([.replace(.root, new)])
        }
        return JSONPatch(operations)
    }

    private static func diff(_ a: RawJSON, _ old: Range<Int>, _ b: RawJSON, _ new: Range<Int>, at path: JSONPointer,
                             into operations: inout [Operation]) throws(RawJSON.Malformed) {
        if a.same(old, as: b, new) { return }
        switch (a.bytes[old.lowerBound], b.bytes[new.lowerBound]) {
        case (UInt8(ascii: "{"), UInt8(ascii: "{")):
            try diffObjects(a, try a.members(of: old), b, try b.members(of: new), at: path, into: &operations)
        case (UInt8(ascii: "["), UInt8(ascii: "[")):
            try diffArrays(a, try a.elements(of: old), b, try b.elements(of: new), at: path, into: &operations)
        default:
            operations.append(.replace(path, b.value(new)))
        }
    }

    private static func diffObjects(_ a: RawJSON, _ old: [(key: String, value: Range<Int>)],
                                    _ b: RawJSON, _ new: [(key: String, value: Range<Int>)],
                                    at path: JSONPointer, into operations: inout [Operation]) throws(RawJSON.Malformed) {
        // Same keys in the same order (the usual case for a Codable state): pairwise.
        if old.count == new.count, zip(old, new).allSatisfy({ $0.key == $1.key }) {
            for (x, y) in zip(old, new) { try diff(a, x.value, b, y.value, at: path.appending(x.key), into: &operations) }
            return
        }
        let oldIndex = MemberIndex(old)
        let newIndex = MemberIndex(new)
        for member in old where newIndex.position(of: member.key, in: new) == nil {
            operations.append(.remove(path.appending(member.key)))
        }
        for member in new {
            if let position = oldIndex.position(of: member.key, in: old) {
                try diff(a, old[position].value, b, member.value, at: path.appending(member.key), into: &operations)
            } else {
                operations.append(.add(path.appending(member.key), b.value(member.value)))
            }
        }
    }

    private static func diffArrays(_ a: RawJSON, _ old: [Range<Int>], _ b: RawJSON, _ new: [Range<Int>],
                                   at path: JSONPointer, into operations: inout [Operation]) throws(RawJSON.Malformed) {
        let shorter = min(old.count, new.count)
        var prefix = 0
        while prefix < shorter, a.same(old[prefix], as: b, new[prefix]) { prefix += 1 }
        var suffix = 0
        while suffix < shorter - prefix, a.same(old[old.count - 1 - suffix], as: b, new[new.count - 1 - suffix]) { suffix += 1 }
        let oldMiddle = old.count - prefix - suffix
        let newMiddle = new.count - prefix - suffix
        let common = min(oldMiddle, newMiddle)
        for index in prefix..<prefix + common {
            try diff(a, old[index], b, new[index], at: path.appending(String(index)), into: &operations)
        }
        if oldMiddle > newMiddle {
            // From the last, so that each index still names the element it did.
            for index in stride(from: prefix + oldMiddle - 1, through: prefix + common, by: -1) {
                operations.append(.remove(path.appending(String(index))))
            }
        } else {
            for index in prefix + common..<prefix + newMiddle {
                operations.append(.add(path.appending(String(index)), b.value(new[index])))
            }
        }
    }
}

/// Finds an object's member by key: by scanning a small object, through a dictionary
/// for a large one (a state's object of thousands of members stays linear to diff).
struct MemberIndex {
    private let positions: [String: Int]?

    init<Value>(_ members: [(key: String, value: Value)]) {
        if members.count > 16 {
            var positions: [String: Int] = [:]
            positions.reserveCapacity(members.count)
            for (index, member) in members.enumerated() where positions[member.key] == nil { positions[member.key] = index }
            self.positions = positions
        } else {
            positions = nil
        }
    }

    func position<Value>(of key: String, in members: [(key: String, value: Value)]) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }
}
