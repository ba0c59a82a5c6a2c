import ArgumentParser
import Foundation
import Histogram
import NIOCore
import NIOPosix

/// The load generator of the benchmark harness (`Benchmarks/run`): one scenario per
/// subcommand, against spin-server, the Hummingbird peer or nginx. Each result is one
/// JSON line on standard output and one human line on standard error.
@main
struct SpinLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spin-load",
        abstract: "Load generator for spin-server and its peers.",
        subcommands: [Post.self, WebSocketEvents.self, Fanout.self, Idle.self]
    )
}

/// Where to send the load, and with how many threads.
struct TargetOptions: ParsableArguments {
    @Option(help: "The server's address.")
    var host = "127.0.0.1"

    @Option(help: "The server's port.")
    var port: Int

    @Option(help: "The Spin's name.")
    var spin = "counter"

    @Option(help: "The name of the target in the output (ours, peer, nginx).")
    var label = "target"

    @Option(help: "Event-loop threads of the generator.")
    var threads = 2

    var eventsPath: String { "/v1/spins/\(spin)/events" }
    var streamPath: String { "/v1/spins/\(spin)/stream" }

    func makeGroup() -> MultiThreadedEventLoopGroup {
        MultiThreadedEventLoopGroup(numberOfThreads: threads)
    }
}

/// `post`: POST `{"type":"increase"}` at the highest rate over keep-alive connections.
struct Post: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "HTTP POST of events at the highest rate (closed loop per connection), or at a fixed rate (--rate: open loop, latency from each request's due time).")

    @OptionGroup var target: TargetOptions

    @Option(help: "Keep-alive connections.")
    var connections = 64

    @Option(help: "Seconds to measure.")
    var duration = 5.0

    @Option(help: "Request path (default: the Spin's events route).")
    var path: String?

    @Option(help: "Events/s in all, spread evenly over the connections (default: as fast as answered).")
    var rate: Double?

    func run() async throws {
        let group = target.makeGroup()
        let request = makePostRequest(host: target.host, port: target.port, path: path ?? target.eventsPath,
                                      body: #"{"type":"increase"}"#)
        // A fixed rate: request k of a connection is due k × connections/rate seconds after
        // its start, the starts staggered by 1/rate so the load is even; a late answer
        // does not move the schedule, and each latency counts from the request's due
        // time (corrected for coordinated omission, as wrk2 does).
        let pacing: HTTPLoadHandler.Pacing = rate.map { .interval(nanoseconds: UInt64(Double(connections) / $0 * 1e9)) }
            ?? .closedLoop
        let clients = try await connectHTTP(group: group, host: target.host, port: target.port, count: connections,
                                            request: request, pacing: pacing, recordSequences: false)
        let step: UInt64 = rate.map { UInt64(1e9 / $0) } ?? 0
        let startAll: @Sendable () async throws -> Void = {
            var delay: UInt64 = 0
            for client in clients {
                let first = delay
                _ = try await withHTTPHandlers([client]) { $0.start(after: first) }
                delay += step
            }
        }
        let (stats, elapsed) = try await measure(for: duration, group: group,
                                                 start: startAll,
                                                 stop: { try await withHTTPHandlers(clients) { $0.stop() } },
                                                 close: { _ = try? await withHTTPHandlers(clients) { $0.close() } })
        let latencies = merged(stats.map(\.latencies))
        let completed = stats.reduce(0) { $0 + $1.completed }
        let errors = stats.reduce(0) { $0 + $1.failures + ($1.closed ? 1 : 0) }
        let reconnects = stats.reduce(0) { $0 + $1.reconnects }
        let unanswered = stats.reduce(0) { $0 + $1.unanswered }
        let rate = Double(completed) / elapsed
        let summary = LatencySummary(latencies)
        LoadResult(scenario: self.rate == nil ? "post" : "post-rate", target: target.label, duration_s: elapsed,
                   connections: connections, events: completed, events_per_s: rate, latency: summary, errors: errors,
                   unanswered: self.rate == nil ? nil : unanswered, reconnects: reconnects, rate: self.rate)
            .emit(human: String(format: "%.0f events/s over %d connections%@, %@, %d errors, %d reconnections",
                                rate, connections,
                                self.rate.map { String(format: " (%.0f asked, %d due unanswered at the end)", $0, unanswered) } ?? "",
                                summary.text, errors, reconnects))
        if completed == 0 { throw LoadError(description: "no response") }
    }
}

