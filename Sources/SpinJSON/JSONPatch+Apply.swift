extension JSONPatch {
    /// `document` with every operation applied in order (RFC 6902 §4-5): the patched
    /// document, or the first operation that does not apply, and then nothing of it (the
    /// patch is atomic). A member an `add` creates goes after the others.
    package func apply(to original: JSONValue) throws(Failure) -> JSONValue {
        var document: JSONValue
        do {
            document = try original.parsed()
        } catch {
            throw Failure(operation: 0, reason: "the document: \(error)")
        }
        for (index, operation) in operations.enumerated() {
            do {
                try Self.perform(operation, on: &document)
            } catch {
                throw Failure(operation: index, reason: error.reason)
            }
        }
        return document
    }

    private struct Refusal: Error {
        var reason: String
    }

    private static func perform(_ operation: Operation, on document: inout JSONValue) throws(Refusal) {
        switch operation {
        case .add(let path, let value):
            try add(value, at: path, in: &document)
        case .remove(let path):
            _ = try remove(at: path, in: &document)
        case .replace(let path, let value):
            guard let last = path.tokens.last else { return document = value }
            try withParent(of: path, in: &document) { (parent: inout JSONValue) throws(Refusal) in
                switch parent {
                case .object(var members):
                    guard let position = members.firstIndex(where: { $0.key == last }) else {
                        throw Refusal(reason: "no member at \(path) to replace")
                    }
                    parent = .null
                    members[position].value = value
                    parent = .object(members)
                case .array(var items):
                    guard let index = JSONPointer.index(last), index < items.count else {
                        throw Refusal(reason: "no element at \(path) to replace")
                    }
                    parent = .null
                    items[index] = value
                    parent = .array(items)
                default:
                    throw Refusal(reason: "\(path) is inside a value that is neither an object nor an array")
                }
            }
        case .move(let from, let path):
            guard from != path else { return }
            guard !(path.tokens.count > from.tokens.count && path.tokens.starts(with: from.tokens)) else {
                throw Refusal(reason: "cannot move \(from) into its own child \(path)")
            }
            try add(try remove(at: from, in: &document), at: path, in: &document)
        case .copy(let from, let path):
            try add(try value(at: from, in: document), at: path, in: &document)
        case .test(let path, let expected):
            guard Self.equivalent(try value(at: path, in: document), expected) else {
                throw Refusal(reason: "test failed at \(path)")
            }
        }
    }

    private static func add(_ value: JSONValue, at path: JSONPointer, in document: inout JSONValue) throws(Refusal) {
        guard let last = path.tokens.last else { return document = value }
        try withParent(of: path, in: &document) { (parent: inout JSONValue) throws(Refusal) in
            switch parent {
            case .object(var members):
                parent = .null
                if let position = members.firstIndex(where: { $0.key == last }) {
                    members[position].value = value
                } else {
                    members.append((last, value))
                }
                parent = .object(members)
            case .array(var items):
                let index = last == "-" ? items.count : JSONPointer.index(last)
                guard let index, index <= items.count else {
                    throw Refusal(reason: "\(path): no index \(last) to add at in an array of \(items.count)")
                }
                parent = .null
                items.insert(value, at: index)
                parent = .array(items)
            default:
                throw Refusal(reason: "\(path) is inside a value that is neither an object nor an array")
            }
        }
    }

    private static func remove(at path: JSONPointer, in document: inout JSONValue) throws(Refusal) -> JSONValue {
        guard let last = path.tokens.last else { throw Refusal(reason: "cannot remove the whole document") }
        var removed = JSONValue.null
        try withParent(of: path, in: &document) { (parent: inout JSONValue) throws(Refusal) in
            switch parent {
            case .object(var members):
                guard let position = members.firstIndex(where: { $0.key == last }) else {
                    throw Refusal(reason: "no member at \(path) to remove")
                }
                parent = .null
                removed = members.remove(at: position).value
                parent = .object(members)
            case .array(var items):
                guard let index = JSONPointer.index(last), index < items.count else {
                    throw Refusal(reason: "no element at \(path) to remove")
                }
                parent = .null
                removed = items.remove(at: index)
                parent = .array(items)
            default:
                throw Refusal(reason: "\(path) is inside a value that is neither an object nor an array")
            }
        }
        return removed
    }

    private static func value(at path: JSONPointer, in document: JSONValue) throws(Refusal) -> JSONValue {
        var current = document
        for token in path.tokens {
            if case .raw = current, let parsed = try? current.parsed() { current = parsed }
            switch current {
            case .object(let members):
                guard let member = members.first(where: { $0.key == token }) else { throw Refusal(reason: "no value at \(path)") }
                current = member.value
            case .array(let items):
                guard let index = JSONPointer.index(token), index < items.count else { throw Refusal(reason: "no value at \(path)") }
                current = items[index]
            default:
                throw Refusal(reason: "no value at \(path)")
            }
        }
        return current
    }

    /// Runs `body` on the container that holds `path`'s last token, changed in place: each
    /// level is taken out of its parent while it changes (the parent holds `.null`
    /// meanwhile), so that a patch of one element of a large array copies nothing.
    private static func withParent(of path: JSONPointer, in document: inout JSONValue,
                                   _ body: (inout JSONValue) throws(Refusal) -> Void) throws(Refusal) {
        try descend(path.tokens.dropLast(), path: path, in: &document, body)
    }

    private static func descend(_ tokens: ArraySlice<String>, path: JSONPointer, in value: inout JSONValue,
                                _ body: (inout JSONValue) throws(Refusal) -> Void) throws(Refusal) {
        if case .raw = value {
            guard let parsed = try? value.parsed() else { throw Refusal(reason: "\(path) is inside a value that is not JSON") }
            value = parsed
        }
        guard let token = tokens.first else { return try body(&value) }
        switch value {
        case .object(var members):
            guard let position = members.firstIndex(where: { $0.key == token }) else {
                throw Refusal(reason: "\(path): no member \"\(token)\" on the way")
            }
            value = .null
            defer { value = .object(members) }
            try descend(tokens.dropFirst(), path: path, in: &members[position].value, body)
        case .array(var items):
            guard let index = JSONPointer.index(token), index < items.count else {
                throw Refusal(reason: "\(path): no element \(token) on the way")
            }
            value = .null
            defer { value = .array(items) }
            try descend(tokens.dropFirst(), path: path, in: &items[index], body)
        default:
            throw Refusal(reason: "\(path) is inside a value that is neither an object nor an array")
        }
    }

    /// RFC 6902 §4.6's equality: numbers by value, objects regardless of member order.
    static func equivalent(_ a: JSONValue, _ b: JSONValue) -> Bool {
        guard let a = try? a.parsed(), let b = try? b.parsed() else { return false }
        switch (a, b) {
        case let (.number(x), .number(y)): return x == y || (Double(x) != nil && Double(x) == Double(y))
        case let (.array(x), .array(y)): return x.count == y.count && zip(x, y).allSatisfy { equivalent($0, $1) }
        case let (.object(x), .object(y)):
            guard x.count == y.count else { return false }
            let index = MemberIndex(y)
            return x.allSatisfy { member in
                index.position(of: member.key, in: y).map { equivalent(member.value, y[$0].value) } ?? false
            }
        default: return a == b
        }
    }
}
