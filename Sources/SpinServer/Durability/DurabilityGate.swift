/// Where an acknowledgement waits for durability: the seam between "applied" and
/// "acknowledged" on the event path (accept → apply → [durable] → acknowledge).
///
/// The journal of DESIGN.md §3 (Durability; not written yet) will observe every
/// transition of every Spin (events from clients, feedbacks and Gears alike), know under
/// the configured fsync policy how far each Spin is durable, and implement `whenDurable`
/// to run the acknowledgement once sequence `N` of that Spin is. The API router (202 /
/// `?wait=true`) and the streams (`ack`) already acknowledge only through this gate.
package protocol DurabilityGate: Sendable {
    /// Calls `acknowledge` once `sequence` of Spin `spin` is durable (at once when it
    /// already is). Called on the Spin's executor; `acknowledge` must not block.
    func whenDurable(spin: String, sequence: UInt64, _ acknowledge: @escaping @Sendable () -> Void)
}

/// No journal: applied is as durable as it gets (`storage.fsync` has nothing to wait for).
package struct ImmediateDurability: DurabilityGate {
    package init() {}

    package func whenDurable(spin: String, sequence: UInt64, _ acknowledge: @escaping @Sendable () -> Void) {
        acknowledge()
    }
}
