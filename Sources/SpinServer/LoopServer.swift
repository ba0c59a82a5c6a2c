import Foundation
import Logging
import Prometheus
import SpinCore
import SpinNet
import SpinStorage
import SpinWire
import SpinJSON
import SpinConcurrency

/// The Spin server: hosts the Spins of a `SpinHost` over HTTP, WebSocket and SSE.
///
/// ```swift
/// let server = LoopServer(configuration: configuration, host: host, logger: logger)
/// let port = try server.start()      // starts every Spin, binds, serves
/// ...
/// await server.shutdown()            // stop accepting, close streams with 1001, finish requests
/// ```
///
/// Or as a swift-service-lifecycle `Service` in a `ServiceGroup`: `run()` (in
/// `LoopServer+Service.swift`).
public final class LoopServer: Sendable {
    public let configuration: SpinServerConfiguration
    public let host: SpinHost
    let logger: Logger
    let context: ServerContext
    /// The Spins' journal when `storage.persists`.
    private let journal: Journal?
    /// What the outside sees of each Spin: durable transitions, acknowledgements.
    private let feeds: SpinFeeds
    private let running = Protected<Running?>(nil)
    /// With the PostgreSQL backend the server is a node of a cluster (maybe of one):
    /// it serves the Spins whose leases it holds.
    private let clustered: Clustered?
    /// Verifies bearer JWTs when `jwt` is configured; `reloadTokenKeys()` re-reads its keys.
    let tokenVerifier: TokenVerifier?
    /// Delivers the Gear events of the hosted Spins: exactly once, output-gated.
    package let gearRouter: GearRouter
    /// Makes and deletes Spins while the server runs (`PUT`/`DELETE /v1/spins/{name}`).
    package let runtimeSpins: RuntimeSpins
    /// What every Spin's observation (`observe`) shares.
    private let observing: SpinObservation.Common

    private struct Clustered: Sendable {
        let fence: LeaseFence
        let store: any ClusterStore
        let coordinator = Protected<ClusterCoordinator?>(nil)
        let gearOutboxReader = Protected<GearOutboxReader?>(nil)
    }

    private struct Running {
        var port: Int
        var socketServer: SocketServer
        var subscriptions: [SpinSubscription]
    }

    /// - Parameter metricsRegistry: where the server keeps its metrics and what `GET /metrics`
    ///   renders; a fresh one by default. Pass the registry the process bootstrapped
    ///   swift-metrics with (`LoopServer.bootstrapMetricsSystem()`) so that your own
    ///   counters and timers are served beside the server's.
    public init(configuration: SpinServerConfiguration, host: SpinHost, logger: Logger,
                metricsRegistry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        BundledResource.load()
        self.configuration = configuration
        self.host = host
        self.logger = logger
        var limits = APIRouter.Limits()
        limits.inbox = configuration.limits.inbox
        let storage = configuration.storage
        let clustered = storage.persists && storage.backend == .postgres
            ? Clustered(fence: LeaseFence(node: configuration.cluster.node,
                                          partitions: SpinPartitions(count: configuration.cluster.partitions) { [factory = host.factory] name in
                                              factory?.groupKey(of: name)
                                          }),
                        store: Self.makeClusterStore(url: storage.url ?? ""))
            : nil
        self.clustered = clustered
        let journal = storage.persists
            ? Journal(store: Self.makeStore(storage, node: configuration.cluster.node, fence: clustered?.fence),
                      storage: storage, logger: logger)
            : nil
        self.journal = journal
        let mode: GearRouter.Mode = journal == nil ? .inMemory : clustered != nil ? .cluster : .journaled
        self.gearRouter = GearRouter(mode: mode, backlog: configuration.limits.gearBacklog, logger: logger,
                                     recordAlone: { spin, outputs in journal?.record(spin: spin, outbox: outputs) })
        let feeds = SpinFeeds(retain: storage.retainedTransitions, immediate: journal == nil)
        self.feeds = feeds
        let gearRouter = self.gearRouter
        let metrics = Metrics(registry: metricsRegistry)
        let runtimeSpins = RuntimeSpins(host: host, feeds: feeds, journal: journal, gears: gearRouter, metrics: metrics,
                                        maxSpins: configuration.limits.maxSpins,
                                        idleSeconds: configuration.limits.idleSpinSeconds, logger: logger)
        self.runtimeSpins = runtimeSpins
        let hosts = HostPolicy(listenHost: configuration.host, allowedHosts: configuration.allowedHosts,
                               tokensConfigured: configuration.authenticates)
        let tokenVerifier = configuration.jwt.map { Self.makeTokenVerifier($0, logger: logger) }
        self.tokenVerifier = tokenVerifier
        let router = APIRouter(host: host, access: AccessControl(tokens: configuration.tokens, rules: configuration.accessRules,
                                                                         verifier: tokenVerifier),
                               hosts: hosts,
                               origins: OriginPolicy(allowed: configuration.allowedOrigins),
                               metrics: metrics, limits: limits, feeds: feeds,
                               echoEndpoint: configuration.testing.echoEndpoint,
                               cluster: ClusterNode(node: configuration.cluster.node,
                                                    advertise: configuration.advertiseURL(port: configuration.port),
                                                    moveWait: .seconds(configuration.cluster.leaseSeconds)),
                               gears: gearRouter, runtimeSpins: runtimeSpins,
                               history: SpinHistory(store: storage.history.archives ? journal?.store : nil,
                                                    segmentEvents: storage.snapshotEvery))
        self.context = ServerContext(configuration: configuration, router: router, logger: logger)
        self.observing = SpinObservation.Common(host: host, router: gearRouter, metrics: context.metrics,
                                                markers: journal.map { SuspensionMarker(store: $0.store) },
                                                logger: logger, maxState: configuration.limits.maxStateBytes)
    }

