/// What one caller may do: global scopes (every Spin and Gear, and the routes about all
/// of them: `/metrics`, `/v1/cluster`) and grants on some Spins and Gears by name
/// pattern. Compiled once per identity from `Scope`s and `Grants`.
package struct Permissions: Sendable, Equatable {
    /// The strongest global scope, nil for none.
    package let scope: Scope?
    private let spinRead: [Glob]
    private let spinWrite: [Glob]
    private let spinAdmin: [Glob]
    private let gearRead: [Glob]

    package init(scopes: [Scope], grants: Grants = .none) {
        scope = scopes.max()
        spinRead = grants.spinRead.map(Glob.init)
        spinWrite = grants.spinWrite.map(Glob.init)
        spinAdmin = grants.spinAdmin.map(Glob.init)
        gearRead = grants.gearRead.map(Glob.init)
    }

    /// Everything: a server without authentication.
    package static let everything = Permissions(scopes: [.admin])

    /// Whether `needed` is granted on every Spin and Gear.
    package func allowsEverywhere(_ needed: Scope) -> Bool {
        scope.map { $0.grants(needed) } ?? false
    }

    /// Whether `needed` is granted on Spin `name`: globally, or by a pattern of that
    /// scope or a stronger one.
    package func allows(_ needed: Scope, spin name: some StringProtocol) -> Bool {
        if allowsEverywhere(needed) { return true }
        func any(_ patterns: [Glob]) -> Bool { patterns.contains { $0.matches(name) } }
        switch needed {
        case .read: return any(spinRead) || any(spinWrite) || any(spinAdmin)
        case .write: return any(spinWrite) || any(spinAdmin)
        case .admin: return any(spinAdmin)
        }
    }

    /// Whether Gear `name`'s stream may be read.
    package func allowsReading(gear name: some StringProtocol) -> Bool {
        allowsEverywhere(.read) || gearRead.contains { $0.matches(name) }
    }
}

/// Who a request comes from, once its credentials are checked.
package struct Identity: Sendable, Equatable {
    /// A JWT's `sub`, or a configured token's `subject`: logged with each request and
    /// journaled with each event it sends. Nil when the credentials name nobody.
    package var subject: String?
    package var permissions: Permissions
    /// The token's `exp` (seconds since 1970), as `refreshed` answers it; nil: never.
    package var expiresAt: Double?
    /// When the credentials stop being accepted (seconds since 1970: `exp` plus the
    /// configured leeway): an open stream closes then (4001) unless the client refreshed
    /// it. Nil: never.
    package var validUntil: Double?

    package init(subject: String? = nil, permissions: Permissions, expiresAt: Double? = nil, validUntil: Double? = nil) {
        self.subject = subject
        self.permissions = permissions
        self.expiresAt = expiresAt
        self.validUntil = validUntil ?? expiresAt
    }

    /// A server without authentication: everyone may do everything.
    package static let anyone = Identity(permissions: .everything)
}
