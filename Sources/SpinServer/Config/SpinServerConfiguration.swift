/// Everything a `LoopServer` is configured with, every default in one place.
///
/// Loading it from `Config/spin-server.json`, `SPIN_*` variables and flags is
/// `SpinServerConfiguration+Loading.swift`; tests build it directly (port 0).
public struct SpinServerConfiguration: Sendable, Equatable {
    /// Address to listen on. Loopback by default: exposing the server is a decision.
    public var host: String
    /// TCP port; 0 picks a free one (the server logs which).
    public var port: Int
    /// Host names (or addresses) clients may name in `Host` when no tokens are set,
    /// besides the listen address and loopback names (`HostPolicy`); `"*"` allows any.
    public var allowedHosts: [String]
    /// PEM certificate chain and key; both or neither. With them the server speaks TLS 1.2+.
    public var tls: TLSFiles?
    public var limits: Limits
    /// Bearer tokens; none (and no `jwt`) means no authentication (a warning is logged
    /// when the address is not loopback).
    public var tokens: [AccessToken]
    /// Grants for the identities whose subject matches a pattern (`auth.rules`).
    public var accessRules: [AccessRule]
    /// Bearer JWTs and the keys that verify them (`auth.jwt`); nil: no JWT is accepted.
    /// Static `tokens` keep working beside them.
    public var jwt: JWTConfiguration?
    /// Origins a browser may open streams from (`https://dash.example`); empty allows
    /// only same-origin pages (Origin host equal to the Host header) and non-browser
    /// clients (no Origin header).
    public var allowedOrigins: [String]
    public var storage: Storage
    public var log: Log
    /// The Spins to host, in order.
    public var spins: [SpinEntry]
    /// The templates of Spins made at run time (`PUT /v1/spins/{name}`, or an event for a
    /// name a kind with `create: onEvent` matches).
    public var kinds: [KindEntry]
    /// The Gears to host.
    public var gears: [GearEntry]
    public var testing: Testing
    /// This server as a node of a cluster (`cluster.*`).
    public var cluster: Cluster

    public init(host: String = "127.0.0.1", port: Int = 8080, allowedHosts: [String] = [], tls: TLSFiles? = nil,
                limits: Limits = Limits(), tokens: [AccessToken] = [], accessRules: [AccessRule] = [],
                allowedOrigins: [String] = [],
                storage: Storage = Storage(), log: Log = Log(), spins: [SpinEntry] = [], gears: [GearEntry] = [],
                testing: Testing = Testing(), cluster: Cluster = Cluster(), jwt: JWTConfiguration? = nil,
                kinds: [KindEntry] = []) {
        self.kinds = kinds
        self.host = host
        self.port = port
        self.allowedHosts = allowedHosts
        self.tls = tls
        self.limits = limits
        self.tokens = tokens
        self.accessRules = accessRules
        self.jwt = jwt
        self.allowedOrigins = allowedOrigins
        self.storage = storage
        self.log = log
        self.spins = spins
        self.gears = gears
        self.testing = testing
        self.cluster = cluster
    }

