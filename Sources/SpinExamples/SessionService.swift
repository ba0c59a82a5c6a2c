import Synchronization

/// The fake, in-process session service of the auth-routing example, shared by the
/// `feature` and `router` Spins. The session is valid at start-up.
///
/// It stands for the real services of an app (a backend, an authorization check); the
/// Spins reach it only from their feedbacks.
public final class SessionService: Sendable {
    private let valid: Mutex<Bool>
    /// How many items the fake backend returns while the session is valid.
    public let items: Int

    public init(valid: Bool = true, items: Int = 3) {
        self.valid = Mutex(valid)
        self.items = items
    }

    public var isValid: Bool { valid.withLock { $0 } }

    /// Starts a session (a successful login).
    public func start() { valid.withLock { $0 = true } }

    /// Ends the session (a logout, or an expired token on the backend).
    public func end() { valid.withLock { $0 = false } }

    /// The backend call of `feature`: the items while the session is valid, nil (an
    /// unauthorized response) otherwise.
    public func fetchItems() async -> Int? {
        isValid ? items : nil
    }

    /// The authorization check of `router`.
    public func checkAuthorization() async -> Bool {
        isValid
    }
}
