/// An object a `DeadlineHeap` can hold: it keeps its own place in the heap, so that
/// moving or removing it costs O(log n) and no look-up table.
protocol DeadlineHeapMember: AnyObject {
    /// Its index in the heap's storage while it is in the heap, nil otherwise. Only the
    /// heap writes it.
    var deadlineHeapIndex: Int? { get set }
}

/// Members ordered by deadline, earliest first: the timers of all connections of one
/// event loop, whose earliest sets how long the loop's `epoll_wait` may sleep: no timer
/// object per connection (a Dispatch timer cost about half a KiB each). A member is in the heap at most once. A value type with no clock: tests
/// drive it with any instants.
struct DeadlineHeap<Instant: Comparable, Member: DeadlineHeapMember> {
    private var entries: [(deadline: Instant, member: Member)] = []

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// The earliest deadline, if any.
    var earliest: Instant? { entries.first?.deadline }

    /// The deadline `member` is held for, if it is in the heap.
    func deadline(of member: Member) -> Instant? {
        member.deadlineHeapIndex.map { entries[$0].deadline }
    }

    /// Puts `member` in the heap at `deadline`, or moves it there if it is in already.
    mutating func schedule(_ member: Member, at deadline: Instant) {
        if let index = member.deadlineHeapIndex {
            let earlier = deadline < entries[index].deadline
            entries[index].deadline = deadline
            if earlier { siftUp(index) } else { siftDown(index) }
        } else {
            entries.append((deadline, member))
            member.deadlineHeapIndex = entries.count - 1
            siftUp(entries.count - 1)
        }
    }

    /// Takes `member` out of the heap; nothing if it is not in.
    mutating func remove(_ member: Member) {
        guard let index = member.deadlineHeapIndex else { return }
        member.deadlineHeapIndex = nil
        let last = entries.count - 1
        if index != last {
            entries.swapAt(index, last)
            entries[index].member.deadlineHeapIndex = index
        }
        entries.removeLast()
        if index < entries.count {
            siftUp(index)
            siftDown(index)
        }
    }

    /// Takes every member whose deadline is at or before `now` out of the heap and
    /// appends them to `due`, earliest first.
    mutating func popDue(now: Instant, into due: inout [Member]) {
        while let first = entries.first, first.deadline <= now {
            remove(first.member)
            due.append(first.member)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var index = start
        while index > 0 {
            let parent = (index - 1) / 2
            guard entries[index].deadline < entries[parent].deadline else { break }
            swapEntries(index, parent)
            index = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var index = start
        while true {
            let left = 2 * index + 1
            guard left < entries.count else { return }
            let right = left + 1
            let child = right < entries.count && entries[right].deadline < entries[left].deadline ? right : left
            guard entries[child].deadline < entries[index].deadline else { return }
            swapEntries(index, child)
            index = child
        }
    }

    private mutating func swapEntries(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        entries[a].member.deadlineHeapIndex = a
        entries[b].member.deadlineHeapIndex = b
    }
}
