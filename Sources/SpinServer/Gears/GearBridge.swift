import Foundation
import SpinCore
import SpinMachines

/// Joins a typed Gear to a Gear of JSON events, both ways, so that Spins whose Gear
/// events are different Swift types (or JSON machines) share one configured Gear.
///
/// Every event crossing is re-coded through its JSON form: a typed event is encoded
/// (`{"type":"authorizationIssueHappened",...}` for a `TypeTaggedEvent`) and goes on as a
/// `MachineEvent`; a JSON event is decoded as the typed Gear's event, and skipped for it
/// when it is not one (a Spin cannot catch what its type cannot express). The source
/// label goes along. Delivery stays synchronous: an event crosses before `propagate`
/// returns, and what the bridge itself propagates is not sent back.
///
/// The bridge holds both Gears weakly: it lives as long as they do, and keeps neither
/// alive.
enum GearBridge {
    /// Connects `typed` to `json`.
    static func connect<Typed: Codable & Sendable>(_ typed: Gear<Typed>, to json: Gear<MachineEvent>) {
        let crossing = GearCrossing()
        _ = typed.observe { [weak json] delivery in
            guard let json, !crossing.isActive, let event = recode(delivery.event, as: MachineEvent.self) else { return }
            crossing.run { json.propagate(event, from: delivery.source) }
        }
        _ = json.observe { [weak typed] delivery in
            guard let typed, !crossing.isActive, let event = recode(delivery.event, as: Typed.self) else { return }
            crossing.run { typed.propagate(event, from: delivery.source) }
        }
    }

    /// `value` through its JSON form as a `Target`, or nil when it is not one.
    private static func recode<Source: Encodable, Target: Decodable>(_ value: Source, as _: Target.Type) -> Target? {
        guard let data = try? JSONEncoder().encode(value) else { return nil }
        return try? JSONDecoder().decode(Target.self, from: data)
    }
}

/// Marks the thread while an event is propagated on a Gear by someone who must not see
/// it come back: Gear delivery is synchronous, so that one's own handler sees the event on
/// the same thread, inside `run`, and leaves it. Each instance is its own mark: a
/// `GearBridge` uses one per bridge (other bridges on the same JSON bus are not marked:
/// an event goes from one typed Gear through the bus to every other), the
/// `GearOutboxReader` one for what it delivers from other nodes.
final class GearCrossing: Sendable {
    private var key: String { "spin.gearCrossing.\(UInt(bitPattern: ObjectIdentifier(self).hashValue))" }

    /// True inside `run` of this mark, on this thread.
    var isActive: Bool { Thread.current.threadDictionary[key] != nil }

    func run(_ body: () -> Void) {
        let key = self.key
        Thread.current.threadDictionary[key] = true
        defer { Thread.current.threadDictionary[key] = nil }
        body()
    }
}
