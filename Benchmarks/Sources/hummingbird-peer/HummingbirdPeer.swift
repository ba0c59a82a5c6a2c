import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging

/// The Hummingbird 2 peer of spin-server for counter Spins (one, `counter`, unless
/// `--spin` names others), written as a Hummingbird user would write it: a `Router` for
/// HTTP, a WebSocket router for the stream, an actor per counter holding its state, one
/// `AsyncStream` per subscriber, `Codable` messages. No request logging (Hummingbird logs
/// nothing per request unless a middleware is added).
///
/// - `POST /v1/spins/NAME/events`: one event or an array; 202
///   `{"accepted":k,"sequence":N}` once the counter's actor applied them; 404 for a name
///   it does not host.
/// - `GET /v1/spins/NAME/stream` (WebSocket): a snapshot, then one state message per
///   applied event; client messages `{"type":"event","id":..,"event":..}` are applied and
///   acknowledged with `{"type":"ack","id":..,"sequence":N}`. The upgrade to a name it
///   does not host is refused (Hummingbird answers a refused upgrade with 400).
///
/// The counter's regulation (spin-server counts a new counter up to 10 by feedback) is
/// not mirrored: the benchmarks only send `increase`, past 10, where it never fires.
@main
struct HummingbirdPeer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hummingbird-peer",
        abstract: "A Hummingbird 2 server with spin-server's minimal counter API, the peer of the benchmarks."
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0: any free port).")
    var port = 8090

    @Option(help: "State messages a subscriber keeps before dropping the oldest (spin-server's limits.streamQueue).")
    var streamQueue = 64

    @Option(name: .customLong("spin"), help: "A counter to host, at /v1/spins/NAME/ (repeat for several; default: counter).")
    var spins: [String] = []

    @Option(help: "Log level (trace, debug, info, notice, warning, error, critical).")
    var logLevel = "warning"

    func run() async throws {
        var logger = Logger(label: "hummingbird-peer")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
        let queue = streamQueue
        let counters = Dictionary(uniqueKeysWithValues: (spins.isEmpty ? ["counter"] : spins).map {
            ($0, CounterSpin(streamQueue: queue))
        })
        /// The counter the path's `:spin` names; 404 when none (400 for an upgrade).
        @Sendable func hosted(_ context: some RequestContext) throws -> CounterSpin {
            guard let name = context.parameters.get("spin"), let counter = counters[name] else {
                throw HTTPError(.notFound)
            }
            return counter
        }

        let router = Router()
        router.post("/v1/spins/:spin/events") { request, context -> EditedResponse<Accepted> in
            let counter = try hosted(context)
            let batch = try await request.decode(as: EventBatch.self, context: context)
            let sequence = await counter.apply(batch.events)
            return EditedResponse(status: .accepted, response: Accepted(accepted: batch.events.count, sequence: sequence))
        }

        let webSocketRouter = Router(context: BasicWebSocketRequestContext.self)
        webSocketRouter.ws("/v1/spins/:spin/stream", shouldUpgrade: { _, context in
            _ = try hosted(context)
            return .upgrade([:])
        }) { inbound, outbound, context in
            try await Self.serveStream(of: hosted(context.requestContext), inbound: inbound, outbound: outbound)
        }

        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: webSocketRouter),
            configuration: .init(address: .hostname(host, port: port), serverName: "hummingbird-peer"),
            onServerRunning: { channel in
                // The run script waits for this line (and reads the port from it).
                print("hummingbird-peer listening on \(channel.localAddress?.description ?? "?")")
                fflush(nil)
            },
            logger: logger
        )
        try await app.runService()
    }

    /// One stream: the snapshot, then the subscriber's messages, while client events are
    /// applied and acknowledged on the same connection.
    static func serveStream(of counter: CounterSpin, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let subscription = await counter.subscribe()
        do {
            try await outbound.write(.text(subscription.snapshot))
            try await relay(subscription.messages, of: counter, inbound: inbound, outbound: outbound)
        } catch {
            await counter.unsubscribe(subscription.id)
            throw error
        }
        await counter.unsubscribe(subscription.id)
    }

    /// Writes `messages` to the client while its events are applied and acknowledged.
    private static func relay(
        _ messages: AsyncStream<String>, of counter: CounterSpin,
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await message in messages {
                    try await outbound.write(.text(message))
                }
            }
            let decoder = JSONDecoder()
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message else { continue }
                let reply: String
                do {
                    let clientMessage = try decoder.decode(ClientMessage.self, from: Data(text.utf8))
                    guard clientMessage.type == "event" else {
                        throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown message type"))
                    }
                    let sequence = await counter.apply(clientMessage.event.events)
                    reply = await counter.ack(id: clientMessage.id ?? "", sequence: sequence)
                } catch {
                    let refusal = ErrorMessage(id: nil, error: .init(code: "bad_request", message: "\(error)"))
                    reply = String(decoding: try JSONEncoder().encode(refusal), as: UTF8.self)
                }
                try await outbound.write(.text(reply))
            }
            group.cancelAll()
        }
    }
}

/// The 202 answer to a POST of events: `{"accepted":k,"sequence":N}`.
struct Accepted: ResponseEncodable {
    var accepted: Int
    var sequence: UInt64
}
