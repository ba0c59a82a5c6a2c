/// A set that holds up to one element inline and more in a `Set`: what the Gear router
/// keeps per Spin and per Gear (the Gears a Spin catches, the Spins that catch a Gear,
/// the senders a receiver looks at), where one element is the common case — a Gear per
/// user or device — and a `Set` of one costs a 90-byte allocation per Spin.
///
/// Iteration order is unspecified, as a `Set`'s; a set that shrinks to one element or
/// none lets its storage go.
struct SmallSet<Element: Hashable>: Sequence, ExpressibleByArrayLiteral {
    fileprivate enum Storage {
        case none
        case one(Element)
        case many(Set<Element>)
    }

    private var storage: Storage = .none

    init() {}

    init(arrayLiteral elements: Element...) {
        self.init(elements)
    }

    init<S: Sequence>(_ elements: S) where S.Element == Element {
        for element in elements { insert(element) }
    }

    var isEmpty: Bool {
        if case .none = storage { return true }
        return false
    }

    var count: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .many(let set): set.count
        }
    }

    func contains(_ element: Element) -> Bool {
        switch storage {
        case .none: false
        case .one(let held): held == element
        case .many(let set): set.contains(element)
        }
    }

    /// Adds `element`; false when it was there already.
    @discardableResult
    mutating func insert(_ element: Element) -> Bool {
        switch storage {
        case .none:
            storage = .one(element)
            return true
        case .one(let held):
            guard held != element else { return false }
            storage = .many([held, element])
            return true
        case .many(var set):
            // Out of `storage` while it changes, so that the set is not copied.
            storage = .none
            defer { storage = .many(set) }
            return set.insert(element).inserted
        }
    }

    /// Removes `element`; the element removed, or nil when it was not there.
    @discardableResult
    mutating func remove(_ element: Element) -> Element? {
        switch storage {
        case .none:
            return nil
        case .one(let held):
            guard held == element else { return nil }
            storage = .none
            return held
        case .many(var set):
            storage = .none
            let removed = set.remove(element)
            switch set.count {
            case 0: break
            case 1: storage = .one(set.first!)
            default: storage = .many(set)
            }
            return removed
        }
    }

    mutating func formUnion<S: Sequence>(_ elements: S) where S.Element == Element {
        for element in elements { insert(element) }
    }

    func makeIterator() -> Iterator {
        switch storage {
        case .none: Iterator(one: nil, many: nil)
        case .one(let held): Iterator(one: held, many: nil)
        case .many(let set): Iterator(one: nil, many: set.makeIterator())
        }
    }

    struct Iterator: IteratorProtocol {
        fileprivate var one: Element?
        fileprivate var many: Set<Element>.Iterator?

        mutating func next() -> Element? {
            if let held = one {
                one = nil
                return held
            }
            return many?.next()
        }
    }
}

extension SmallSet: Sendable where Element: Sendable {}
extension SmallSet.Iterator: Sendable where Element: Sendable {}
extension SmallSet.Storage: Sendable where Element: Sendable {}
extension SmallSet: Equatable {
    static func == (left: SmallSet, right: SmallSet) -> Bool {
        left.count == right.count && left.allSatisfy { right.contains($0) }
    }
}

/// A dictionary that holds up to one entry inline and more in a `Dictionary`: what the
/// Gear router keeps per Gear and per receiver (the senders seen on a Gear, a receiver's
/// inbox per sender), where one entry is the common case, as for `SmallSet`.
///
/// Iteration order is unspecified; a dictionary that shrinks to one entry or none lets
/// its storage go.
struct SmallDictionary<Key: Hashable, Value>: Sequence, ExpressibleByDictionaryLiteral {
    fileprivate enum Storage {
        case none
        case one(Key, Value)
        case many([Key: Value])
    }

    private var storage: Storage = .none

    init() {}

    init(dictionaryLiteral elements: (Key, Value)...) {
        for (key, value) in elements { self[key] = value }
    }

    var isEmpty: Bool {
        if case .none = storage { return true }
        return false
    }

    var count: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .many(let dictionary): dictionary.count
        }
    }

    var values: [Value] { map(\.value) }

    subscript(key: Key) -> Value? {
        get {
            switch storage {
            case .none: return nil
            case .one(let held, let value): return held == key ? value : nil
            case .many(let dictionary): return dictionary[key]
            }
        }
        set {
            switch storage {
            case .none:
                if let newValue { storage = .one(key, newValue) }
            case .one(let held, let value):
                if held == key {
                    storage = newValue.map { .one(key, $0) } ?? .none
                } else if let newValue {
                    storage = .many([held: value, key: newValue])
                }
            case .many(var dictionary):
                // Out of `storage` while it changes, so that the dictionary is not copied.
                storage = .none
                dictionary[key] = newValue
                switch dictionary.count {
                case 0: break
                case 1: storage = .one(dictionary.first!.key, dictionary.first!.value)
                default: storage = .many(dictionary)
                }
            }
        }
    }

    subscript(key: Key, default value: @autoclosure () -> Value) -> Value {
        get { self[key] ?? value() }
        set { self[key] = newValue }
    }

    func makeIterator() -> Iterator {
        switch storage {
        case .none: Iterator(one: nil, many: nil)
        case .one(let key, let value): Iterator(one: (key, value), many: nil)
        case .many(let dictionary): Iterator(one: nil, many: dictionary.makeIterator())
        }
    }

    struct Iterator: IteratorProtocol {
        fileprivate var one: (key: Key, value: Value)?
        fileprivate var many: [Key: Value].Iterator?

        mutating func next() -> (key: Key, value: Value)? {
            if let entry = one {
                one = nil
                return entry
            }
            return many?.next()
        }
    }
}

extension SmallDictionary: Sendable where Key: Sendable, Value: Sendable {}
extension SmallDictionary.Storage: Sendable where Key: Sendable, Value: Sendable {}
extension SmallDictionary.Iterator: Sendable where Key: Sendable, Value: Sendable {}
