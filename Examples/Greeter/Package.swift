// swift-tools-version:6.1
import PackageDescription

/// The smallest program that hosts a Spin of its own: its kind, spin-server's options,
/// logging and metrics bootstrapped before hosting, host and serve. See README.md.
let package = Package(
    name: "Greeter",
    dependencies: [
        // This repository, two levels up. A path dependency's identity is the last
        // component of its path (the checkout's directory name), so `name:` pins the
        // name the products below use: "spin-server", however the directory is called.
        .package(name: "spin-server", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(name: "greeter", dependencies: [
            .product(name: "SpinServer", package: "spin-server"),
            .product(name: "SpinCore", package: "spin-server"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