    /// The JWT verifier. Loading checked the keys already; if a file changed since and no
    /// longer loads, the verifier refuses every JWT (authentication stays on) until a
    /// reload succeeds.
    private static func makeTokenVerifier(_ jwt: JWTConfiguration, logger: Logger) -> TokenVerifier {
        do {
            return try TokenVerifier(jwt, logger: logger)
        } catch {
            logger.error("JWT keys could not be loaded, every JWT is refused until they are (SIGHUP reloads): \(error)")
            return TokenVerifier(failedToLoad: jwt, logger: logger)
        }
    }

    /// Re-reads the JWT key files and the JWKS file (what SIGHUP does while `run()` runs):
    /// nil when the new keys are in use or no JWT is configured, else why the keys in use
    /// were kept.
    @discardableResult
    public func reloadTokenKeys() -> ConfigurationError? {
        tokenVerifier?.reload()
    }

    /// The store `storage.backend` names. PostgreSQL is shared by the nodes of a cluster:
    /// one process per node name, appends fenced by the node's leases.
    static func makeStore(_ storage: SpinServerConfiguration.Storage, node: String,
                          fence: LeaseFence?) -> any SpinStore {
        switch storage.backend {
        // `always` and `batch` sync the configured Spins' journals through one log.
        case .file: FileSpinStore(directory: storage.directory, sharesSyncs: storage.fsync != .none)
        case .postgres: PostgresSpinStore(url: storage.url ?? "", ownership: .shared(node: node), fence: fence)
        }
    }

    /// The leases, heartbeats and Gear outbox of a cluster on PostgreSQL.
    static func makeClusterStore(url: String) -> any ClusterStore {
        PostgresClusterStore(url: url)
    }

    /// SpinNet's per-connection limits from ours. The pending output a connection may hold
    /// takes at least two of the largest WebSocket messages (the echo of one a client may
    /// send, and one more behind it), so a larger `maxWebSocketMessageBytes` does not turn
    /// into closed connections (Autobahn 9.*: 16 MiB messages). The request cycle's
    /// timeouts are `HTTPConnectionLimits`, armed by each connection's handler.
    static func connectionLimits(_ limits: SpinServerConfiguration.Limits) -> ConnectionLimits {
        // A state message holds a state (at most maxStateBytes) and an event (at most a
        // body): two of the largest fit too.
        let cap = Int.max / 4
        let message = max(limits.maxWebSocketMessageBytes, min(limits.maxStateBytes, cap) + min(limits.maxBodyBytes, cap))
        return ConnectionLimits(maxPendingOutput: max(4 << 20, 2 * min(message, cap) + (64 << 10)))
    }

