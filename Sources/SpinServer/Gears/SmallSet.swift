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
