/// What a transition-table row does once its transition is applied: effects to start
/// (each in an `EffectQueue`, optionally under an `EffectID`) and effect ids to cancel.
///
/// An effect is async work that gets the table's environment (Harvest's "World": the
/// services a real Spin talks to, a fake in tests) and produces events for the Spin: at
/// most one (`Effect(queue:id:_:)`) or an async sequence of them (`Effect(queue:id:events:)`).
/// Effects combine with `+`; `.none` does nothing.
public struct Effect<Event: Sendable, Environment: Sendable>: Sendable {
    /// One effect to start.
    package struct Run: Sendable {
        package let queue: EffectQueue
        package let id: EffectID?
        /// Runs the effect, handing each event it produces to `emit`.
        package let body: @Sendable (Environment, _ emit: @Sendable (Event) -> Void) async -> Void
    }

    package let runs: [Run]
    /// Ids whose running and waiting effects are cancelled, before `runs` start.
    package let cancellations: [EffectID]

    private init(runs: [Run], cancellations: [EffectID]) {
        self.runs = runs
        self.cancellations = cancellations
    }

    /// No effect.
    public static var none: Effect { Effect(runs: [], cancellations: []) }

    /// An effect that produces at most one event, after its async work.
    /// - Parameters:
    ///   - queue: where it runs, which says how it flattens with the queue's other effects.
    ///   - id: lets a later row cancel it with `.cancel(id)`.
    ///   - operation: the work, given the table's environment; its event, if any, is
    ///     applied unless the effect was cancelled meanwhile.
    public init(queue: EffectQueue = .default, id: EffectID? = nil,
                _ operation: @escaping @Sendable (Environment) async -> Event?) {
        self.init(runs: [Run(queue: queue, id: id) { environment, emit in
            if let event = await operation(environment), !Task.isCancelled { emit(event) }
        }], cancellations: [])
    }

    /// An effect that produces a sequence of events; an error thrown by the sequence
    /// ends the effect (it is not an event).
    public init<Events: AsyncSequence>(queue: EffectQueue = .default, id: EffectID? = nil,
                                       events: @escaping @Sendable (Environment) -> Events)
    where Events.Element == Event, Events: SendableMetatype, Events.AsyncIterator: SendableMetatype {
        self.init(runs: [Run(queue: queue, id: id) { environment, emit in
            do {
                for try await event in events(environment) {
                    if Task.isCancelled { break }
                    emit(event)
                }
            } catch {
                // The sequence failed: the effect produces nothing more.
            }
        }], cancellations: [])
    }

    /// Cancels the effects running or waiting under `ids`: nothing they produce from then
    /// on is applied.
    public static func cancel(_ ids: EffectID...) -> Effect {
        Effect(runs: [], cancellations: ids)
    }

    /// Both effects: `lhs`'s cancellations and then `rhs`'s happen before any start.
    public static func + (lhs: Effect, rhs: Effect) -> Effect {
        Effect(runs: lhs.runs + rhs.runs, cancellations: lhs.cancellations + rhs.cancellations)
    }

    /// True for `.none`.
    public var isNone: Bool { runs.isEmpty && cancellations.isEmpty }
}

/// Names running effects so that a row can cancel them (`Effect.cancel`). Any hashable
/// value works; a string literal is one.
///
/// `@unchecked Sendable`: `AnyHashable` is not `Sendable`, but the only value it holds
/// here is the `Sendable` one `init` took.
public struct EffectID: Hashable, @unchecked Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    private let value: AnyHashable

    /// The id made of any hashable value (an enum case, a string, a number).
    public init<ID: Hashable & Sendable>(_ id: ID) {
        self.value = AnyHashable(id)
    }

    /// `"login"` as an id.
    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// The value the id was made of, as text.
    public var description: String { "\(value)" }
}

/// A queue of effects with a flatten strategy (Harvest's `EffectQueue`): how a new
/// effect goes along with the queue's effects still running. Queues are told apart by
/// name; give each name one strategy.
///
/// ```swift
/// extension EffectQueue {
///     static let request = EffectQueue("request", .latest)   // a new request cancels the previous one
/// }
/// ```
public struct EffectQueue: Hashable, Sendable {
    /// What tells queues apart.
    public let name: String
    /// How the queue's effects run together.
    public let strategy: FlattenStrategy

    /// The queue `name`, running its effects as `strategy` says (`concurrent(n)`: n > 0).
    public init(_ name: String, _ strategy: FlattenStrategy) {
        precondition(strategy.limit.map { $0 > 0 } ?? true, "a concurrent queue runs at least one effect")
        self.name = name
        self.strategy = strategy
    }

    /// Where effects go unless told otherwise: `merge`.
    public static let `default` = EffectQueue("default", .merge)
}

/// How a queue runs its effects.
public enum FlattenStrategy: Hashable, Sendable {
    /// All at once (`flatMap`).
    case merge
    /// A new effect cancels the queue's running and waiting ones (`flatMapLatest`).
    case latest
    /// One after another, in the order they were started (`concatMap`).
    case concat
    /// At most `n` at once; the others wait, in order.
    case concurrent(Int)

    /// The most effects that run at once, nil for no bound.
    package var limit: Int? {
        switch self {
        case .merge: nil
        case .latest, .concat: 1
        case .concurrent(let limit): limit
        }
    }
}
