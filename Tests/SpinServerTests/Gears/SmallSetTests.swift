@testable import SpinServer
import Testing

/// `SmallSet` and `SmallDictionary`, the Gear router's per-Spin and per-Gear tables: the
/// same answers as a `Set` and a `Dictionary` whatever their size, through growing to
/// many and shrinking back to one and none.
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

    @Test func smallDictionary_AnswersAsADictionary_ThroughGrowingAndShrinking() {
        var small = SmallDictionary<String, Int>()
        var reference: [String: Int] = [:]
        var generator = SystemRandomNumberGenerator()
        for step in 0..<2000 {
            let key = "s\(Int.random(in: 0..<5, using: &generator))"
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: (small[key], reference[key]) = (step, step)
            case 1: (small[key], reference[key]) = (nil, nil)
            default:
                small[key, default: 0] += 1
                reference[key, default: 0] += 1
            }
            #expect(small.count == reference.count && small.isEmpty == reference.isEmpty, "step \(step)")
            #expect(Dictionary(uniqueKeysWithValues: small.map { ($0.key, $0.value) }) == reference, "step \(step)")
            #expect(small.values.sorted() == reference.values.sorted(), "step \(step)")
            for candidate in ["s0", "s4", "none"] { #expect(small[candidate] == reference[candidate], "step \(step)") }
        }
        let literal: SmallDictionary = ["a": 1, "b": 2]
        #expect(literal["a"] == 1 && literal["b"] == 2 && literal.count == 2)
    }
}