    /// Recovers every hosted Spin from storage (when `storage.persists`), starts them,
    /// binds the listener and serves. Returns the bound port (the configured one, or the
    /// one picked for port 0). Throws when stored state cannot be recovered, the address
    /// cannot be bound (in use, not local) or the TLS files cannot be used; the error's
    /// description says which.
    public func start() throws -> Int {
        let limits = configuration.limits
        let connectionLimits = Self.connectionLimits(limits)
        let budget = SpinNet.ServerConfiguration.coreBudget()
        let netConfiguration = SpinNet.ServerConfiguration(
            host: configuration.host, port: configuration.port, maxConnections: limits.maxConnections,
            eventLoopCount: budget.cores, limits: connectionLimits)
        let tls = configuration.tls.map {
            TLSConfiguration(certificateChainPath: $0.certificate, privateKeyPath: $0.key)
        }
        let context = self.context
        let limitReporter = ConnectionLimitReporter(metrics: context.metrics, logger: logger,
                                                    maxConnections: limits.maxConnections)
        let socketServer = SocketServer(
            configuration: netConfiguration, tls: tls,
            onConnectionLimit: { limitReporter.limitReached(open: $0) }
        ) { connection in
            HTTPConnectionHandler(connection: connection, context: context)
        }
        guard running.withLock({ $0 == nil }) else { throw LoopServerError.alreadyStarted }
        let limitNote = budget.limit.map { "; a control group limits its CPU time to \(($0.cores * 100).rounded() / 100) CPUs, \($0.file)" } ?? ""
        logger.info("\(budget.cores) event loop(s): \(budget.allowed) CPU(s) allowed\(limitNote)")
        if let clustered, let journal {
            return try startNode(clustered, journal: journal, socketServer: socketServer)
        }
        var spins = host.spins
        let markers = observing.markers
        var suspended: [(spin: any HostedSpin, reason: String)] = []
        var recoveredGears: [String: Journal.RecoveredGears] = [:]
        var made: [String: MadeSpin] = [:]
        gearRouter.install(host.gears)
        if let journal, let markers {
            do {
                try journal.open()
                try keepDefinitions(journal)
                made = try hostMadeSpins(journal)
                spins = host.spins.filter { !($0 is SleepingSpin) }
                let outcome = try journal.recover(spins.map { ($0, feeds.feed($0.name)) })
                recoveredGears = outcome.gears
                for (name, sequence) in outcome.sequences.sorted(by: { $0.key < $1.key }) where sequence > 0 {
                    logger.info("recovered \(name) at sequence \(sequence)")
                }
                // `storage.onCorruption: "isolate"`: those Spins are hosted without a loop.
                for (name, problem) in outcome.unrecoverable { host.isolate(named: name, problem) }
                for spin in spins where outcome.unrecoverable[spin.name] == nil {
                    if let reason = try markers.read(spin: spin.name) { suspended.append((spin, reason)) }
                }
            } catch {
                journal.abandon()
                throw LoopServerError.cannotRecover(underlying: error)
            }
        }
        // The loops are made here, from what was recovered, with the runaway guard (the
        // Spins hosted asleep have none until they wake).
        spins = host.spins.filter { !($0 is SleepingSpin) }
        host.prepare(feedbackBudget: limits.feedbackBudget)
        if journal == nil {
            // In memory: every start is a new history.
            let epoch = Journal.makeEpoch()
            for spin in spins {
                let (sequence, state) = spin.snapshot()
                feeds.feed(spin.name).begin(sequence: sequence, state: state, history: [], epoch: epoch)
            }
        }
        // Gear delivery: every catching Spin from what it consumed, then every outbox
        // recovery found (what a Spin has not consumed is delivered again).
        var consumptions: [String: GearConsumption] = [:]
        for spin in spins where spin.unrecoverable == nil {
            let recovered = recoveredGears[spin.name]
            let consumed = (recovered?.consumed ?? [:]).merging(made[spin.name]?.joined ?? [:]) { max($0, $1) }
            // Its suspensions reach the router through its observation (`observe`).
            consumptions[spin.name] = gearRouter.register(spin, consumed: consumed, durable: spin.snapshot().sequence,
                                                          watchingSuspensions: false)
        }
        for (name, recovered) in recoveredGears { gearRouter.seed(name, outbox: recovered.outbox) }
        // Observed from the first event, before the Spins start; a Spin made at run time's
        // observations end with its loop (`RuntimeSpins.adopt`).
        var subscriptions: [SpinSubscription] = []
        for spin in spins {
            let base = made[spin.name]?.outboxBase ?? 0
            let terms = observe(spin, feed: feeds.feed(spin.name), journal: journal,
                                consumption: consumptions[spin.name],
                                outboxPosition: recoveredGears[spin.name]?.outboxPosition ?? base, outboxBase: base)
            if let record = made[spin.name] {
                runtimeSpins.adopt(spin, record)
            } else {
                subscriptions += terms
            }
        }
        if let journal {
            let host = self.host
            let feeds = self.feeds
            let router = gearRouter
            let failing = startJournaling(journal)
            // A storage that takes no writes at start-up: the Spins wait before running.
            for name in failing {
                host.spin(named: name)?.hold { Self.rollBack(feeds.feed(name), name, router) } then: {}
            }
        }
        // A Spin suspended when the server stopped stays so: no runaway starts again.
        for (spin, reason) in suspended { spin.suspend(reason: reason) }
        host.start(feedbackBudget: limits.feedbackBudget)
        let address: SocketAddress
        do {
            address = try socketServer.start()
        } catch {
            for subscription in subscriptions { subscription.cancel() }
            runtimeSpins.stop()
            host.stop()
            try? journal?.close()
            throw LoopServerError.cannotListen(host: configuration.host, port: configuration.port, underlying: error)
        }
        context.router.cluster.bind(advertise: configuration.advertiseURL(port: address.port))
        runtimeSpins.serve(bringUp: { [self] rising in bringUp(rising) })
        running.withLock { $0 = Running(port: address.port, socketServer: socketServer, subscriptions: subscriptions) }
        return address.port
    }

