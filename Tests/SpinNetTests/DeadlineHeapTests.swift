import Testing
@testable import SpinNet

/// A heap member for the tests: a name and its place.
private final class Member: DeadlineHeapMember, CustomStringConvertible {
    let name: String
    var deadlineHeapIndex: Int?
    init(_ name: String) { self.name = name }
    var description: String { name }
}

private func drain(_ heap: inout DeadlineHeap<Int, Member>, now: Int) -> [String] {
    var due: [Member] = []
    heap.popDue(now: now, into: &due)
    return due.map(\.name)
}

@Suite struct DeadlineHeapTests {
    @Test func dueMembers_LeaveEarliestFirst_AndOnlyThoseDue() {
        var heap = DeadlineHeap<Int, Member>()
        let members = (0..<8).map { Member("m\($0)") }
        for (member, deadline) in zip(members, [50, 10, 70, 30, 10, 90, 20, 60]) {
            heap.schedule(member, at: deadline)
        }
        #expect(heap.earliest == 10)
        let due = drain(&heap, now: 30)
        #expect(Set(due.prefix(2)) == ["m1", "m4"])  // equal deadlines, either order
        #expect(Array(due.dropFirst(2)) == ["m6", "m3"])
        #expect(heap.count == 4)
        #expect(heap.earliest == 50)
        #expect(members[1].deadlineHeapIndex == nil)  // out of the heap
        #expect(drain(&heap, now: 100) == ["m0", "m7", "m2", "m5"])
        #expect(heap.isEmpty)
    }

    @Test func reschedulingAMember_MovesIt_AndNeverDuplicatesIt() {
        var heap = DeadlineHeap<Int, Member>()
        let (a, b, c) = (Member("a"), Member("b"), Member("c"))
        heap.schedule(a, at: 10)
        heap.schedule(b, at: 20)
        heap.schedule(c, at: 30)
        heap.schedule(c, at: 5)     // earlier
        heap.schedule(a, at: 40)    // later
        #expect(heap.count == 3)
        #expect(heap.deadline(of: a) == 40)
        #expect(drain(&heap, now: 100) == ["c", "b", "a"])
    }

    @Test func removingMembers_AnywhereInTheHeap_KeepsTheOrder() {
        var heap = DeadlineHeap<Int, Member>()
        let members = (0..<20).map { Member("m\($0)") }
        for (index, member) in members.enumerated() { heap.schedule(member, at: (index * 7) % 20) }
        for index in stride(from: 0, to: 20, by: 3) { heap.remove(members[index]) }
        heap.remove(members[0])  // not in the heap any more: nothing happens
        let expected = members.indices.filter { $0 % 3 != 0 }
            .sorted { ($0 * 7) % 20 < ($1 * 7) % 20 }.map { "m\($0)" }
        #expect(drain(&heap, now: 100) == expected)
    }
}
