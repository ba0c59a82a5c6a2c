import Foundation
import SpinCore
import SpinWire
import SpinJSON
import SpinConcurrency

/// One event that crossed a Gear, as the Gear stream shows it:
/// `{"type":"gear","gear":..,"from":spin,"event":..}`, with its place in the sender's
/// outbox (`position`) when the server routes the Gear, and `redelivered` when it is sent
/// again (after a restart, or to a Spin's new owner) because a catching Spin had not
/// consumed it; or what a catching Spin skipped (`skipped`).
package struct GearTraffic: Sendable {
    package let gear: String
    package let from: String?
    package let event: JSONValue
    package var position: UInt64?
    package var redelivered = false
    /// A catching Spin that could not take the event, and why (its Gear event type does
    /// not decode it): the event is consumed for that Spin, not lost.
    package var skipped: (spin: String, reason: String)?

    package init(gear: String, from: String?, event: JSONValue, position: UInt64? = nil, redelivered: Bool = false,
                 skipped: (spin: String, reason: String)? = nil) {
        self.gear = gear
        self.from = from
        self.event = event
        self.position = position
        self.redelivered = redelivered
        self.skipped = skipped
    }
}

/// A Gear hosted by name: the server lists it, streams its traffic and routes it.
package protocol HostedGear: AnyObject, Sendable {
    var name: String { get }
    /// The Spins whose feedbacks attach to it, as the host was told (and as Spins made at
    /// run time attach and leave).
    var attached: [String] { get }
    /// A Spin made at run time attaches to it.
    func attach(_ spin: String)
    /// A Spin removed at run time leaves it; returns how many Spins remain attached.
    func detach(_ spin: String) -> Int
    /// Adds a Gear object of another event type joined to it (`GearBridge`): what a Spin
    /// made at run time brought.
    func add(port: any GearPort)
    /// Sees each event crossing the Gear: as it is propagated, or, once the server routes
    /// the Gear (`ports`), as the router sends it on (`publish`).
    func observe(_ handler: @escaping @Sendable (GearTraffic) -> Void) -> SpinSubscription
    /// The Gear objects of this name, one per Gear event type the Spins on it use: what a
    /// `GearRouter` routes.
    var ports: [any GearPort] { get }
    /// Shows `traffic` to the observers (the router's traffic of a routed Gear).
    func publish(_ traffic: GearTraffic)
}

final class HostedGearOf<GearEvent: Codable & Sendable>: HostedGear {
    let name: String
    private let gear: Gear<GearEvent>
    /// The Spins attached, the Gear objects of this name, and the observers of its
    /// traffic: one lock for all (a Gear per user or device is one per Spin).
    private let state: Protected<State>
    var attached: [String] { state.withLock { $0.attached } }
    var ports: [any GearPort] { state.withLock { $0.ports } }

    private struct State {
        var attached: [String]
        var ports: [any GearPort]
        var next: UInt64 = 0
        var handlers: [(id: UInt64, handler: @Sendable (GearTraffic) -> Void)] = []
        /// What the Gear fans out itself (not routed), shown to the observers: attached
        /// with the first observer (a Gear nobody watches carries no observer of its own).
        var fanOut: SpinSubscription?
    }

    /// - Parameter members: the other Gear objects of this name (joined to `gear`, a JSON
    ///   bus, by `GearBridge`s), routed with it.
    init(name: String, attached: [String], gear: Gear<GearEvent>, members: [any GearPort] = []) {
        self.name = name
        self.gear = gear
        self.state = Protected(State(attached: attached, ports: [TypedGearPort(gear)] + members))
    }

    deinit { state.withLock { $0.fanOut }?.cancel() }

    func attach(_ spin: String) {
        state.withLock { if !$0.attached.contains(spin) { $0.attached.append(spin) } }
    }

    func detach(_ spin: String) -> Int {
        state.withLock { state in
            state.attached.removeAll { $0 == spin }
            return state.attached.count
        }
    }

    func add(port: any GearPort) {
        state.withLock { $0.ports.append(port) }
    }

