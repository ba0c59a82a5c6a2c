// swift-tools-version:6.1
import PackageDescription

/// The benchmark harness: a separate package, so that the server never depends on what
/// only the benchmarks need (Hummingbird, HdrHistogram, SwiftNIO). See `Benchmarks/run`
/// and `BENCHMARKS.md` at the repository root.
///
/// - `hummingbird-peer`: the same minimal API as spin-server for one counter Spin, written
///   the way a Hummingbird 2 user would write it (the peer of every end-to-end figure).
/// - `spin-load`: the load generator (HTTP POST, events over WebSocket, fan-out, idle
///   connections), with HdrHistogram latencies and a SwiftNIO WebSocket client.
///
/// The root package's micro-benchmark targets (`SpinCoreBenchmark`, ...) live in
/// folders beside `Sources/` here, but belong to the root package: this package only
/// builds `Sources/`.
let package = Package(
    name: "spin-benchmarks",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "hummingbird-peer", targets: ["hummingbird-peer"]),
        .executable(name: "spin-load", targets: ["spin-load"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(name: "hummingbird-peer", dependencies: [
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "spin-load", dependencies: [
            .product(name: "Histogram", package: "hdrhistogram-swift"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