    /// The Spins made at run time that the store holds and a start needs, hosted (before
    /// recovery) with what their kinds make: those that do not rest, and every Spin of a
    /// kind whose Spins share a Gear; then, asleep, the resting ones on their Gears. The
    /// other resting Spins stay on disk (however many: a start does not read them) until
    /// something asks for them (`RuntimeSpins`). Refuses a Spin whose kind the config no
    /// longer has, or whose name the config now lists, naming the way forward.
    private func hostMadeSpins(_ journal: Journal) throws -> [String: MadeSpin] {
        let made = try journal.madeSpins(including: host.factory?.sharingKinds ?? [])
        guard !made.isEmpty else {
            try runtimeSpins.hostPeers(of: host.spins.map(\.name))
            return [:]
        }
        let factory = host.factory
        var resting: [(name: String, record: MadeSpin)] = []
        for name in made.keys.sorted() {
            guard let record = made[name] else { continue }
            let configured = factory.map { $0.configured.contains(name) } ?? (host.spin(named: name) != nil)
            if configured {
                throw RecoveryError(spin: name, problem: "Spin \(name) was made at run time (kind \(record.kind)) and the config's spins now list it too: remove it from spins, or start the previous config and DELETE /v1/spins/\(name) first", underlying: nil)
            }
            guard let factory, let kind = factory.kind(named: record.kind) else {
                let count = made.values.filter { $0.kind == record.kind }.count
                throw RecoveryError(spin: name, problem: "\(count) Spin(s) of kind \(record.kind) were made at run time (\(name) among them) and the config has no kind \(record.kind) now: add it back to kinds (then DELETE /v1/spins/{name} the ones to drop)", underlying: nil)
            }
            if record.resting != nil {
                // Asleep with nothing of its own to deliver: hosted asleep (below), its
                // journal not read until something wakes it (`RuntimeSpins.wake`).
                resting.append((name, record))
                continue
            }
            let spin: SpinFactory.Made
            do {
                spin = try factory.make(name, of: kind)
            } catch {
                throw RecoveryError(spin: name, problem: "Spin \(name) of kind \(record.kind) cannot be made with the kind as configured now: \(error.message)", underlying: nil)
            }
            runtimeSpins.attach(spin)
            try host.add(spin.spin)
        }
        do {
            try runtimeSpins.hostAsleep(atStart: resting)
        } catch {
            throw RecoveryError(spin: nil, problem: "a Spin made at run time cannot be made with its kind as configured now: \(error.message)", underlying: nil)
        }
        try runtimeSpins.hostPeers(of: host.spins.map(\.name))
        journal.setOutboxFloors(made.filter { $0.value.resting == nil }.mapValues(\.outboxBase))
        logger.info("\(made.count) Spin(s) made at run time read at start (\(resting.count) of them asleep); the others rest on disk until something asks for them")
        return made
    }