    public struct TLSFiles: Sendable, Equatable {
        public var certificate: String
        public var key: String

        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// Limits that keep one client from hurting others (docs/PROTOCOL.md, Security; docs/OPERATIONS.md, Keys).
    public struct Limits: Sendable, Equatable {
        /// Largest request body: 1 MiB holds thousands of events per batch.
        public var maxBodyBytes: Int
        /// Request line plus headers: 16 KiB, above what browsers and curl send.
        public var maxHeaderBytes: Int
        /// Open connections; at the limit new ones wait in the kernel's backlog until one
        /// closes (counted in `spin_connections_limited_total`).
        public var maxConnections: Int
        /// Events from clients waiting per Spin before POST answers 429 (the events of
        /// feedbacks and Gears are bounded by `feedbackBudget`).
        public var inbox: Int
        /// The runaway guard (docs/OPERATIONS.md, "Runaway loops"): events a Spin's feedbacks and Gears
        /// may produce in a row without an event from a client (and may have waiting);
        /// past it the Spin is suspended until `POST /v1/spins/{name}/resume`. 100000 is
        /// a fraction of a second to a few seconds of work and a few MB of events: far
        /// more than a settling loop needs, little enough to stop a runaway early.
        public var feedbackBudget: Int
        /// Largest WebSocket message a client may send (after decompression).
        public var maxWebSocketMessageBytes: Int
        /// Messages a stream keeps for a client that does not read before conflating.
        public var streamQueue: Int
        /// Seconds a stream may stay silent (streams are pinged well before).
        public var idleTimeoutSeconds: Int
        /// Seconds a client has to send a complete request head (slowloris): the first
        /// one from the accept, later ones from their first byte.
        public var headerTimeoutSeconds: Int
        /// Seconds between pings on an idle stream.
        public var pingIntervalSeconds: Int
        /// Seconds a graceful shutdown waits before closing what is left.
        public var shutdownGraceSeconds: Int
        /// Gear events of one sender kept for a catching Spin that has not consumed them
        /// (it is suspended, its storage fails, or it does not keep up): past it the oldest
        /// go, and that Spin is marked lagging (docs/OPERATIONS.md, "Gear delivery"). The
        /// sender is never held back for it.
        public var gearBacklog: Int
        /// Largest state a Spin may hold, as JSON: an event whose state would encode
        /// larger is refused (413 `state_too_large`) and the Spin goes back to its last
        /// durable state. 1 MiB keeps a state message (state and event) well inside what
        /// one connection may have pending, and a Spin's memory bounded.
        public var maxStateBytes: Int
        /// Spins a server hosts at most, configured and made at run time: past it
        /// `PUT /v1/spins/{name}` answers 409 `too_many_spins`.
        public var maxSpins: Int
        /// Seconds a Spin made at run time stays awake with no event, no Gear event in
        /// flight and no timer of its own to wait for; then it sleeps: its state is
        /// durable, its loop and memory released, and any request or Gear event wakes it.
        public var idleSpinSeconds: Int

        public init(maxBodyBytes: Int = 1 << 20, maxHeaderBytes: Int = 16 << 10, maxConnections: Int = 1024,
                    inbox: Int = 1024, feedbackBudget: Int = 100_000, maxWebSocketMessageBytes: Int = 1 << 20, streamQueue: Int = 64,
                    idleTimeoutSeconds: Int = 120, headerTimeoutSeconds: Int = 10, pingIntervalSeconds: Int = 30,
                    shutdownGraceSeconds: Int = 5, gearBacklog: Int = 10_000, maxStateBytes: Int = 1 << 20, maxSpins: Int = 1_000_000,
                    idleSpinSeconds: Int = 60) {
            self.maxSpins = maxSpins
            self.idleSpinSeconds = idleSpinSeconds
            self.gearBacklog = gearBacklog
            self.maxStateBytes = maxStateBytes
            self.maxBodyBytes = maxBodyBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.maxConnections = maxConnections
            self.inbox = inbox
            self.feedbackBudget = feedbackBudget
            self.maxWebSocketMessageBytes = maxWebSocketMessageBytes
            self.streamQueue = streamQueue
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.headerTimeoutSeconds = headerTimeoutSeconds
            self.pingIntervalSeconds = pingIntervalSeconds
            self.shutdownGraceSeconds = shutdownGraceSeconds
        }
    }

    /// Where Spins keep their journals and snapshots, and how hard acknowledgements wait
    /// for the disk.
    public struct Storage: Sendable, Equatable {
        public enum Fsync: String, Sendable, Equatable, CaseIterable {
            /// fsync before every acknowledgement.
            case always
            /// Group commit: fsync within a few milliseconds, acknowledge after it.
            case batch
            /// Leave it to the OS.
            case none
        }

        /// What recovery does with a journal that is corrupt (a bad record with data
        /// after it), as opposed to torn (an unfinished last write, always cut).
        public enum OnCorruption: String, Sendable, Equatable, CaseIterable {
            /// Refuse to start, naming the file and byte offset; change nothing on disk.
            case refuse
            /// Cut the journal at the bad record, losing every event after it (`--repair`).
            case truncate
            /// Start every other Spin; the one that cannot be recovered is reported
            /// `unrecoverable` (with the file, sequence and error) and refuses its events
            /// with 503 `spin_unrecoverable`, its storage left as it was.
            case isolate
        }

        /// Where journals and snapshots are kept.
        public enum Backend: String, Sendable, Equatable, CaseIterable {
            /// Files in `directory` (embedded, the default).
            case file
            /// A PostgreSQL database at `url`.
            case postgres
        }

