// swift-tools-version:6.1
import PackageDescription

/// An application that embeds the Spin server: its own Spin kinds (a todo list with a
/// feedback, and stats fed over a Gear), hosted by its own config file. See README.md.
let package = Package(
    name: "TodoServer",
    dependencies: [
        // This repository, two levels up. A path dependency's identity is the last
        // component of its path (the checkout's directory name), so `name:` pins the
        // name the products below use: "spin-server", however the directory is called.
        .package(name: "spin-server", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The Spins and their registration: pure SpinCore plus the registry.
        .target(name: "TodoKinds", dependencies: [
            .product(name: "SpinCore", package: "spin-server"),
            .product(name: "SpinServer", package: "spin-server"),
        ]),
        // spin-server's options -> SpinServerProgram: load, bootstrap logging and
        // metrics, host the kinds, serve until SIGTERM or SIGINT.
        .executableTarget(name: "TodoServer", dependencies: [
            "TodoKinds",
            .product(name: "SpinServer", package: "spin-server"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
