import Dispatch
import SpinCore
import SpinConcurrency

/// The fake session service of the auth-routing example, shared by the `feature` and
/// `router` Spins. The session is valid at start-up.
///
/// It stands for the real services of an app (a backend, an authorization check); the
/// Spins reach it only from their feedbacks. It keeps its session in one of two places:
///
/// - **In memory** (`init(valid:items:)`, the default): the session of this process,
///   read and changed at once.
/// - **In a `SessionStore`** (`init(store:items:timeout:)`): a place every server of a
///   cluster sees, so that `feature` and `router` agree on the session when they run on
///   different servers (spin-server keeps it in the Spins' PostgreSQL database). The
///   store's calls may block, so they run on a serial queue of the service's own, never
///   on the thread that asks: `start()` and `end()` only queue their write, and the
///   backend call and the authorization check wait for their answer at most `timeout`.
///   A store that fails or does not answer in time counts as an unauthorized answer
///   (`fetchItems()` nil, `checkAuthorization()` false), as a backend that cannot check
///   a session refuses it; a failed write leaves the session as the store has it.
public final class SessionService: Sendable {
    /// The session in memory (unused with a store).
    private let valid: Protected<Bool>
    private let store: (any SessionStore)?
    /// The store's calls, one at a time and in the order they were made: a read made
    /// after a write sees it.
    private let queue = DispatchQueue(label: "spin-examples.session")
    /// How many items the fake backend returns while the session is valid.
    public let items: Int
    /// How long `fetchItems()` and `checkAuthorization()` wait for a store's answer
    /// (zero in memory, where nothing is waited for).
    public let timeout: Duration

    /// A session in memory, valid unless `valid` says otherwise.
    public init(valid: Bool = true, items: Int = 3) {
        self.valid = Protected(valid)
        self.store = nil
        self.items = items
        self.timeout = .zero
    }

    /// A session kept in `store`.
    /// - Parameter timeout: how long a backend call or an authorization check waits for
    ///   the store before it counts as unauthorized. Five seconds: longer than a store
    ///   that works ever takes, short enough that a stuck one does not hold a Spin in
    ///   `loading` or `checkingAuthorization` for long.
    public init(store: any SessionStore, items: Int = 3, timeout: Duration = .seconds(5)) {
        self.valid = Protected(true)
        self.store = store
        self.items = items
        self.timeout = timeout
    }

    /// Whether the session is valid. With a store this asks it and blocks the caller for
    /// the round trip (false when it fails): for tests and tools, not for a Spin's
    /// feedbacks, which use `checkAuthorization()`.
    public var isValid: Bool {
        guard let store else { return valid.withLock { $0 } }
        return (try? store.isValid()) ?? false
    }

    /// Starts a session (a successful login).
    public func start() { set(true) }

    /// Ends the session (a logout, or an expired token on the backend).
    public func end() { set(false) }

    /// The backend call of `feature`: the items while the session is valid, nil (an
    /// unauthorized response) otherwise.
    public func fetchItems() async -> Int? {
        await askIsValid() ? items : nil
    }

    /// The authorization check of `router`.
    public func checkAuthorization() async -> Bool {
        await askIsValid()
    }

    private func set(_ value: Bool) {
        guard let store else { return valid.withLock { $0 = value } }
        queue.async { try? store.setValid(value) }
    }

    /// In memory, the session; with a store, its answer, or false when it fails or
    /// `timeout` passes first. A question whose caller stopped waiting is not put to the
    /// store, so that a store that was stuck does not work through stale ones.
    private func askIsValid() async -> Bool {
        guard let store else { return valid.withLock { $0 } }
        let deadline = DispatchTime.now() + DispatchTimeInterval(timeout)
        return await withCheckedContinuation { continuation in
            let answer = Answer(continuation)
            queue.async {
                guard !answer.isGiven else { return }
                answer.give((try? store.isValid()) ?? false)
            }
            DispatchQueue.global().asyncAfter(deadline: deadline) { answer.give(false) }
        }
    }

    /// A continuation resumed once, by the store's answer or by the deadline.
    private final class Answer: Sendable {
        private let continuation: Protected<CheckedContinuation<Bool, Never>?>

        init(_ continuation: CheckedContinuation<Bool, Never>) {
            self.continuation = Protected(continuation)
        }

        var isGiven: Bool { continuation.withLock { $0 == nil } }

        func give(_ value: Bool) {
            continuation.withLock { $0.take() }?.resume(returning: value)
        }
    }
}

/// Where a `SessionService` keeps its session when every server of a cluster must see
/// the same one. Its calls may block (a round trip to a database) and may throw; the
/// service makes them one at a time, off the threads of Spins and event loops, and bounds
/// how long it waits for them.
public protocol SessionStore: Sendable {
    /// Whether the session is valid.
    func isValid() throws -> Bool
    /// Starts (`true`, a login) or ends (`false`, a logout) the session.
    func setValid(_ valid: Bool) throws
}
