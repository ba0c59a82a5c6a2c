/// Where an acknowledgement waits for durability: the seam between "applied" and
/// "acknowledged" on the event path (accept → apply → durable → acknowledge).
///
/// The API router (202 / `?wait=true`) and the streams (`ack`) acknowledge only through
/// it. `Journal` is the real one; `ImmediateDurability` serves a server that keeps its
/// Spins in memory.
package protocol DurabilityGate: Sendable {
    /// Calls `acknowledge` once `sequence` of Spin `spin` is durable (at once when it
    /// already is), with nil, or with the error that kept it from becoming durable.
    /// `acknowledge` must not block.
    func whenDurable(spin: String, sequence: UInt64, _ acknowledge: @escaping @Sendable (APIError?) -> Void)
}

/// No journal: applied is as durable as it gets.
package struct ImmediateDurability: DurabilityGate {
    package init() {}

    package func whenDurable(spin: String, sequence: UInt64, _ acknowledge: @escaping @Sendable (APIError?) -> Void) {
        acknowledge(nil)
    }
}