/// `ws-events`: events sent on the Spin's stream (or spread over several Spins), one or
/// more in flight per connection, each acknowledged.
struct WebSocketEvents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ws-events",
        abstract: "Events sent over WebSocket streams with acks (each stream also receives every state message of its Spin)."
    )

    @OptionGroup var target: TargetOptions

    @Option(help: "WebSocket connections.")
    var connections = 64

    @Option(help: "Seconds to measure.")
    var duration = 5.0

    @Option(help: "Spread the connections over this many Spins, named --spin followed by 0, 1, ...: connection i streams from Spin i mod N (0: all on --spin).")
    var spins = 0

    @Option(help: "Events each connection keeps unacknowledged.")
    var inFlight = 1

    func run() async throws {
        let group = target.makeGroup()
        let (spin, spins, inFlight) = (target.spin, self.spins, self.inFlight)
        let channels = try await connectWebSockets(count: connections, group: group, host: target.host, port: target.port,
                                                   path: { spins > 0 ? "/v1/spins/\(spin)\($0 % spins)/stream" : "/v1/spins/\(spin)/stream" }) { index in
            .eventSender(message: ByteBuffer(string: #"{"type":"event","id":"c\#(index)","event":{"type":"increase"}}"#),
                         inFlight: inFlight)
        }
        let (stats, elapsed) = try await measure(for: duration, group: group,
                                                 start: { _ = try await withWebSocketHandlers(channels) { $0.start() } },
                                                 stop: { try await withWebSocketHandlers(channels) { $0.stop() } },
                                                 close: { await closeAll(channels) })
        let latencies = merged(stats.map(\.latencies))
        let acks = stats.reduce(0) { $0 + $1.acks }
        let errors = stats.reduce(0) { $0 + $1.errors + ($1.closed ? 1 : 0) } + (channels.count - stats.count)
        let messages = stats.reduce(0) { $0 + $1.stateMessages }
        let rate = Double(acks) / elapsed
        let summary = LatencySummary(latencies)
        LoadResult(scenario: "ws-events", target: target.label, duration_s: elapsed, connections: connections, events: acks,
               events_per_s: rate, latency: summary, errors: errors, messages: messages,
               messages_per_s: Double(messages) / elapsed)
            .emit(human: String(format: "%.0f events/s acknowledged over %d streams, %@, %.0f state messages/s, %d errors",
                                rate, connections, summary.text, Double(messages) / elapsed, errors))
        if acks == 0 { throw LoadError(description: "no ack") }
    }
}

