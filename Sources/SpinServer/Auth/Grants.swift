/// Permissions on some Spins and Gears, by name pattern (`*` matches any run of
/// characters: `Glob`): what a configured token, a rule or a JWT's `spin` and `gear`
/// claims give, beside the global scopes that apply to every Spin and Gear.
///
/// `write` implies `read`; `admin` implies both, and `resume`.
public struct Grants: Sendable, Equatable, Codable {
    /// Spins whose state, schema and stream may be read.
    public var spinRead: [String]
    /// Spins that may be sent events (POST, and client events on a stream).
    public var spinWrite: [String]
    /// Spins that may be resumed (and written and read).
    public var spinAdmin: [String]
    /// Gears whose stream may be read.
    public var gearRead: [String]

    public init(spinRead: [String] = [], spinWrite: [String] = [], spinAdmin: [String] = [], gearRead: [String] = []) {
        self.spinRead = spinRead
        self.spinWrite = spinWrite
        self.spinAdmin = spinAdmin
        self.gearRead = gearRead
    }

    /// No permission on any Spin or Gear.
    public static let none = Grants()

    public var isEmpty: Bool { self == .none }

    /// The patterns of both.
    package static func + (lhs: Grants, rhs: Grants) -> Grants {
        Grants(spinRead: lhs.spinRead + rhs.spinRead, spinWrite: lhs.spinWrite + rhs.spinWrite,
               spinAdmin: lhs.spinAdmin + rhs.spinAdmin, gearRead: lhs.gearRead + rhs.gearRead)
    }
}

/// Extra grants for the identities whose subject matches a pattern (`auth.rules`): the
/// way to give permissions to the subjects of tokens that carry none (a JWT issuer that
/// knows nothing of Spins), or to a configured token with a `subject`.
public struct AccessRule: Sendable, Equatable, Codable {
    /// A `Glob` over the identity's subject (`device-*`); an identity without a subject
    /// matches no rule.
    public var subject: String
    public var grants: Grants

    public init(subject: String, grants: Grants) {
        self.subject = subject
        self.grants = grants
    }
}
