import SpinTesting

/// A manual clock's instant: tests say exactly when "now" is.
typealias TestInstant = ManualClock.Instant

/// The instant `seconds` after zero.
func at(_ seconds: Double) -> TestInstant { TestInstant(offset: .seconds(seconds)) }