/// `fanout`: S subscribers while events are POSTed at a fixed rate; latency from each
/// POST's send to its state message's receipt at every subscriber.
struct Fanout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Subscribers of the Spin's stream while events are POSTed at a fixed rate."
    )

    @OptionGroup var target: TargetOptions

    @Option(help: "Subscribers.")
    var subscribers = 100

    @Option(help: "Events POSTed per second, in all.")
    var rate = 100.0

    @Option(help: "POSTing connections, each with one request in flight, taking turns (so that one slow answer does not lower the rate).")
    var posters = 4

    @Option(help: "Seconds of POSTing.")
    var duration = 5.0

    @Option(help: "Seconds to wait, after the last POST, for subscribers to receive it.")
    var drain = 3.0

    func run() async throws {
        let group = target.makeGroup()
        let channels = try await connectWebSockets(count: subscribers, group: group, host: target.host, port: target.port,
                                                   path: { [streamPath = target.streamPath] _ in streamPath }) { _ in .subscriber(recordReceipts: true) }
        let request = makePostRequest(host: target.host, port: target.port, path: target.eventsPath, body: #"{"type":"increase"}"#)
        let interval = UInt64(1e9 / rate)
        let posterCount = self.posters
        let posters = try await connectHTTP(group: group, host: target.host, port: target.port, count: posterCount,
                                            request: request, pacing: .interval(nanoseconds: interval * UInt64(posterCount)),
                                            recordSequences: true)
        let started = nowNanoseconds()
        for (index, poster) in posters.enumerated() {
            _ = try await withHTTPHandlers([poster]) { $0.start(after: interval * UInt64(index)) }
        }
        try await Task.sleep(for: .seconds(duration))
        let postStats = try await withHTTPHandlers(posters) { $0.stop() }
        let postedUntil = nowNanoseconds()
        let posted = postStats.flatMap(\.posted)
        let lastPosted = stride(from: 0, to: posted.count, by: 2).map { posted[$0] }.max() ?? 0

        // Drain: until every subscriber saw the last POSTed sequence, or the time is up.
        let drainEnd = postedUntil + UInt64(drain * 1e9)
        while nowNanoseconds() < drainEnd {
            let behind = try await withWebSocketHandlers(channels) { $0.current.lastSequence < lastPosted }
            if !behind.contains(true) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let stats = try await withWebSocketHandlers(channels) { $0.stop() }
        await closeAll(channels)
        _ = try await withHTTPHandlers(posters) { $0.close() }
        try await group.shutdownGracefully()

        // Join each receipt with its POST's send time, by sequence.
        var sentAt: [UInt64: UInt64] = [:]
        for index in stride(from: 0, to: posted.count, by: 2) {
            sentAt[posted[index]] = posted[index + 1]
        }
        var latencies = makeLatencyHistogram()
        var messages = 0
        var lost = 0
        var behind = channels.count - stats.count  // closed streams
        var lastReceipt = started
        for stat in stats {
            messages += stat.stateMessages
            if stat.laterSnapshots > 0 || stat.closed {
                behind += 1
            }
            var received = 0
            let receipts = stat.receipts
            for index in stride(from: 0, to: receipts.count, by: 2) {
                guard let sent = sentAt[receipts[index]] else { continue }
                received += 1
                latencies.record(receipts[index + 1] &- sent)
                lastReceipt = max(lastReceipt, receipts[index + 1])
            }
            if stat.laterSnapshots == 0 && !stat.closed {
                let expected = sentAt.keys.count { $0 > (stat.snapshotSequence ?? 0) }
                lost += max(0, expected - received)
            }
        }
        let elapsed = Double(max(lastReceipt, postedUntil) - started) / 1e9
        let summary = LatencySummary(latencies)
        let postRate = Double(sentAt.count) / (Double(postedUntil - started) / 1e9)
        let errors = postStats.reduce(0) { $0 + $1.failures + ($1.closed ? 1 : 0) }
        LoadResult(scenario: "fanout", target: target.label, duration_s: elapsed, events: sentAt.count, events_per_s: postRate,
               latency: summary, errors: errors, subscribers: subscribers, rate: rate, messages: messages,
               messages_per_s: Double(messages) / elapsed, lost: lost, behind: behind)
            .emit(human: String(format: "%d subscribers, %.0f events/s POSTed: POST-to-receipt %@, %.0f messages/s, %d lost, %d behind, %d errors",
                                subscribers, postRate, summary.text, Double(messages) / elapsed, lost, behind, errors))
        if sentAt.isEmpty { throw LoadError(description: "no event was accepted") }
    }
}

/// `idle`: N idle streams; the server's resident memory per connection.
struct Idle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Idle WebSocket streams: the server's resident memory per connection.")

    @OptionGroup var target: TargetOptions

    @Option(help: "Idle streams to open.")
    var connections = 1000

    @Option(help: "The server's process id (its /proc/PID/status VmRSS is read).")
    var pid: Int

    @Option(help: "Seconds to wait with the streams open before reading the memory.")
    var settle = 1.0

    func run() async throws {
        let group = target.makeGroup()
        let before = try residentKiB(of: pid)
        let channels = try await connectWebSockets(count: connections, group: group, host: target.host, port: target.port,
                                                   path: { [streamPath = target.streamPath] _ in streamPath }) { _ in .subscriber(recordReceipts: false) }
        try await Task.sleep(for: .seconds(settle))
        let after = try residentKiB(of: pid)
        let stats = try await withWebSocketHandlers(channels) { $0.stop() }
        await closeAll(channels)
        try await group.shutdownGracefully()
        let open = stats.count { !$0.closed }
        let perConnection = Double(after - before) / Double(max(open, 1))
        LoadResult(scenario: "idle", target: target.label, connections: open, rss_before_kib: before, rss_after_kib: after,
               kib_per_connection: perConnection)
            .emit(human: String(format: "%d idle streams: VmRSS %d → %d KiB, %.1f KiB per connection", open, before, after, perConnection))
    }
}

/// Starts the connections, lets them run for `duration` seconds, stops them, closes them
/// and shuts the event loops down. Returns what `stop` gathered and the seconds measured.
func measure<Stats: Sendable>(
    for duration: Double, group: MultiThreadedEventLoopGroup,
    start: () async throws -> Void, stop: () async throws -> [Stats], close: () async -> Void
) async throws -> (stats: [Stats], elapsed: Double) {
    let started = nowNanoseconds()
    try await start()
    try await Task.sleep(for: .seconds(duration))
    let stats = try await stop()
    let elapsed = Double(nowNanoseconds() - started) / 1e9
    await close()
    try await group.shutdownGracefully()
    return (stats, elapsed)
}

/// The sum of `histograms`.
func merged(_ histograms: [Histogram<UInt64>]) -> Histogram<UInt64> {
    var sum = makeLatencyHistogram()
    for histogram in histograms { sum.add(histogram) }
    return sum
}
