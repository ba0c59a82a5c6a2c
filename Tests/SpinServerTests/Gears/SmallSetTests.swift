@testable import SpinServer
import Testing

/// `SmallSet`, the Gear router's per-Spin and per-Gear sets: the same answers as a `Set`
/// whatever its size, through growing to many and shrinking back to one and none.
struct SmallSetTests {
    @Test func answersAsASet_ThroughGrowingAndShrinking() {
        var small = SmallSet<String>()
        var reference = Set<String>()
        #expect(small.isEmpty && small.count == 0 && Array(small).isEmpty)
        var generator = SystemRandomNumberGenerator()
        for step in 0..<2000 {
            let element = "g\(Int.random(in: 0..<6, using: &generator))"
            if Bool.random(using: &generator) {
                #expect(small.insert(element) == reference.insert(element).inserted, "step \(step)")
            } else {
                #expect(small.remove(element) == reference.remove(element), "step \(step)")
            }
            #expect(small.count == reference.count && small.isEmpty == reference.isEmpty, "step \(step)")
            #expect(Set(small) == reference && Array(small).count == reference.count, "step \(step)")
            for candidate in ["g0", "g3", "g5", "none"] {
                #expect(small.contains(candidate) == reference.contains(candidate), "step \(step)")
            }
        }
    }

    @Test func literalsUnionsAndEquality() {
        var small: SmallSet<String> = ["a"]
        small.formUnion(["b", "a", "c"])
        #expect(small.sorted() == ["a", "b", "c"])
        #expect(small == SmallSet(["c", "b", "a"]))
        #expect(small != ["a", "b"])
        #expect(small.remove("b") == "b" && small.remove("c") == "c" && small.sorted() == ["a"])
        #expect(small == ["a"] && small.remove("a") == "a" && small.isEmpty && small == [])
    }
}
