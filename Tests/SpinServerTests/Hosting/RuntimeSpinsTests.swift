import Foundation
import Logging
import SpinCore
import SpinExamples
import SpinMachines
import SpinStorage
@testable import SpinServer
import SpinWire
import Testing

/// Spins made and deleted while the server runs (`PUT`/`DELETE /v1/spins/{name}`, and an
/// event for a name of an `onEvent` kind), on a real socket with a storage directory:
/// what a client sees, and what a restart finds.
// Serialized: the raw clients block in recv, on the few threads of the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct RuntimeSpinsTests {
    static let door = #"""
        { "id": "door", "initial": "closed", "context": { "opens": 0, "alarms": 0 },
          "on": { "ALARM": { "actions": [ { "type": "assign", "set": { "alarms": { "add": 1 } } } ] } },
          "states": { "closed": { "on": { "OPEN": { "target": "opened", "actions": [ { "type": "assign", "set": { "opens": { "add": 1 } } } ] } } },
                      "opened": { "entry": [ { "type": "gear.propagate", "gear": "doors", "event": { "type": "doorOpened" } } ],
                                  "on": { "CLOSE": "closed" } } },
          "gears": { "doors": { "catch": { "doorOpened": "ALARM" } } } }
        """#

    /// A configuration with kind `door` (machine, `door-*`, Gear `doors-{key}`, made on
    /// events), kind `twin` (the same machine, `twin-*`, on the same Gears: `twin-x` hears
    /// `door-x`), kind `tally` (a Swift counter, explicit) and the configured Spin `counter`.
    /// `sharing`: kind `hall` too (the same machine, `hall-*`, every instance on the one
    /// Gear `hall`: a kind whose Spins share a Gear).
    static func configuration(storage: String?, maxSpins: Int = 1_000_000, idleSeconds: Int = 60,
                              sharing: Bool = false) throws -> SpinServerConfiguration {
        var configuration = SpinServerConfiguration(port: 0)
        configuration.limits.idleSpinSeconds = idleSeconds
        if let storage { configuration.storage = .init(directory: storage, fsync: .batch, persists: true) }
        configuration.limits.maxSpins = maxSpins
        configuration.spins = [.init(name: "counter", kind: "counter")]
        let machine = try MachineDefinition(json: Array(door.utf8), file: "door.json")
        configuration.kinds = [
            .init(name: "door", kind: SpinServerConfiguration.machineKind,
                  machine: .init(path: "door.json", definition: machine), names: .init("door-*"),
                  gears: ["doors": "doors-{key}"], create: .onEvent),
            .init(name: "twin", kind: SpinServerConfiguration.machineKind,
                  machine: .init(path: "door.json", definition: machine), names: .init("twin-*"),
                  gears: ["doors": "doors-{key}"]),
            .init(name: "tally", kind: "counter", names: .init("tally-*")),
        ]
        if sharing {
            configuration.kinds.append(.init(name: "hall", kind: SpinServerConfiguration.machineKind,
                                             machine: .init(path: "door.json", definition: machine), names: .init("hall-*"),
                                             gears: ["doors": "hall"]))
        }
        return configuration
    }

    static func start(storage: String?, maxSpins: Int = 1_000_000, idleSeconds: Int = 60,
                      sharing: Bool = false) throws -> (LoopServer, Int) {
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        let configuration = try configuration(storage: storage, maxSpins: maxSpins, idleSeconds: idleSeconds, sharing: sharing)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = LoopServer(configuration: configuration, host: try kinds.makeHost(configuration), logger: logger)
        return (server, try server.start())
    }

    static func request(_ port: Int, _ method: String, _ path: String, _ body: String? = nil,
                        contentType: String = "application/json") throws -> (status: Int, json: [String: Any]) {
        let client = try RawClient(port: port)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let body { head += "Content-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n" }
        client.send(head + "\r\n" + (body ?? ""))
        let response = client.readResponse()
        return (response?.status ?? 0, response.map { $0.body.jsonObject } ?? [:])
    }

    static func put(_ port: Int, _ name: String, kind: String) throws -> (status: Int, json: [String: Any]) {
        try request(port, "PUT", "/v1/spins/\(name)", #"{"kind":"\#(kind)"}"#)
    }

    static func code(_ json: [String: Any]) -> String? { (json["error"] as? [String: Any])?["code"] as? String }

    static func temporaryDirectory() -> String { NSTemporaryDirectory() + "spin-runtime-\(UUID().uuidString)" }

    @Test func put_Makes201_Then200_AndRefusesAnotherKindOrAConfiguredSpin() async throws {
        let (server, port) = try Self.start(storage: nil)
        let made = try Self.put(port, "tally-1", kind: "tally")
        #expect(made.status == 201)
        #expect(made.json["name"] as? String == "tally-1" && made.json["kind"] as? String == "tally")
        #expect(made.json["sequence"] as? Int == 0 && made.json["status"] as? String == "running")
        // Its loop runs: the counter's feedback counts to 10.
        var state: [String: Any] = [:]
        for _ in 0..<200 where (state["state"] as? [String: Any])?["value"] as? Int != 10 {
            state = try Self.request(port, "GET", "/v1/spins/tally-1").json
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect((state["state"] as? [String: Any])?["value"] as? Int == 10)
        let again = try Self.put(port, "tally-1", kind: "tally")
        #expect(again.status == 200 && again.json["sequence"] as? Int == 10)
        let other = try Self.put(port, "tally-1", kind: "door")
        #expect(other.status == 409 && Self.code(other.json) == "spin_exists")
        let configured = try Self.put(port, "counter", kind: "tally")
        #expect(configured.status == 409 && Self.code(configured.json) == "spin_exists")
        let listed = try Self.request(port, "GET", "/v1/spins?prefix=tally-").json["spins"] as? [[String: Any]]
        #expect(listed?.map { $0["name"] as? String } == ["tally-1"])
        await server.shutdown()
    }

    @Test(arguments: [
        ("PUT", "/v1/spins/tally-2", #"{"kind":"nope"}"#, "application/json", 404, "kind_not_found"),
        ("PUT", "/v1/spins/window-1", #"{"kind":"door"}"#, "application/json", 400, "bad_request"),
        ("PUT", "/v1/spins/tally-2", #"{"kind":"tally","extra":1}"#, "application/json", 400, "bad_request"),
        ("PUT", "/v1/spins/tally-2", #"["tally"]"#, "application/json", 400, "bad_request"),
        ("PUT", "/v1/spins/tally-2", #"{"kind":"#, "application/json", 400, "malformed_json"),
        ("PUT", "/v1/spins/tally-2", #"{"kind":"tally"}"#, "text/plain", 415, "unsupported_media_type"),
        ("PUT", "/v1/spins/a%20b", #"{"kind":"tally"}"#, "application/json", 400, "bad_request"),
        ("DELETE", "/v1/spins/counter", nil, "application/json", 409, "spin_exists"),
        ("DELETE", "/v1/spins/tally-9", nil, "application/json", 404, "spin_not_found"),
    ] as [(String, String, String?, String, Int, String)])
    func badRequests_AreRefusedWithTheirCode_AndMakeNothing(method: String, path: String, body: String?, contentType: String,
                                                             status: Int, code: String) async throws {
        let (server, port) = try Self.start(storage: nil)
        let answer = try Self.request(port, method, path, body, contentType: contentType)
        #expect(answer.status == status)
        #expect(Self.code(answer.json) == code, "\(answer.json)")
        let listed = try Self.request(port, "GET", "/v1/spins").json["spins"] as? [[String: Any]]
        #expect(listed?.map { $0["name"] as? String } == ["counter"])
        await server.shutdown()
    }

    @Test func maxSpins_RefusesOneMore_With409() async throws {
        let (server, port) = try Self.start(storage: nil, maxSpins: 2)
        #expect(try Self.put(port, "tally-1", kind: "tally").status == 201)
        let refused = try Self.put(port, "tally-2", kind: "tally")
        #expect(refused.status == 409 && Self.code(refused.json) == "too_many_spins")
        #expect(try Self.request(port, "GET", "/v1/spins/tally-2").status == 404)
        await server.shutdown()
    }

    @Test func anEvent_ForANameOfAnOnEventKind_MakesTheSpinFirst() async throws {
        let (server, port) = try Self.start(storage: nil)
        let posted = try Self.request(port, "POST", "/v1/spins/door-7/events?wait=true", #"{"type":"OPEN"}"#)
        #expect(posted.status == 200)
        #expect(((posted.json["state"] as? [String: Any])?["context"] as? [String: Any])?["opens"] as? Int == 1)
        // Not for a name of an explicit kind, nor one no kind matches.
        #expect(try Self.request(port, "POST", "/v1/spins/tally-7/events", #"{"type":"increase"}"#).status == 404)
        #expect(try Self.request(port, "POST", "/v1/spins/window-7/events", #"{"type":"OPEN"}"#).status == 404)
        let gears = try Self.request(port, "GET", "/v1/gears").json["gears"] as? [[String: Any]]
        #expect(gears?.contains { $0["name"] as? String == "doors-7" && ($0["attached"] as? [String]) == ["door-7"] } == true)
        await server.shutdown()
    }

    @Test func delete_ClosesStreamsWith4004_AndTheNameMayBeMadeAgainFromZero() async throws {
        let directory = Self.temporaryDirectory()
        let (server, port) = try Self.start(storage: directory)
        #expect(try Self.put(port, "door-1", kind: "door").status == 201)
        // OPEN, then the ALARM its own doorOpened makes (it catches its Gear too).
        #expect(try Self.request(port, "POST", "/v1/spins/door-1/events?wait=true", #"{"type":"OPEN"}"#).status == 200)
        #expect(try await Self.alarms(port, "door-1", atSequence: 2) == 1)
        let client = try RawClient(port: port)
        #expect(client.upgrade("/v1/spins/door-1/stream")?.status == 101)
        var session = WebSocketSession(role: .client)
        let snapshot = client.readMessages(&session, count: 1).messages.first?.jsonObject
        #expect(snapshot?["sequence"] as? Int == 2)
        let epoch = snapshot?["epoch"] as? String
        let deleted = try Self.request(port, "DELETE", "/v1/spins/door-1")
        #expect(deleted.status == 200 && deleted.json["status"] as? String == "deleted" && deleted.json["sequence"] as? Int == 2)
        #expect(client.readMessages(&session, count: 1).closeCode == 4004)
        #expect(try Self.request(port, "GET", "/v1/spins/door-1").status == 404)
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/door-1.journal"))
        // Its Gear went with it (no other Spin is on doors-1).
        let gears = try Self.request(port, "GET", "/v1/gears").json["gears"] as? [[String: Any]]
        #expect(gears?.contains { $0["name"] as? String == "doors-1" } == false)
        // Made again: sequence 0, a new epoch.
        #expect(try Self.put(port, "door-1", kind: "door").status == 201)
        let again = try RawClient(port: port)
        #expect(again.upgrade("/v1/spins/door-1/stream")?.status == 101)
        var second = WebSocketSession(role: .client)
        let fresh = again.readMessages(&second, count: 1).messages.first?.jsonObject
        #expect(fresh?["sequence"] as? Int == 0)
        #expect(fresh?["epoch"] as? String != epoch)
        await server.shutdown()
    }

    @Test func madeSpins_AreThereAfterARestart_AndDeletedOnesAreNot() async throws {
        let directory = Self.temporaryDirectory()
        do {
            let (server, port) = try Self.start(storage: directory)
            #expect(try Self.put(port, "door-1", kind: "door").status == 201)
            #expect(try Self.put(port, "door-2", kind: "door").status == 201)
            #expect(try Self.put(port, "tally-1", kind: "tally").status == 201)
            #expect(try Self.request(port, "POST", "/v1/spins/door-1/events?wait=true", #"{"type":"OPEN"}"#).status == 200)
            #expect(try Self.request(port, "DELETE", "/v1/spins/door-2").status == 200)
            await server.shutdown()
        }
        let (server, port) = try Self.start(storage: directory)
        let listed = try Self.request(port, "GET", "/v1/spins").json["spins"] as? [[String: Any]]
        #expect(listed?.map { $0["name"] as? String } == ["counter", "door-1", "tally-1"])
        #expect(listed?.map { $0["kind"] as? String } == ["counter", "door", "tally"])
        // OPEN and its ALARM (delivered again after the restart if it had not been applied).
        #expect(try await Self.alarms(port, "door-1", atSequence: 2) == 1)
        await server.shutdown()
    }

    @Test func aRestart_WithoutTheKind_IsRefusedNamingTheWayForward() async throws {
        let directory = Self.temporaryDirectory()
        do {
            let (server, port) = try Self.start(storage: directory)
            #expect(try Self.put(port, "tally-1", kind: "tally").status == 201)
            await server.shutdown()
        }
        var configuration = try Self.configuration(storage: directory)
        configuration.kinds.removeAll { $0.name == "tally" }
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        let server = LoopServer(configuration: configuration, host: try kinds.makeHost(configuration), logger: Logger(label: "test"))
        #expect {
            _ = try server.start()
        } throws: { error in
            "\(error)".contains("kind tally were made at run time (tally-1 among them) and the config has no kind tally now: add it back to kinds")
        }
    }

    /// `twin-x`'s alarms, once its sequence reached `sequence`.
    static func alarms(_ port: Int, _ name: String, atSequence sequence: Int) async throws -> Int? {
        var json: [String: Any] = [:]
        for _ in 0..<300 where json["sequence"] as? Int ?? 0 < sequence {
            json = try request(port, "GET", "/v1/spins/\(name)").json
            try await Task.sleep(for: .milliseconds(10))
        }
        return ((json["state"] as? [String: Any])?["context"] as? [String: Any])?["alarms"] as? Int
    }

    @Test func aSpinMadeNow_GetsNoGearEventSentBeforeItExisted_AndOneMadeAgainIsNotTakenForADuplicate() async throws {
        let directory = Self.temporaryDirectory()
        let (server, port) = try Self.start(storage: directory)
        #expect(try Self.put(port, "door-x", kind: "door").status == 201)
        #expect(try Self.request(port, "POST", "/v1/spins/door-x/events?wait=true", #"{"type":"OPEN"}"#).status == 200)
        // twin-x joins doors-x after that doorOpened: it never gets it.
        #expect(try Self.put(port, "twin-x", kind: "twin").status == 201)
        #expect(try Self.request(port, "POST", "/v1/spins/door-x/events?wait=true", #"[{"type":"CLOSE"},{"type":"OPEN"}]"#).status == 200)
        // In order per sender: had it got the first, this would be 2.
        #expect(try await Self.alarms(port, "twin-x", atSequence: 1) == 1)
        // door-x made again: its Gear events are new to twin-x, not duplicates of the old ones.
        #expect(try Self.request(port, "DELETE", "/v1/spins/door-x").status == 200)
        #expect(try Self.put(port, "door-x", kind: "door").status == 201)
        #expect(try Self.request(port, "POST", "/v1/spins/door-x/events?wait=true", #"{"type":"OPEN"}"#).status == 200)
        #expect(try await Self.alarms(port, "twin-x", atSequence: 2) == 2)
        await server.shutdown()
        // And after a restart, nothing is delivered again to it.
        let (again, secondPort) = try Self.start(storage: directory)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await Self.alarms(secondPort, "twin-x", atSequence: 2) == 2)
        #expect(try Self.request(secondPort, "GET", "/v1/spins/twin-x").json["sequence"] as? Int == 2)
        await again.shutdown()
    }

    // MARK: Sleep and wake

    /// The status and sequence `GET /v1/spins` lists for `name` (which wakes nobody).
    static func listed(_ port: Int, _ name: String) throws -> (status: String?, sequence: Int?) {
        let spins = try request(port, "GET", "/v1/spins?prefix=\(name)&limit=1").json["spins"] as? [[String: Any]]
        let entry = spins?.first { $0["name"] as? String == name }
        return (entry?["status"] as? String, entry?["sequence"] as? Int)
    }

    /// The sequence `GET /v1/spins` lists for `name` once it is `sequence`, or the last
    /// one listed after 4 s (listing wakes nobody).
    static func listedSequence(_ port: Int, _ name: String, reaching sequence: Int) async throws -> Int? {
        var listed: Int?
        for _ in 0..<200 where listed != sequence {
            listed = try Self.listed(port, name).sequence
            try await Task.sleep(for: .milliseconds(20))
        }
        return listed
    }

    static func waitUntilAsleep(_ port: Int, _ name: String) async throws -> Bool {
        for _ in 0..<100 {
            if try listed(port, name).status == "asleep" { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// The open descriptors of this process on files in `directory`.
    static func openFiles(in directory: String) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)"))?
            .hasPrefix(directory + "/") == true }.count
    }

    @Test func anIdleSpin_Sleeps_IsListedAsleepWithoutWaking_AndARequestWakesItTransparently() async throws {
        let directory = Self.temporaryDirectory()
        let (server, port) = try Self.start(storage: directory, idleSeconds: 1)
        #expect(try Self.put(port, "door-1", kind: "door").status == 201)
        #expect(try Self.request(port, "POST", "/v1/spins/door-1/events?wait=true", #"{"type":"OPEN"}"#).status == 200)
        #expect(try await Self.alarms(port, "door-1", atSequence: 2) == 1)
        // No file of its own: made Spins share the storage directory's database.
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(!files.contains { $0.hasPrefix("door-1") }, "\(files)")
        let open = Self.openFiles(in: directory)
        #expect(try await Self.waitUntilAsleep(port, "door-1"))
        #expect(try Self.listed(port, "door-1").sequence == 2)
        // Asleep: no loop; the descriptors are the same as while it was awake.
        #expect(Self.openFiles(in: directory) == open)
        // Configured Spins never sleep.
        #expect(try Self.listed(port, "counter").status == "running")
        // Any request wakes it, transparently: its state is where it was.
        let woken = try Self.request(port, "GET", "/v1/spins/door-1").json
        #expect(woken["status"] as? String == "running" && woken["sequence"] as? Int == 2)
        #expect(((woken["state"] as? [String: Any])?["context"] as? [String: Any])?["opens"] as? Int == 1)
        #expect(try await Self.waitUntilAsleep(port, "door-1"))
        let posted = try Self.request(port, "POST", "/v1/spins/door-1/events?wait=true", #"{"type":"CLOSE"}"#)
        #expect(posted.status == 200 && posted.json["sequence"] as? Int == 3)
        await server.shutdown()
    }

    @Test func aSpinMadeAsleep_AndOneThatFellAsleep_StartAsleepAfterARestart_AndWakeWithTheirState() async throws {
        let directory = Self.temporaryDirectory()
        do {
            let (server, port) = try Self.start(storage: directory, idleSeconds: 1)
            // A door waits for nothing until its first event: made asleep, yet it takes events.
            let made = try Self.put(port, "door-1", kind: "door")
            #expect(made.status == 201 && made.json["status"] as? String == "running")
            #expect(try Self.listed(port, "door-1").status == "asleep")
            #expect(try Self.put(port, "door-2", kind: "door").status == 201)
            #expect(try Self.request(port, "POST", "/v1/spins/door-1/events?wait=true", #"{"type":"OPEN"}"#).status == 200)
            #expect(try await Self.alarms(port, "door-1", atSequence: 2) == 1)
            #expect(try await Self.waitUntilAsleep(port, "door-1"))
            await server.shutdown()
        }
        let (server, port) = try Self.start(storage: directory, idleSeconds: 60)
        // Hosted asleep at their sequences: nothing read until something wakes them.
        #expect(try Self.listed(port, "door-1") == ("asleep", 2))
        #expect(try Self.listed(port, "door-2") == ("asleep", 0))
        let woken = try Self.request(port, "GET", "/v1/spins/door-1").json
        #expect(woken["status"] as? String == "running" && woken["sequence"] as? Int == 2)
        #expect(((woken["state"] as? [String: Any])?["context"] as? [String: Any])?["alarms"] as? Int == 1)
        let posted = try Self.request(port, "POST", "/v1/spins/door-2/events?wait=true", #"{"type":"OPEN"}"#)
        #expect(posted.status == 200 && posted.json["sequence"] as? Int == 1)
        await server.shutdown()
    }

    @Test func aStream_StaysOpenWhileItsSpinSleeps_AndGoesOnWhenItWakes() async throws {
        let directory = Self.temporaryDirectory()
        let (server, port) = try Self.start(storage: directory, idleSeconds: 1)
        #expect(try Self.put(port, "door-2", kind: "door").status == 201)
        let client = try RawClient(port: port)
        #expect(client.upgrade("/v1/spins/door-2/stream")?.status == 101)
        var session = WebSocketSession(role: .client)
        #expect(client.readMessages(&session, count: 1).messages.first?.jsonObject["sequence"] as? Int == 0)
        #expect(try await Self.waitUntilAsleep(port, "door-2"))
        // An event from another client wakes it; the stream gets its state message.
        #expect(try Self.request(port, "POST", "/v1/spins/door-2/events", #"{"type":"OPEN"}"#).status == 202)
        let next = client.readMessages(&session, count: 1).messages.first?.jsonObject
        #expect(next?["type"] as? String == "state" && next?["sequence"] as? Int == 1)
        // Asleep again, an event sent on the stream itself wakes it too.
        #expect(try await Self.waitUntilAsleep(port, "door-2"))
        client.sendText(#"{"type":"event","id":"c1","event":{"type":"CLOSE"}}"#, on: &session)
        let answers = client.readJSON(&session) { $0["type"] as? String == "ack" }
        #expect(answers.last?["sequence"] as? Int ?? 0 >= 3)
        await server.shutdown()
    }

    @Test func aGearEvent_WakesTheSleepingSpinThatCatchesIt_AndItIsCaughtOnce() async throws {
        let directory = Self.temporaryDirectory()
        let (server, port) = try Self.start(storage: directory, idleSeconds: 1)
        #expect(try Self.put(port, "door-y", kind: "door").status == 201)
        #expect(try Self.put(port, "twin-y", kind: "twin").status == 201)
        #expect(try await Self.waitUntilAsleep(port, "door-y"))
        #expect(try await Self.waitUntilAsleep(port, "twin-y"))
        // door-y wakes for the event; its doorOpened wakes twin-y, which catches it once.
        #expect(try Self.request(port, "POST", "/v1/spins/door-y/events", #"{"type":"OPEN"}"#).status == 202)
        #expect(try await Self.listedSequence(port, "twin-y", reaching: 1) == 1)
        #expect(try await Self.alarms(port, "twin-y", atSequence: 1) == 1)
        await server.shutdown()
    }

    @Test func sleepingSpins_AreOnDiskOnly_FoundByNameAndPaged_AndARestartReadsNoneOfThem() async throws {
        let directory = Self.temporaryDirectory()
        do {
            let (server, port) = try Self.start(storage: directory, idleSeconds: 1)
            let before = server.host.count
            for index in 0..<30 { #expect(try Self.put(port, "door-\(index)", kind: "door").status == 201) }
            // Made asleep: nothing of them in memory, yet listed, paged and counted.
            #expect(server.host.count == before)
            #expect(server.runtimeSpins.onDiskOnly == 30)
            let page = try Self.request(port, "GET", "/v1/spins?prefix=door-&limit=4&after=door-1").json
            #expect((page["spins"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["door-10", "door-11", "door-12", "door-13"])
            #expect(page["next"] as? String == "door-13")
            #expect(try Self.listed(port, "door-12") == ("asleep", 0))
            // An event finds one on disk and wakes it; asleep again, it leaves memory.
            #expect(try Self.request(port, "POST", "/v1/spins/door-12/events?wait=true", #"{"type":"OPEN"}"#).status == 200)
            #expect(server.host.count == before + 1)
            var left = false
            for _ in 0..<200 where !left {
                left = server.host.count == before && server.runtimeSpins.onDiskOnly == 30
                try await Task.sleep(for: .milliseconds(25))
            }
            #expect(left)
            #expect(try Self.put(port, "door-12", kind: "twin").status == 409)
            #expect(try Self.request(port, "DELETE", "/v1/spins/door-13").status == 200)
            #expect(try Self.request(port, "GET", "/v1/spins/door-13").status == 404)
            #expect(server.runtimeSpins.onDiskOnly == 29 && server.host.count == before)
            await server.shutdown()
        }
        let (server, port) = try Self.start(storage: directory, idleSeconds: 60)
        // Nothing read at start: each is found when asked for.
        #expect(server.host.spin(named: "door-12") == nil)
        #expect(try Self.listed(port, "door-12") == ("asleep", 2))
        let woken = try Self.request(port, "GET", "/v1/spins/door-12").json
        #expect(((woken["state"] as? [String: Any])?["context"] as? [String: Any])?["opens"] as? Int == 1)
        #expect(try Self.request(port, "GET", "/v1/spins/door-13").status == 404)
        await server.shutdown()
    }

    @Test func theSpinsOnAGear_AreFoundFromItsName_ThroughTheKindsTemplates() throws {
        #expect(SpinFactory.key(in: "doors-7", template: "doors-{key}") == "7")
        #expect(SpinFactory.key(in: "a-7-b-7", template: "a-{key}-b-{key}") == "7")
        #expect(SpinFactory.key(in: "a-7-b-8", template: "a-{key}-b-{key}") == nil)
        #expect(SpinFactory.key(in: "lamps-7", template: "doors-{key}") == nil)
        #expect(SpinFactory.key(in: "doors-", template: "doors-{key}") == "")
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        let host = try kinds.makeHost(try Self.configuration(storage: nil))
        let factory = try #require(host.factory)
        #expect(factory.peers(on: "doors-x").sorted() == ["door-x", "twin-x"])
        #expect(factory.peers(on: "lamps-x").isEmpty)
        #expect(factory.mayBeMade("door-9") && factory.mayBeMade("tally-1"))
        #expect(!factory.mayBeMade("counter") && !factory.mayBeMade("other"))
        #expect(factory.sharingKinds.isEmpty)
        // On a cluster the Spins on one Gear are placed by their key, so they share a
        // partition (`SpinPartitions`); a Spin whose kind has no `{key}` Gear, or a
        // configured one, by its name.
        #expect(factory.groupKey(of: "door-x") == "x" && factory.groupKey(of: "twin-x") == "x")
        #expect(factory.groupKey(of: "tally-1") == nil && factory.groupKey(of: "counter") == nil)
        let partitions = SpinPartitions(count: 64) { factory.groupKey(of: $0) }
        #expect((0..<100).allSatisfy { partitions.partition(of: "door-\($0)") == partitions.partition(of: "twin-\($0)") })
    }

    @Test func theSpinsOfAKindSharingOneGear_StayInMemoryAsleep_AreReadAtStart_AndCatchWhatTheGearCarries() async throws {
        let directory = Self.temporaryDirectory()
        do {
            let (server, port) = try Self.start(storage: directory, idleSeconds: 1, sharing: true)
            #expect(try Self.put(port, "hall-1", kind: "hall").status == 201)
            #expect(try Self.put(port, "hall-2", kind: "hall").status == 201)
            // Woken by a request, then asleep again.
            #expect(try Self.request(port, "GET", "/v1/spins/hall-1").json["status"] as? String == "running")
            #expect(try await Self.waitUntilAsleep(port, "hall-1"))
            // Asleep, and kept in memory: every Gear event on `hall` must find them.
            #expect(server.host.spin(named: "hall-1") is SleepingSpin)
            #expect(server.host.spin(named: "hall-2") is SleepingSpin)
            #expect(server.runtimeSpins.onDiskOnly == 0)
            await server.shutdown()
        }
        let (server, port) = try Self.start(storage: directory, idleSeconds: 60, sharing: true)
        // Read at start, resting: hosted asleep before anything asks for them.
        #expect(server.host.spin(named: "hall-1") is SleepingSpin)
        #expect(server.host.spin(named: "hall-2") is SleepingSpin)
        // hall-2's doorOpened, on the shared Gear, wakes hall-1, which catches it once.
        #expect(try Self.request(port, "POST", "/v1/spins/hall-2/events", #"{"type":"OPEN"}"#).status == 202)
        #expect(try await Self.listedSequence(port, "hall-1", reaching: 1) == 1)
        #expect(try await Self.alarms(port, "hall-1", atSequence: 1) == 1)
        await server.shutdown()
    }

    @Test func aKindOnAGearWithoutKey_SharesIt_AndItsSpinsAreNotFoundThroughTemplates() throws {
        var kinds = SpinKindRegistry()
        kinds.register("counter") { context in try context.host(Counter.spin()) }
        let host = try kinds.makeHost(try Self.configuration(storage: nil, sharing: true))
        let factory = try #require(host.factory)
        #expect(factory.sharingKinds == ["hall"])
        #expect(factory.lasts("hall") && !factory.lasts("doors-x"))
        #expect(factory.peers(on: "hall").isEmpty)
    }
}
