import Foundation
import SpinCore
import SpinExamples
import SpinMachines
@testable import SpinServer
import Testing

/// `SpinKindRegistry`: kinds registered by name, checked by configuration loading, made
/// into a `SpinHost` with their Gears shared by name; and the Gear rules of `SpinHost`.
@Suite struct SpinKindRegistryTests {
    /// Counters without a Gear; `feature`/`router` on the Gear their entry names.
    static var registry: SpinKindRegistry {
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        kinds.register("feature", gear: .required) { context in
            try context.host(Feature.spin(session: context.shared { SessionService() }, gear: context.gear()))
        }
        kinds.register("router", gear: .required) { context in
            try context.host(Router.spin(session: context.shared { SessionService() }, gear: context.gear()))
        }
        return kinds
    }

    static func load(_ json: String, kinds: SpinKindRegistry = registry) throws -> SpinServerConfiguration {
        try SpinServerConfiguration.load(
            flags: .init(config: "app.json"), environment: [:], kinds: kinds.kinds,
            readFile: { _ in Data(json.utf8) }, createDirectory: { _ in }).configuration
    }

    static let authRouting = #"""
        {"spins": [{"name": "feature", "kind": "feature", "gear": "auth"}, {"name": "router", "kind": "router", "gear": "auth"},
                   {"name": "one", "kind": "counter"}],
         "gears": [{"name": "auth"}]}
        """#

    @Test func configuredKinds_AreHosted_WithTheirGearSharedByName() throws {
        let host = try Self.registry.makeHost(Self.load(Self.authRouting))
        #expect(host.spins.map(\.name) == ["feature", "router", "one"])
        #expect(host.spins.map(\.kind) == ["feature", "router", "counter"])
        #expect(host.gears.map(\.name) == ["auth"])
        #expect(host.gears.first?.attached == ["feature", "router"])
    }

    @Test func theSharedGear_CarriesTheFeaturesIssueToTheRouter() async throws {
        let host = try Self.registry.makeHost(Self.load(Self.authRouting))
        host.start()
        defer { host.stop() }
        let router = makeRouter(host)
        _ = await waitForState(router, "router") { $0["route"] as? String == "home" }
        // Without a session the feature's load is unauthorized: the router checks again.
        #expect(await router.post("/v1/spins/router/events", #"{"type":"logout"}"#).status == 202)
        _ = await waitForState(router, "router") { $0["route"] as? String == "login" }
        #expect(await router.post("/v1/spins/feature/events", #"{"type":"load"}"#).status == 202)
        _ = await waitForState(router, "router") { ($0["authorizationChecks"] as? Int ?? 0) >= 2 }
    }

    @Test func aKindNotRegistered_IsAnErrorListingTheKinds() throws {
        let configuration = SpinServerConfiguration(spins: [.init(name: "a", kind: "countr")])
        #expect(throws: HostingError.unknownKind("countr", known: ["counter", "feature", "router"])) {
            try Self.registry.makeHost(configuration)
        }
        #expect(HostingError.unknownKind("countr", known: ["counter"]).description
                == #"kind "countr" is not registered (registered: counter)"#)
    }

    @Test func loading_ChecksKindsAndGearNeeds_AgainstTheRegistry() {
        #expect(throws: ConfigurationError.self) { try Self.load(#"{"spins": [{"name": "a", "kind": "countr"}]}"#) }
        #expect(throws: ConfigurationError(source: "app.json", key: "spins[0].gear",
                                           problem: #"missing: kind "router" attaches to a Gear; name one listed in gears"#)) {
            try Self.load(#"{"spins": [{"name": "r", "kind": "router"}]}"#)
        }
        #expect(throws: ConfigurationError(source: "app.json", key: "spins[0].gear",
                                           problem: #"kind "counter" does not attach to a Gear: remove "gear""#)) {
            try Self.load(#"{"spins": [{"name": "c", "kind": "counter", "gear": "auth"}], "gears": [{"name": "auth"}]}"#)
        }
    }

    @Test func oneGear_AskedForWithTwoEventTypes_IsAnError() throws {
        var kinds = Self.registry
        kinds.register("other", gear: .required) { context in _ = try context.gear(of: Counter.Event.self) }
        let json = #"{"spins": [{"name": "f", "kind": "feature", "gear": "g"}, {"name": "o", "kind": "other", "gear": "g"}], "gears": [{"name": "g"}]}"#
        #expect(throws: HostingError.gearEventMismatch(gear: "g", asked: "SpinExamples.Counter.Event", made: "SpinExamples.AuthRouting.GearEvent")) {
            try kinds.makeHost(Self.load(json, kinds: kinds))
        }
    }

    @Test func machines_AreHostedWithoutARegistration() throws {
        let machine = #"{"id": "door", "initial": "closed", "states": {"closed": {"on": {"OPEN": "opened"}}, "opened": {}}}"#
        let configuration = try SpinServerConfiguration.load(
            flags: .init(config: "app.json"), environment: [:], kinds: SpinKindRegistry().kinds,
            readFile: { path in Data((path == "app.json" ? #"{"spins": [{"name": "door", "machine": "door.json"}]}"# : machine).utf8) },
            createDirectory: { _ in }).configuration
        let host = try SpinKindRegistry().makeHost(configuration)
        #expect(host.spins.map(\.kind) == [SpinServerConfiguration.machineKind])
    }

    @Test func aGearAttachedToASpinNotHosted_IsAnErrorNamingIt() throws {
        let host = SpinHost()
        try host.host(Counter.spin(), named: "counter")
        #expect(throws: HostingError.unknownSpin(gear: "auth", spin: "routr")) {
            try host.host(Gear<AuthRouting.GearEvent>(), named: "auth", attachedTo: ["counter", "routr"])
        }
        #expect(host.gears.isEmpty)
        #expect(HostingError.unknownSpin(gear: "auth", spin: "routr").description
                == #"Gear "auth" is attached to "routr", which is not hosted (host the Spins before their Gears)"#)
    }
}
