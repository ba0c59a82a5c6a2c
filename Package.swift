// swift-tools-version:6.1
import PackageDescription

/// The Spin server package, for Linux (SpinNet calls Glibc). docs/ARCHITECTURE.md draws the
/// modules and how one event travels through them. Dependencies only point down:
/// - leaves: `SpinConcurrency` (the lock and the end-of-turn hook), `SpinJSON` (JSON: one value tree, one scanner, one writer),
///   `SpinWire` (pure HTTP and WebSocket codecs), `SpinStorage` (journals and snapshots);
/// - `SpinNet` (sockets) → SpinConcurrency; `SpinCore` (the loop library) → SpinConcurrency, SpinJSON;
/// - `SpinExamples`, `SpinTesting`, `SpinCombine` → SpinCore; `SpinMachines` → SpinCore, SpinJSON;
/// - `SpinServer` → all of the above but the examples; `SpinClient` → SpinWire, SpinNet, SpinCore, SpinJSON, SpinConcurrency;
/// - `spin-server` → SpinServer, SpinExamples, SpinMachines, SpinCore, SpinStorage (the example's session table).
let package = Package(
    name: "spin-server",
    products: [
        .library(name: "SpinCore", targets: ["SpinCore"]),
        .library(name: "SpinServer", targets: ["SpinServer"]),
        .library(name: "SpinTesting", targets: ["SpinTesting"]),
        .library(name: "SpinClient", targets: ["SpinClient"]),
        .library(name: "SpinCombine", targets: ["SpinCombine"]),
        // The example Spins (counter, levels, auth-routing), for the docs' snippets and
        // clients that speak to spin-server's default Spins with their types.
        .library(name: "SpinExamples", targets: ["SpinExamples"]),
        .executable(name: "spin-server", targets: ["spin-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Metrics (swift-metrics, rendered by swift-prometheus on /metrics) and tracing
        // spans (a no-op unless the process bootstraps a tracer).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // LoopServer is a `Service`: run in a `ServiceGroup`, shut down gracefully on signals.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Bearer JWT verification (signatures through swift-crypto): HS256, RS256, ES256, EdDSA.
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        // Test-only: property-based tests of the example reducers (random and extreme events).
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // SpinCombine: Combine's API on Linux, for feedbacks written as publishers.
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        // Documentation only: `swift package generate-documentation` builds the DocC
        // catalogs (CI builds them with warnings as errors, see .ci/run). Links into no target.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // System-library shims: C targets so that function-like macros of zlib and
        // OpenSSL (deflateInit2, SSL_CTX_set_min_proto_version, ...) get real functions.
        .target(name: "CZlib", linkerSettings: [.linkedLibrary("z")]),
        .target(name: "COpenSSL", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // libpq, PostgreSQL's client library (Debian libpq-dev), for the postgres storage backend.
        .target(name: "CPostgres", linkerSettings: [.linkedLibrary("pq")]),
        // SQLite (Debian libsqlite3-dev), where the file backend keeps the Spins made at run time.
        .target(name: "CSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
        // epoll, eventfd, thread names and CPU affinity (Linux), for SpinNet's event loops;
        // the futex under SpinConcurrency's lock.
        .target(name: "CLinux"),

        // Leaves every other module may use. SpinConcurrency: `Protected`, the package's one
        // lock (a futex word on Linux), and `EndOfTurn`, the hook by which an event loop's
        // thread offers work a place at the end of its turn (SpinNet installs it, SpinCore
        // and the journal use it). SpinJSON: JSON as the server reads and writes it (a value tree
        // with members in order, its parser, writer and validator, JSON Pointer and Patch).
        .target(name: "SpinConcurrency", dependencies: [.target(name: "CLinux", condition: .when(platforms: [.linux]))]),
        .target(name: "SpinJSON"),

        .target(name: "SpinCore", dependencies: ["SpinConcurrency", "SpinJSON"]),
        .target(name: "SpinWire", dependencies: ["CZlib", "COpenSSL"], linkerSettings: [.linkedLibrary("m")]),
        .target(name: "SpinNet", dependencies: ["COpenSSL", "CLinux", "SpinConcurrency"]),
        // Journals and snapshots behind one protocol (`SpinStore`): the file backend and
        // PostgreSQL (through libpq). Knows no HTTP and no other target of this package.
        .target(name: "SpinStorage", dependencies: ["CPostgres", "CSQLite"]),
        .target(name: "SpinServer", dependencies: [
            "SpinConcurrency", "SpinJSON", "SpinCore", "SpinWire", "SpinNet", "SpinStorage", "SpinMachines",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "JWTKit", package: "jwt-kit"),
            // SpinServerOptions: spin-server's command line, public for embedding programs.
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], resources: [
            // Served as they are (BundledResource); installed beside the binary in
            // spin-server_SpinServer.resources (see the Dockerfile).
            .copy("Dashboard/dashboard.html"),
        ]),
        .target(name: "SpinExamples", dependencies: ["SpinCore", "SpinConcurrency"]),
        // Declarative machines: the JSON machine format, its validator and interpreter
        // as a Spin. Pure: SpinCore and the leaves only.
        .target(name: "SpinMachines", dependencies: ["SpinCore", "SpinConcurrency", "SpinJSON"]),
        .target(name: "SpinTesting", dependencies: ["SpinCore", "SpinConcurrency"]),
        // Feedbacks whose effects are Combine publishers, a Spin as a publisher of its
        // states, and an ObservableObject over a loop (Spin.Swift's SpinCombine).
        .target(name: "SpinCombine", dependencies: ["SpinCore", "SpinConcurrency", .product(name: "OpenCombine", package: "OpenCombine")]),
        // A Swift client for the server: URLSession for requests, the state stream on
        // SpinWire's WebSocket codec over SpinNet's blocking client socket.
        .target(name: "SpinClient", dependencies: ["SpinWire", "SpinNet", "SpinCore", "SpinConcurrency", "SpinJSON"]),
        .executableTarget(name: "spin-server", dependencies: [
            "SpinServer", "SpinExamples", "SpinMachines", "SpinCore", "SpinStorage",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        // Benchmarks: release-mode executables (`swift run -c release <name>`), each
        // measuring our code beside a peer in the same run. Not timed tests.
        .executableTarget(name: "spin-core-benchmark", dependencies: ["SpinCore"],
                          path: "Benchmarks/SpinCoreBenchmark"),
        .executableTarget(name: "spin-seeds-benchmark", dependencies: ["SpinCore", "SpinMachines"],
                          path: "Benchmarks/SpinSeedsBenchmark"),
        .executableTarget(name: "spin-seeds-callgrind", dependencies: ["SpinCore", "SpinMachines"],
                          path: "Benchmarks/SpinSeedsCallgrind"),
        .executableTarget(name: "spin-http-benchmark", dependencies: ["SpinWire"],
                          path: "Benchmarks/SpinHTTPBenchmark"),
        .executableTarget(name: "spin-websocket-benchmark", dependencies: ["SpinWire", "CZlib"],
                          path: "Benchmarks/SpinWebSocketBenchmark"),
        .executableTarget(name: "spin-net-benchmark", dependencies: ["SpinNet"],
                          path: "Benchmarks/SpinNetBenchmark"),
        .executableTarget(name: "spin-jwt-benchmark", dependencies: [
            "SpinServer", .product(name: "JWTKit", package: "jwt-kit"),
        ], path: "Benchmarks/SpinJWTBenchmark"),

        .testTarget(name: "SpinConcurrencyTests", dependencies: ["SpinConcurrency"]),
        .testTarget(name: "SpinJSONTests", dependencies: ["SpinJSON", "SpinTesting"]),
        .testTarget(name: "SpinCoreTests", dependencies: ["SpinCore", "SpinConcurrency", "SpinTesting"]),
        .testTarget(name: "SpinWireTests", dependencies: ["SpinWire", "SpinTesting"], exclude: ["Fixtures"]),
        .testTarget(name: "SpinNetTests", dependencies: ["SpinNet", "COpenSSL", "SpinConcurrency", "SpinTesting"]),
        .testTarget(name: "SpinStorageTests", dependencies: ["SpinStorage"]),
        // What spin-server itself holds (the example session's table in PostgreSQL), through
        // the executable's module (SwiftPM links an executable's code into its tests).
        .testTarget(name: "spin-serverTests", dependencies: ["spin-server", "SpinStorage"]),
        .testTarget(name: "SpinServerTests", dependencies: [
            "SpinServer", "SpinExamples", "SpinStorage", "SpinCore", "SpinWire", "SpinTesting", "SpinMachines",
            "SpinConcurrency", "SpinJSON",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "JWTKit", package: "jwt-kit"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .testTarget(name: "SpinExamplesTests", dependencies: [
            "SpinExamples", "SpinTesting", "SpinJSON", "SpinCore", "SpinConcurrency",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "SpinMachinesTests", dependencies: ["SpinMachines", "SpinTesting", "SpinCore", "SpinConcurrency", "SpinJSON"]),
        .testTarget(name: "SpinTestingTests", dependencies: ["SpinTesting", "SpinCore"]),
        .testTarget(name: "SpinCombineTests", dependencies: [
            "SpinCombine", "SpinCore", "SpinConcurrency", .product(name: "OpenCombine", package: "OpenCombine"),
        ]),
        .testTarget(name: "SpinClientTests", dependencies: [
            "SpinClient", "SpinServer", "SpinExamples", "SpinCore", .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
