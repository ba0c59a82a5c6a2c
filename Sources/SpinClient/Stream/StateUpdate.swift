import Foundation

/// One message of a state stream: the Spin's state at `sequence`, and for a state message
/// the event that led to it.
public struct StateUpdate<State> {
    /// What the server sent.
    public enum Kind: Sendable, Hashable {
        /// The whole state: first on a new connection, after the server's history
        /// changed (a new `epoch`), or when a slow reader's queue was conflated (the
        /// sequence then jumps).
        case snapshot
        /// The state after one applied event, the one after the previous message.
        case state
    }

    /// Snapshot or state message.
    public var kind: Kind
    /// The number of events the Spin had applied at this state.
    public var sequence: UInt64
    /// The server's history this sequence belongs to; it changes when that history was cut.
    public var epoch: String
    /// The Spin's state.
    public var state: State
    /// The applied event's JSON for a state message, nil for a snapshot.
    public var event: Data?

    /// An update with these values (for tests and comparisons).
    public init(kind: Kind, sequence: UInt64, epoch: String, state: State, event: Data?) {
        self.kind = kind
        self.sequence = sequence
        self.epoch = epoch
        self.state = state
        self.event = event
    }

    /// The applied event decoded as `Event`; nil for a snapshot. The event of a
    /// migration (`migration`) is the server's, not the Spin's: it does not decode as one.
    public func event<Event: Decodable>(as eventType: Event.Type) throws -> Event? {
        guard let event else { return nil }
        return try JSONDecoder().decode(Event.self, from: event)
    }

    /// For the state message of a migration — the server moved the Spin to a new version
    /// of its definition (a machine file's `"version"`), the event being
    /// `{"type":"spin.migrated","from":1,"to":2}` — the two versions; nil otherwise.
    public var migration: (from: Int, to: Int)? {
        guard let event, let members = try? JSONDecoder().decode(Migration.self, from: event),
              members.type == "spin.migrated" else { return nil }
        return (members.from, members.to)
    }

    private struct Migration: Decodable {
        var type: String
        var from: Int
        var to: Int
    }
}

extension StateUpdate: Sendable where State: Sendable {}
extension StateUpdate: Equatable where State: Equatable {}
