// swift-tools-version:6.1
import PackageDescription

/// An application that embeds the Spin server: its own Spin kinds (a todo list with a
/// feedback, and stats fed over a Gear), hosted by its own config file. See README.md.
let package = Package(
    name: "TodoServer",
    dependencies: [
        // This repository, two levels up; named so that the products below resolve
        // whatever the checkout's directory is called.
        .package(name: "spin-server", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // The Spins and their registration: pure SpinCore plus the registry.
        .target(name: "TodoKinds", dependencies: [
            .product(name: "SpinCore", package: "spin-server"),
            .product(name: "SpinServer", package: "spin-server"),
        ]),
        // load -> registry.makeHost -> LoopServer -> ServiceGroup.run.
        .executableTarget(name: "TodoServer", dependencies: [
            "TodoKinds",
            .product(name: "SpinServer", package: "spin-server"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
