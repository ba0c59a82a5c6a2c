import Foundation
import SpinCore
import SpinExamples
import SpinMachines
@testable import SpinServer
import Testing
@testable import SpinConcurrency

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

    @Test func aKindsContext_HasALoggerLabelledWithTheSpinsName() throws {
        let labels = Protected<[String]>([])
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in
            labels.withLock { $0.append(context.logger.label) }
            try context.host(Counter.spin())
        }
        _ = try kinds.makeHost(Self.load(#"{"spins": [{"name": "one", "kind": "counter"}, {"name": "two", "kind": "counter"}]}"#,
                                         kinds: kinds))
        #expect(labels.withLock { $0 } == ["one", "two"])
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

    @Test func oneGear_AskedForWithTwoEventTypes_JoinsThemThroughTheirJSON() throws {
        // `feature` uses AuthRouting.GearEvent; `other` takes the Gear as JSON events and
        // as Counter events. Each sees what the others propagate, once, when its type can
        // express it; the hosted Gear (listed, streamed) sees it all.
        let made = Protected<(json: Gear<MachineEvent>?, counter: Gear<Counter.Event>?, typed: Gear<AuthRouting.GearEvent>?)>((nil, nil, nil))
        var kinds = SpinKindRegistry()
        kinds.register("feature", gear: .required) { context in
            let gear = try context.gear(of: AuthRouting.GearEvent.self)
            made.withLock { $0.typed = gear }
            try context.host(Feature.spin(session: SessionService(), gear: gear))
        }
        kinds.register("other", gear: .required) { context in
            let (json, counter) = (try context.gear(of: MachineEvent.self), try context.gear(of: Counter.Event.self))
            made.withLock { $0.json = json; $0.counter = counter }
            try context.host(Counter.spin())
        }
        let json = #"{"spins": [{"name": "f", "kind": "feature", "gear": "g"}, {"name": "o", "kind": "other", "gear": "g"}], "gears": [{"name": "g"}]}"#
        let host = try kinds.makeHost(Self.load(json, kinds: kinds))
        let (bus, counter, typed) = try made.withLock { (try #require($0.json), try #require($0.counter), try #require($0.typed)) }

        let seen = Protected<[String]>([])
        let subscriptions = [
            bus.observe { delivery in seen.withLock { $0.append("json \(delivery.event.type) from \(delivery.source ?? "-")") } },
            counter.observe { delivery in seen.withLock { $0.append("counter \(delivery.event)") } },
            typed.observe { delivery in seen.withLock { $0.append("typed \(delivery.event)") } },
            try #require(host.gears.first { $0.name == "g" }).observe { traffic in
                seen.withLock { $0.append("hosted \(traffic.event.bytes.count > 0 ? "event" : "none")") }
            },
        ]
        defer { subscriptions.forEach { $0.cancel() } }

        typed.propagate(.authorizationIssueHappened, from: "f")
        #expect(seen.withLock { $0.sorted() } == ["hosted event", "json authorizationIssueHappened from f", "typed authorizationIssueHappened"])
        seen.withLock { $0 = [] }
        bus.propagate(MachineEvent(type: "reset"), from: "door")
        #expect(seen.withLock { $0.sorted() } == ["counter reset", "hosted event", "json reset from door"])
        seen.withLock { $0 = [] }
        bus.propagate(MachineEvent(type: "authorizationIssueHappened"), from: "door")
        #expect(seen.withLock { $0.sorted() }
                == ["hosted event", "json authorizationIssueHappened from door", "typed authorizationIssueHappened"])
    }

    @Test func aMachineAndASwiftSpin_ShareAConfiguredGear() async throws {
        // An alarm machine propagates the Swift pair's Gear event on `auth`; the Swift
        // `router` catches it and checks the authorization again, as it does for `feature`.
        let alarm = #"""
            {"id": "alarm", "initial": "quiet", "states": {
               "quiet": {"on": {"RING": {"target": "ringing", "actions": [
                   {"type": "gear.propagate", "gear": "auth", "event": {"type": "authorizationIssueHappened"}}]}}},
               "ringing": {"on": {"HUSH": "quiet"}}},
             "gears": {"auth": {}}}
            """#
        let config = #"{"spins": [{"name": "router", "kind": "router", "gear": "auth"}, {"name": "alarm", "machine": "alarm.json"}], "gears": [{"name": "auth"}]}"#
        let configuration = try SpinServerConfiguration.load(
            flags: .init(config: "app.json"), environment: [:], kinds: Self.registry.kinds,
            readFile: { path in Data((path == "app.json" ? config : alarm).utf8) }, createDirectory: { _ in }).configuration
        let host = try Self.registry.makeHost(configuration)
        host.start()
        defer { host.stop() }
        let router = makeRouter(host)
        _ = await waitForState(router, "router") { $0["authorizationChecks"] as? Int == 1 }   // its check at start
        #expect(await router.post("/v1/spins/alarm/events", #"{"type":"RING"}"#).status == 202)
        _ = await waitForState(router, "router") { $0["authorizationChecks"] as? Int == 2 }
        let state = await router.respond("GET", "/v1/spins/alarm").object["state"] as? [String: Any]
        #expect(state?["value"] as? String == "ringing")
        #expect(host.gears.map(\.name) == ["auth"])
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
