import Foundation
import SpinCore
import SpinWire

/// One event that crossed a Gear, as the Gear stream shows it:
/// `{"type":"gear","gear":..,"from":spin,"event":..}`.
package struct GearTraffic: Sendable {
    package let gear: String
    package let from: String?
    package let event: JSONValue
}

/// A Gear hosted by name: the server lists it and streams its traffic.
package protocol HostedGear: AnyObject, Sendable {
    var name: String { get }
    /// The Spins whose feedbacks attach to it, as the host was told.
    var attached: [String] { get }
    func observe(_ handler: @escaping @Sendable (GearTraffic) -> Void) -> SpinSubscription
    /// Propagates the event whose JSON is `json` (as `observe` shows events), labelled
    /// `from`: a cluster node delivers so the Gear events another node's Spins propagated.
    /// False when `json` is not an event of this Gear.
    @discardableResult func inject(json: [UInt8], from source: String?) -> Bool
}

final class HostedGearOf<GearEvent: Codable & Sendable>: HostedGear {
    let name: String
    let attached: [String]
    private let gear: Gear<GearEvent>

    init(name: String, attached: [String], gear: Gear<GearEvent>) {
        self.name = name
        self.attached = attached
        self.gear = gear
    }

    func observe(_ handler: @escaping @Sendable (GearTraffic) -> Void) -> SpinSubscription {
        let name = self.name
        return gear.observe { delivery in
            let event = (try? OrderedJSONEncoder().encodeValue(delivery.event)) ?? .null
            handler(GearTraffic(gear: name, from: delivery.source, event: event))
        }
    }

    func inject(json: [UInt8], from source: String?) -> Bool {
        guard let event = try? JSONDecoder().decode(GearEvent.self, from: Data(json)) else { return false }
        gear.propagate(event, from: source)
        return true
    }
}
