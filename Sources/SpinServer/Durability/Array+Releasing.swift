extension Array {
    /// Removes the first `count` elements (at most all of them); when none remain, the
    /// buffer goes too, so that an idle Spin's journal and feed keep no capacity.
    mutating func removeFirstReleasing(_ count: Int) {
        if count >= self.count { self = [] } else { removeFirst(count) }
    }
}
