import Foundation

/// What a verified bearer JWT says about its holder: the registered claims the server uses
/// and the permission claims (DESIGN "Identities and permissions").
package struct VerifiedToken: Sendable, Equatable {
    /// `sub`.
    package var subject: String?
    /// `exp`: streams opened with the token close when it passes.
    package var expires: Date?
    /// `scope` (a space-separated string or an array): global scopes, as a static token
    /// has; names other than read, write and admin are ignored (issuers put their own there).
    package var scopes: [Scope]
    /// `spin`: globs of Spin names per permission.
    package var spin: SpinClaim
    /// `gear`: globs of Gear names per permission.
    package var gear: GearClaim

    package init(subject: String? = nil, expires: Date? = nil, scopes: [Scope] = [],
                 spin: SpinClaim = SpinClaim(), gear: GearClaim = GearClaim()) {
        self.subject = subject
        self.expires = expires
        self.scopes = scopes
        self.spin = spin
        self.gear = gear
    }
}

/// The `spin` claim: `{"read": [globs], "write": [globs], "admin": [globs]}`, each optional.
package struct SpinClaim: Sendable, Equatable {
    package var read: [String]
    package var write: [String]
    package var admin: [String]

    package init(read: [String] = [], write: [String] = [], admin: [String] = []) {
        self.read = read
        self.write = write
        self.admin = admin
    }
}

/// The `gear` claim: `{"read": [globs]}`.
package struct GearClaim: Sendable, Equatable {
    package var read: [String]

    package init(read: [String] = []) {
        self.read = read
    }
}