    /// Spins made or woken now (`RuntimeSpins`): their storage read (all in one piece of
    /// the journal's work), then each registered with the Gear router where it joins its
    /// Gears, observed and started. Returns, for each, whether it runs or why it could not
    /// be brought up.
    private func bringUp(_ rising: [RuntimeSpins.Rising]) -> [Result<Void, any Error>] {
        let feeds = rising.map { entry in
            entry.keepFeed ? self.feeds.continuing(entry.spin.name)
                : self.feeds.replace(entry.spin.name, ending: .deleted(spin: entry.spin.name))
        }
        let begun = journal?.begin(zip(rising, feeds).map { ($0.spin, $1, $0.made.outboxBase) })
        return rising.indices.map { index in
            Result {
                var sequence: UInt64 = 0
                var recovered: Journal.RecoveredGears?
                switch begun?[index] {
                case .begun(let start, let gears)?: (sequence, recovered) = (start, gears)
                case .failed(let message)?: throw BringUpFailure(description: message)
                case .unrecoverable(let problem)?: throw RuntimeSpins.Unrecoverable(problem: problem)
                case nil: break
                }
                return bringUp(rising[index].spin, rising[index].made, feed: feeds[index], sequence: sequence, recovered: recovered)
            }
        }
    }

    /// Why a Spin's storage could not be read as it was brought up (the store's message).
    private struct BringUpFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// `bringUp` of one Spin whose storage was read: `sequence` and `recovered`. Its
    /// observations end when its loop stops (`RuntimeSpins.adopt`): their handles are not kept.
    private func bringUp(_ spin: any HostedSpin, _ made: MadeSpin, feed: SpinFeed, sequence: UInt64,
                         recovered: Journal.RecoveredGears?) {
        spin.prepare(feedbackBudget: configuration.limits.feedbackBudget)
        if journal == nil {
            let (start, state) = spin.snapshot()
            feed.begin(sequence: start, state: state, history: [], epoch: Journal.makeEpoch())
            gearRouter.startOutbox(spin.name, at: made.outboxBase)
        }
        let consumed = (recovered?.consumed ?? [:]).merging(made.joined) { max($0, $1) }
        let consumption = gearRouter.register(spin, consumed: consumed, durable: sequence, watchingSuspensions: false)
        _ = observe(spin, feed: feed, journal: journal, consumption: consumption,
                    outboxPosition: recovered?.outboxPosition ?? made.outboxBase, outboxBase: made.outboxBase)
        if let reason = try? observing.markers?.read(spin: spin.name) { spin.suspend(reason: reason) }
        spin.start()
    }

    /// Sees every event `spin` applies, before it starts: the feed first (it must hold a
    /// transition before the journal can call it durable), then the journal and the
    /// metrics; and its suspensions (logged, counted, stored). A transition that does not
    /// encode suspends the Spin (see `HostedSpin.observe`): it is held at its last durable
    /// state (the journal treats it as a failure of that Spin's storage, without waiting
    /// for the storage to work again: the Spin stays suspended until `POST .../resume`),
    /// and every acknowledgement still waiting gets 500 `encoding_failed`.
    ///
    /// A Spin on a Gear is observed twice per event: first (its feed, with what it
    /// consumed of other Spins' outboxes: `consumption`), then once its feedbacks were
    /// given the new state (its journal, with the Gear events that state propagated: its
    /// outbox, `GearRouter.sender`).
    private func observe(_ spin: any HostedSpin, feed: SpinFeed, journal: Journal?,
                         consumption: GearConsumption?,
                         outboxPosition: UInt64, outboxBase: UInt64 = 0) -> [SpinSubscription] {
        // A Spin without history sends what its initial state propagates (until it
        // suspends: a state given again after that is not new).
        let start = spin.snapshot().sequence
        let capture = gearRouter.sender(spin.name, initial: start == 0 && outboxPosition == outboxBase, recorded: start,
                                        faulted: { [weak spin] in spin?.isFaulted ?? true },
                                        refuse: { [weak spin] reason in spin?.refuse(unencodable: reason) })
        // Every handler below captures only this one object.
        let observation = SpinObservation(spin: spin, feed: feed, journal: journal, consumption: consumption,
                                          capture: capture, common: observing)
        let suspensions = spin.onSuspensionChange { observation.suspensionChanged($0) }
        guard capture != nil else {
            return [spin.observe({ observation.applied($0) }, unencodable: { observation.unencodable($0) }), suspensions]
        }
        return [
            spin.observe({ observation.appliedBeforeFeedbacks($0) }, afterFeedbacks: { observation.afterFeedbacks() },
                         unencodable: { observation.unencodable($0) }),
            suspensions,
        ]
    }

