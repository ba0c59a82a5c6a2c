/// A configuration problem: which file (or variable or flag), which key, what is wrong.
/// Start-up stops with its description.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The file path, environment variable or flag the value came from.
    public let source: String
    /// The key, as a path (`spins[2].kind`).
    public let key: String
    public let problem: String

    public init(source: String, key: String, problem: String) {
        self.source = source
        self.key = key
        self.problem = problem
    }

    public var description: String {
        "\(source): \(key): \(problem)"
    }
}