    func observe(_ handler: @escaping @Sendable (GearTraffic) -> Void) -> SpinSubscription {
        let (id, fansOut) = state.withLock { state -> (UInt64, Bool) in
            state.next += 1
            state.handlers.append((state.next, handler))
            return (state.next, state.fanOut == nil)
        }
        if fansOut { startFanOut() }
        return SpinSubscription { [weak self] in
            self?.state.withLock { $0.handlers.removeAll { $0.id == id } }
        }
    }

    /// Shows every event the Gear fans out itself (not routed) to the observers, once, as
    /// propagated. Attached outside the lock (the Gear takes its own); the first of two
    /// racing observers keeps its subscription.
    private func startFanOut() {
        let (name, state) = (name, state)
        let fanOut = gear.observe { delivery in
            let handlers = state.withLock { $0.handlers }
            guard !handlers.isEmpty else { return }
            let event = (try? OrderedJSONEncoder().encodeValue(delivery.event)) ?? .null
            let traffic = GearTraffic(gear: name, from: delivery.source, event: event)
            for entry in handlers { entry.handler(traffic) }
        }
        let kept = state.withLock { state -> Bool in
            guard state.fanOut == nil else { return false }
            state.fanOut = fanOut
            return true
        }
        if !kept { fanOut.cancel() }
    }

    func publish(_ traffic: GearTraffic) {
        for entry in state.withLock({ $0.handlers }) { entry.handler(traffic) }
    }
}

/// One Gear object of a hosted Gear, its event type erased: what the router needs of it.
package protocol GearPort: Sendable {
    /// The Swift type of its events, for messages.
    var eventTypeName: String { get }
    /// Takes the Gear's fan-out over (`Gear.route(through:)`): each propagated event is
    /// handed to `handler` as JSON (or the error that kept it from encoding), with its
    /// source and cause.
    func route(_ handler: @escaping @Sendable (Result<[UInt8], any Error>, String?, GearCause?) -> Void)
    /// The labels of the loops that catch events of this Gear object now.
    var catchingOwners: Set<String> { get }
    /// Whether the loop labelled `owner` catches events of this Gear object.
    func isCaught(by owner: String) -> Bool
    /// Hands the event whose JSON is `json` to the catching feedbacks of `owner`.
    func deliver(json: [UInt8], from source: String?, to owner: String, receipt: GearReceipt?) -> PortDelivery
}

/// What delivering an event through one Gear object came to.
package enum PortDelivery: Sendable, Equatable {
    /// The owner's catching feedbacks here had the event (`GearCatch`).
    case caught(GearCatch)
    /// The JSON is not an event of this Gear object's type; why.
    case undecodable(String)
}

/// The `GearPort` of a `Gear<GearEvent>`.
final class TypedGearPort<GearEvent: Codable & Sendable>: GearPort {
    let gear: Gear<GearEvent>

    init(_ gear: Gear<GearEvent>) { self.gear = gear }

    var eventTypeName: String { String(describing: GearEvent.self) }

    func route(_ handler: @escaping @Sendable (Result<[UInt8], any Error>, String?, GearCause?) -> Void) {
        gear.route { event, source, cause in
            handler(Result { try OrderedJSONEncoder().encode(event) }, source, cause)
        }
    }

    var catchingOwners: Set<String> { gear.catchingOwners }

    func isCaught(by owner: String) -> Bool { gear.isCaught(by: owner) }

    func deliver(json: [UInt8], from source: String?, to owner: String, receipt: GearReceipt?) -> PortDelivery {
        let event: GearEvent
        do {
            event = try JSONDecoder().decode(GearEvent.self, from: Data(json))
        } catch let error as DecodingError {
            return .undecodable("not a \(GearEvent.self): \(HostedLoop<Int, Int>.describe(error))")
        } catch {
            return .undecodable("not a \(GearEvent.self): \(error)")
        }
        return .caught(gear.deliver(event, from: source, to: owner, receipt: receipt))
    }
}
