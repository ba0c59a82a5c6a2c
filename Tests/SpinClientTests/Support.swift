import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import SpinClient
import SpinCore
import SpinServer

/// A Spin with no feedbacks, so every event is exactly one state: the count of what was added.
enum Tally {
    struct State: Codable, Equatable, Sendable {
        var count: Int
    }

    /// `{"type":"add","amount":n}`.
    struct Event: Codable, Equatable, Sendable {
        var type = "add"
        var amount: Int
    }

    static func spin() -> Spin<State, Event> {
        Spin(initialState: State(count: 0), feedbacks: [], reducer: Reducer { state, event in
            State(count: state.count + event.amount)
        })
    }
}

/// A Spin whose state is a list of names, large enough that a patch of one is smaller
/// than the whole (what state deltas are for).
enum Shelf {
    struct State: Codable, Equatable, Sendable {
        var names: [String]
    }

    /// `{"type":"rename","index":i,"name":..}`, `{"type":"insert","index":i,"name":..}`.
    struct Event: Codable, Equatable, Sendable {
        var type: String
        var index: Int
        var name: String
    }

    static let initial = State(names: (0..<200).map { "book \($0)" })

    static func reduce(_ state: State, _ event: Event) -> State {
        var state = state
        guard state.names.indices.contains(event.index) || event.index == state.names.count else { return state }
        if event.type == "insert" {
            state.names.insert(event.name, at: event.index)
        } else if event.index < state.names.count {
            state.names[event.index] = event.name
        }
        return state
    }

    static func spin() -> Spin<State, Event> {
        Spin(initialState: initial, feedbacks: [], reducer: Reducer { state, event in reduce(state, event) })
    }
}

/// A live `LoopServer` hosting `tally` and `shelf` on a real socket.
struct LiveServer {
    let server: LoopServer
    let port: Int

    /// Starts a server on `port` (0: a free one), persisting to `storage` when given,
    /// with the configuration changed by `configure`.
    static func start(port: Int = 0, storage: String? = nil, tokens: [AccessToken] = [],
                      _ configure: (inout SpinServerConfiguration) -> Void = { _ in }) throws -> LiveServer {
        var configuration = SpinServerConfiguration(port: port)
        configuration.tokens = tokens
        configure(&configuration)
        if let storage {
            configuration.storage = .init(directory: storage, fsync: .batch, persists: true)
        }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let host = SpinHost()
        try host.host(Tally.spin(), named: "tally")
        try host.host(Shelf.spin(), named: "shelf")
        let server = LoopServer(configuration: configuration, host: host, logger: logger)
        return LiveServer(server: server, port: try server.start())
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A client of this server whose streams reconnect quickly (tests wait for restarts).
    func client(token: String? = nil) -> SpinClient {
        SpinClient(baseURL: url, token: token, streamOptions: StreamOptions(
            reconnect: ReconnectPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200))))
    }

    func shutdown() async { await server.shutdown() }

    /// The number of open WebSocket streams, from `/metrics`.
    func openWebSockets() async throws -> Int? {
        let (data, _) = try await URLSession.shared.data(from: url.appendingPathComponent("metrics"))
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix("spin_open_streams{kind=\"websocket\"}") }
        // A gauge's sample is a float in the exposition format ("1.0").
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int($0) }
    }

    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "spin-client-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// Polls `condition` until it holds or `timeout` passes; true when it held.
func eventually(timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

extension SpinStateStream.Iterator {
    /// The next `count` updates (fewer if the stream ends).
    mutating func next(_ count: Int) async throws -> [StateUpdate<State>] {
        var updates: [StateUpdate<State>] = []
        while updates.count < count, let update = try await next() { updates.append(update) }
        return updates
    }
}

extension AsyncStream.Iterator {
    /// The next `count` elements (fewer if the stream finishes).
    mutating func next(_ count: Int) async -> [Element] {
        var elements: [Element] = []
        while elements.count < count, let element = await next() { elements.append(element) }
        return elements
    }
}
