/// What one catching Spin has made of one sender's Gear outbox: a value, changed only by
/// the events of delivery (`GearRouter` drives it; tested without threads or sockets).
///
/// Positions after `settled` that were handed to the Spin are `items`, in position order,
/// each in flight (its events enqueued, not yet applied or declined), taken (applied or
/// declined, in the state at `sequence`) or ignored (no catching feedback maps it, or its
/// type cannot decode it). An item is **settled** once a crash keeps what the Spin made of
/// it: ignored at once (a redelivery is ignored again), taken once the Spin's journal is
/// durable through its sequence (the record of its event, or of the next one, carries the
/// position: `HostedTransition.consumed`). `settled` is the position up to which every
/// item is settled: what the sender's outbox must still keep for this Spin starts after it.
///
/// When the Spin drops what it had not applied (it suspended or stopped), the items in
/// flight are handed back (`dropInFlight`); when it goes back to a durable state (its
/// storage failed), so are the items taken after that state (`rollBack`): both are
/// delivered again, in order.
struct GearInbox: Equatable {
    enum Item: Equatable {
        /// Handed over, `remaining` of its events not yet applied or declined; `sequence`:
        /// the latest state one of them was applied or declined in.
        case inFlight(remaining: Int, sequence: UInt64?)
        /// Applied or declined, the last of it in the state at `sequence`.
        case taken(sequence: UInt64)
        /// Nothing of the Spin took it.
        case ignored
    }

    /// Every position up to this one is settled.
    private(set) var settled: UInt64
    /// The items after `settled`, at consecutive positions from `settled + 1`.
    private(set) var items: [Item] = []

    /// A Spin that consumed (durably) up to `consumed`.
    init(consumed: UInt64) {
        settled = consumed
    }

    /// The last position handed to the Spin (or settled).
    var delivered: UInt64 { settled + UInt64(items.count) }

    /// The items in flight.
    var inFlight: Int {
        items.reduce(0) { count, item in
            if case .inFlight = item { return count + 1 }
            return count
        }
    }

    /// Whether the item at `position` was handed over and not handed back.
    func holds(_ position: UInt64) -> Bool {
        position > settled && position <= delivered
    }

    // MARK: Delivery

    /// `position` (the next one, `delivered + 1`) was handed to the Spin: `enqueued` of its
    /// events are in its loop; none (0) means it ignored it.
    mutating func handed(_ position: UInt64, enqueued: Int) {
        precondition(position == delivered + 1, "positions are handed over in order")
        items.append(enqueued > 0 ? .inFlight(remaining: enqueued, sequence: nil) : .ignored)
    }

    /// The sender's outbox no longer holds what follows `delivered` up to `position - 1`
    /// (trimmed for lagging, or consumed before this Spin was told): skipped, as settled
    /// as the items before them. Only when nothing is held (`items` empty).
    mutating func skip(to position: UInt64) {
        precondition(items.isEmpty && position > settled, "skipping needs an empty inbox")
        settled = position - 1
    }

    /// One event of the item at `position` was applied or declined in the state at
    /// `sequence`. False when the item is not in flight (a stale receipt).
    @discardableResult
    mutating func took(_ position: UInt64, sequence: UInt64) -> Bool {
        guard holds(position) else { return false }
        let index = Int(position - settled - 1)
        guard case .inFlight(let remaining, let latest) = items[index] else { return false }
        let at = max(latest ?? 0, sequence)
        items[index] = remaining > 1 ? .inFlight(remaining: remaining - 1, sequence: at) : .taken(sequence: at)
        return true
    }

    // MARK: Durability

    /// The Spin's journal is durable through `sequence`: the taken items up to it, and the
    /// ignored ones between them, are settled. Returns how far `settled` moved.
    @discardableResult
    mutating func durable(through sequence: UInt64) -> UInt64 {
        settle(count: settledPrefix(through: sequence))
    }

    private func isSettledAt(_ item: Item, _ sequence: UInt64) -> Bool {
        switch item {
        case .ignored: true
        case .taken(let at): at <= sequence
        case .inFlight: false
        }
    }

    /// The length of the prefix of `items` that is settled when the journal is durable
    /// through `sequence`.
    private func settledPrefix(through sequence: UInt64) -> Int {
        items.firstIndex { !isSettledAt($0, sequence) } ?? items.count
    }

    private mutating func settle(count: Int) -> UInt64 {
        guard count > 0 else { return 0 }
        items.removeFirst(count)
        settled += UInt64(count)
        return UInt64(count)
    }

    // MARK: Handing back

    /// The Spin dropped the events it had not applied (it suspended or stopped): the
    /// items from the first one in flight on are handed back (delivered again later).
    /// Returns how many.
    @discardableResult
    mutating func dropInFlight() -> Int {
        guard let first = items.firstIndex(where: { if case .inFlight = $0 { return true }; return false }) else { return 0 }
        let count = items.count - first
        items.removeSubrange(first...)
        return count
    }

    /// The Spin went back to its durable state at `sequence`: what it took after that, and
    /// everything after it, is handed back. Returns how many items.
    @discardableResult
    mutating func rollBack(to sequence: UInt64) -> Int {
        let first = items.firstIndex { item in
            switch item {
            case .ignored: false
            case .taken(let at): at > sequence
            case .inFlight: true
            }
        }
        guard let first else { return 0 }
        let count = items.count - first
        items.removeSubrange(first...)
        return count
    }
}