    /// The Spin goes back to what its feed holds as durable (its storage failed): what it
    /// consumed of Gears since is delivered again. On the Spin's executor.
    static func rollBack(_ feed: SpinFeed, _ name: String,
                                     _ router: GearRouter) -> (sequence: UInt64, state: JSONValue, dropped: Int) {
        let back = feed.rollback()
        router.rolledBack(name, to: back.sequence)
        return back
    }

    /// Starts journaling: a Spin whose writes fail is rolled back to what is durable and
    /// held, then the journal may probe the storage; once it works the Spin goes on.
    /// Returns the Spins whose storage fails already (`Journal.start`).
    private func startJournaling(_ journal: Journal) -> [String] {
        let host = self.host
        let feeds = self.feeds
        let router = gearRouter
        return journal.start(onFailure: { name in
            guard let spin = host.spin(named: name) else { return }
            let feed = feeds.feed(name)
            spin.hold { Self.rollBack(feed, name, router) } then: {
                feed.rolledBack()
                journal.restored(spin: name)
            }
        }, onRecovery: { name in
            host.spin(named: name)?.release()
        }, gears: router)
    }

    /// Starts a cluster node: opens the database, starts the lease loop, and from then on
    /// recovers and runs each Spin when its lease comes to this node, stops it when the
    /// lease goes (`ServedSpins`). With a configured port the first tick runs before
    /// the listener opens; with port 0 the listener is bound first (its port is part of the
    /// advertised URL), and until the first tick has run requests about a Spin wait for
    /// it. `/readyz` answers 503 until placement has settled once.
    private func startNode(_ clustered: Clustered, journal: Journal, socketServer: SocketServer) throws -> Int {
        do {
            try journal.open()
            try clustered.store.open()
            try keepDefinitions(journal)
            try clustered.store.agree(partitions: configuration.cluster.partitions,
                                      liveSeconds: Double(configuration.cluster.leaseSeconds))
        } catch let mismatch as PartitionCountMismatch {
            journal.abandon()
            clustered.store.close()
            throw LoopServerError.cannotJoinCluster(underlying: mismatch)
        } catch {
            journal.abandon()
            clustered.store.close()
            throw LoopServerError.cannotRecover(underlying: error)
        }
        let host = self.host
        // No Spin runs yet: those the node will serve start journaled, failing or not.
        _ = startJournaling(journal)
        let cluster = context.router.cluster
        // No Spin is served here before the lease loop says so: requests wait for it.
        cluster.stand(.joining)
        cluster.route { _, _ in .pending }
        let node = configuration.cluster.node
        gearRouter.install(host.gears)
        let reader = GearOutboxReader(store: clustered.store, router: gearRouter, logger: logger)
        do {
            try reader.start()
        } catch {
            try? journal.close()
            clustered.store.close()
            throw LoopServerError.cannotReadGearOutbox(underlying: error)
        }
        clustered.gearOutboxReader.withLock { $0 = reader }
        // Spins made at run time: only in the partitions this node serves.
        let runtimeSpins = self.runtimeSpins
        let partitions = clustered.fence.partitions
        runtimeSpins.serve(bringUp: { [self] rising in bringUp(rising) },
                           cluster: .init(partition: { partitions.partition(of: $0) }))
        let served = ServedSpins(host: host, feeds: feeds, journal: journal, fence: clustered.fence, gears: gearRouter,
                                 feedbackBudget: configuration.limits.feedbackBudget, logger: logger,
                                 made: runtimeSpins) { [self] hosted, feed, served in
            observe(hosted, feed: feed, journal: journal, consumption: served.consumption,
                    outboxPosition: served.outboxPosition)
        }
        let startLeases = { [self] (advertise: String) in
            let coordinator = ClusterCoordinator(
                node: node, advertise: advertise, leaseSeconds: configuration.cluster.leaseSeconds,
                partitions: clustered.fence.partitions, spins: host.spins.map(\.name),
                definitions: Dictionary(hostedDefinitions.map { ($0.storedName, $0.version) }, uniquingKeysWith: max),
                store: clustered.store,
                serving: served.serving,
                logger: logger, onStatus: { cluster.publish($0) }, onProblem: { cluster.report(problem: $0) },
                onSettled: { cluster.stand(.member) })
            clustered.coordinator.withLock { $0 = coordinator }
            cluster.route { spin, hops in coordinator.routing(of: spin, hops: hops) }
            // The first tick runs now: this node holds and serves its share on return.
            coordinator.start(advertise: advertise)
        }
        // With a known port the first tick runs before the listener opens, so that the
        // first requests find this node's Spins recovered (as a single server's do); with
        // port 0 the advertised URL needs the bound port first.
        if configuration.port != 0 { startLeases(configuration.advertiseURL(port: configuration.port)) }
        let address: SocketAddress
        do {
            address = try socketServer.start()
        } catch {
            clustered.coordinator.withLock { $0 }?.stop()
            reader.stop()
            try? journal.close()
            clustered.store.close()
            throw LoopServerError.cannotListen(host: configuration.host, port: configuration.port, underlying: error)
        }
        let advertise = configuration.advertiseURL(port: address.port)
        cluster.bind(advertise: advertise)
        if configuration.port == 0 { startLeases(advertise) }
        host.startWithoutLoops()
        running.withLock { $0 = Running(port: address.port, socketServer: socketServer, subscriptions: []) }
        return address.port
    }

