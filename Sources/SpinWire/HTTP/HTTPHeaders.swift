/// An ordered list of header (or trailer) fields. Lookup by name is ASCII
/// case-insensitive (RFC 9110 §5.1); the order and the original spelling of names are
/// kept, and a name may appear several times (RFC 9110 §5.3).
///
/// Values are kept as received, without leading/trailing whitespace. They are decoded as
/// UTF-8; obs-text bytes that are not valid UTF-8 become U+FFFD (nothing in this server
/// interprets such bytes).
package struct HTTPHeaders: Sendable, Equatable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    /// One field line.
    package struct Field: Sendable, Equatable, Hashable {
        package var name: String
        package var value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    package private(set) var fields: [Field]

    package init() { fields = [] }

    /// Empty, with room for `minimumCapacity` fields (one allocation for a typical head).
    package init(minimumCapacity: Int) {
        fields = []
        fields.reserveCapacity(minimumCapacity)
    }

    /// `fields` in order, with room for one more (the `X-Request-Id` a server adds to a
    /// head it writes itself) without a second allocation.
    package init(_ fields: [(String, String)]) {
        // None (`[:]`, a default argument): nothing allocated for room not asked for.
        guard !fields.isEmpty else {
            self.fields = []
            return
        }
        var built: [Field] = []
        built.reserveCapacity(fields.count + 1)
        for (name, value) in fields { built.append(Field(name: name, value: value)) }
        self.fields = built
    }

    package init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    package var startIndex: Int { fields.startIndex }
    package var endIndex: Int { fields.endIndex }
    package subscript(position: Int) -> Field { fields[position] }

    /// The first value of `name`, or nil.
    package subscript(name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Every value of `name`, in order.
    package func values(for name: String) -> [String] {
        fields.compactMap { $0.name.equalsIgnoringASCIICase(name) ? $0.value : nil }
    }

    package func contains(_ name: String) -> Bool {
        fields.contains { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Whether the comma-separated list field `name` (all its lines) has the member
    /// `token`, compared case-insensitively: `Connection: keep-alive, Upgrade`.
    package func containsToken(_ token: String, in name: String) -> Bool {
        values(for: name).contains { value in
            HTTPSyntax.listMembers(value).contains { $0.equalsIgnoringASCIICase(token) }
        }
    }

    package mutating func append(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Appends every field of `other`, in order.
    package mutating func append(contentsOf other: HTTPHeaders) {
        fields.append(contentsOf: other.fields)
    }

    /// Removes every field called `name`.
    package mutating func remove(name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Replaces every field called `name` with one field, or appends it.
    package mutating func replaceOrAdd(name: String, value: String) {
        if let index = fields.firstIndex(where: { $0.name.equalsIgnoringASCIICase(name) }) {
            fields[index].value = value
            var seen = false
            fields.removeAll { field in
                guard field.name.equalsIgnoringASCIICase(name) else { return false }
                defer { seen = true }
                return seen
            }
        } else {
            append(name: name, value: value)
        }
    }
}
