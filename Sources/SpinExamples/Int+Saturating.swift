extension Int {
    /// `self + other`, or the nearest of `Int.min` and `Int.max` when that overflows: the
    /// examples' counters saturate rather than trap.
    func addingSaturated(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other < 0 ? .min : .max
    }
}
