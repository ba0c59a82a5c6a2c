/// A manual clock's instant: tests say exactly when "now" is.
struct TestInstant: InstantProtocol {
    var offset: Duration
    static let zero = TestInstant(offset: .zero)
    func advanced(by duration: Duration) -> TestInstant { TestInstant(offset: offset + duration) }
    func duration(to other: TestInstant) -> Duration { other.offset - offset }
    static func < (lhs: TestInstant, rhs: TestInstant) -> Bool { lhs.offset < rhs.offset }
}

/// The instant `seconds` after zero.
func at(_ seconds: Double) -> TestInstant { TestInstant(offset: .seconds(seconds)) }
