/// A configuration problem: which file (or variable or flag), which key, what is wrong.
/// Start-up stops with its description.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The file path, environment variable or flag the value came from.
    public let source: String
    /// The key, as a path (`spins[2].kind`).
    public let key: String
    /// What is wrong, without its cause (`underlying`).
    public let reason: String
    /// The error that caused it (the file system's, the JSON decoder's, the key parser's),
    /// when there is one: kept as it was thrown, so that a caller can look at it.
    public let underlying: (any Error)?

    /// A problem at `key` of `source`; when `underlying` caused it, described as
    /// `problem: underlying`.
    public init(source: String, key: String, problem: String, underlying: (any Error)? = nil) {
        self.source = source
        self.key = key
        self.reason = problem
        self.underlying = underlying
    }

    /// What is wrong, with its cause.
    public var problem: String {
        underlying.map { "\(reason): \($0)" } ?? reason
    }

    public var description: String {
        "\(source): \(key): \(problem)"
    }

    /// Equal when they say the same: the same source, key and problem (causes are
    /// compared by their descriptions).
    public static func == (lhs: ConfigurationError, rhs: ConfigurationError) -> Bool {
        lhs.source == rhs.source && lhs.key == rhs.key && lhs.problem == rhs.problem
    }
}