        public var backend: Backend
        /// The storage directory of the `file` backend.
        public var directory: String
        /// The libpq connection string of the `postgres` backend
        /// (`postgresql://user:secret@host:5432/db`).
        public var url: String?
        public var fsync: Fsync
        /// Whether Spins are journaled in `directory` and recovered from it at start-up.
        /// False keeps state in memory only: the default for a server built in code (tests,
        /// embedding); the `spin-server` executable always persists.
        public var persists: Bool
        /// Events each Spin keeps behind its newest snapshot (on disk and in memory), so
        /// that a stream client resumes with `?since=N` without a gap. 10000 covers minutes
        /// of a busy Spin's history for a client that lost its connection, at a few MiB of
        /// memory per Spin for small states.
        public var retainEvents: Int
        /// What `retainEvents` (and `history`'s `{"events": K}`) may be.
        static let retainEventsRange = 0...10_000_000
        public var onCorruption: OnCorruption
        /// How much of each Spin's history `GET /v1/spins/{name}/history` and `?at=N` can
        /// read (`storage.history`).
        public var history: History
        /// With `history` `.days` or `.all`: the history is kept in segments of this many
        /// events, each starting from a stored state, so that any state of the history is
        /// one stored state plus at most this many replayed events (`storage.snapshotEvery`).
        public var snapshotEvery: Int

        /// The durable transitions each awake Spin keeps in memory (streams resume from
        /// them, history reads the newest from them): `retainEvents`, and at least a
        /// history segment's worth when segments are kept.
        public var retainedTransitions: Int { history.archives ? max(retainEvents, snapshotEvery) : retainEvents }

        /// How far back a Spin's history is kept (`storage.history`).
        public enum History: Sendable, Equatable {
            /// `{"events": K}`: the last `retainEvents` events (K), which every Spin keeps
            /// anyway for streams to resume from. Nothing more is stored.
            case events
            /// `{"days": D}`: every event of the last D days (and at least the last
            /// `retainEvents`), in segments beside the journal.
            case days(Int)
            /// `"all"`: every event since the Spin was made, in segments beside the journal.
            case all

            /// Whether older history is kept beside the journal, in segments.
            public var archives: Bool { self != .events }
        }

        public init(backend: Backend = .file, directory: String = "data", url: String? = nil, fsync: Fsync = .batch,
                    persists: Bool = false, retainEvents: Int = 10000, onCorruption: OnCorruption = .refuse,
                    history: History = .events, snapshotEvery: Int = 1000) {
            self.backend = backend
            self.directory = directory
            self.url = url
            self.fsync = fsync
            self.persists = persists
            self.retainEvents = retainEvents
            self.onCorruption = onCorruption
            self.history = history
            self.snapshotEvery = snapshotEvery
        }
    }

    public struct Log: Sendable, Equatable {
        public enum Format: String, Sendable, Equatable, CaseIterable { case text, json }

        /// trace, debug, info, notice, warning, error, critical.
        public var level: String
        public var format: Format

        public init(level: String = "info", format: Format = .text) {
            self.level = level
            self.format = format
        }
    }

    /// A hosted Spin: its name and what makes it (`kind`), plus the Gear it attaches to
    /// for the kinds that use one. A declarative machine (`{"name":..,"machine":"x.json"}`)
    /// has kind `machine` and its loaded definition; its Gears are named in its own file.
    public struct SpinEntry: Sendable, Equatable {
        public var name: String
        public var kind: String
        public var gear: String?
        public var machine: MachineSource?

        public init(name: String, kind: String, gear: String? = nil, machine: MachineSource? = nil) {
            self.name = name
            self.kind = kind
            self.gear = gear
            self.machine = machine
        }

        /// The Gears this Spin attaches to: its `gear`, or the Gears its machine declares.
        public var attachedGears: [String] {
            if let machine { return machine.definition.gears.keys.sorted() }
            return gear.map { [$0] } ?? []
        }
    }

    /// Routes that exist for conformance testing, off by default.
    public struct Testing: Sendable, Equatable {
        /// Mounts a WebSocket echo at `/v1/echo` (text back as text, binary as binary),
        /// with the codec, permessage-deflate and limits of the state streams, so that
        /// a fuzzing client (the Autobahn suite) can test them. Off: `/v1/echo` is 404.
        public var echoEndpoint: Bool

        public init(echoEndpoint: Bool = false) {
            self.echoEndpoint = echoEndpoint
        }
    }

    public struct GearEntry: Sendable, Equatable {
        public var name: String

        public init(name: String) { self.name = name }
    }
}