    /// Graceful shutdown: stops accepting, closes streams with 1001, lets the requests in
    /// flight finish, closes what is left after `shutdownGraceSeconds`, then stops every
    /// Spin. A cluster node first leaves the cluster: it hands every Spin over (the new
    /// owners serve them within moments) while it still takes requests, which wait for
    /// the move and are then sent on, and keeps listening until the other nodes have
    /// looked at the cluster since (`ClusterCoordinator.leave`), so that nobody is
    /// refused; `/readyz` says 503 from the start of it.
    ///
    /// - Returns: nil after a clean stop; the error when what the Spins applied could not
    ///   all be made durable (the storage failed): the state on disk is then the last
    ///   durable one, and `spin-server` exits 1.
    @discardableResult
    public func shutdown() async -> LoopServerError? {
        guard let running = running.withLock({ running -> Running? in
            defer { running = nil }
            return running
        }) else { return nil }
        if let clustered, let coordinator = clustered.coordinator.withLock({ $0 }) {
            context.router.cluster.stand(.leaving)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    coordinator.leave(timeout: coordinator.leaseDuration)
                    continuation.resume()
                }
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            running.socketServer.shutdown(deadline: .seconds(configuration.limits.shutdownGraceSeconds)) {
                continuation.resume()
            }
        }
        if let clustered {
            // Every Spin's lease goes back (its journal committed first), so the other
            // nodes take them at their next tick.
            clustered.coordinator.withLock { $0 }?.stop()
            clustered.gearOutboxReader.withLock { $0 }?.stop()
        }
        runtimeSpins.stop()
        host.stop()
        for subscription in running.subscriptions { subscription.cancel() }
        defer { clustered?.store.close() }
        do {
            try journal?.close()
            return nil
        } catch {
            return .cannotPersist(underlying: error)
        }
    }

    /// The port the server listens on (the one picked for port 0); nil before it starts
    /// and once it shuts down.
    public var port: Int? { running.withLock { $0?.port } }

    /// Open client connections now.
    public var openConnections: Int { context.metrics.openConnections }
}

