import Foundation

/// Files SpinServer serves as they are, kept as files rather than Swift strings: the
/// dashboard (`Dashboard/dashboard.html`). (The OpenAPI document is built from the route
/// table, `OpenAPIDocument`.)
/// SwiftPM copies them into the target's resource bundle (`resources:` in Package.swift),
/// a directory `spin-server_SpinServer.resources` beside the built binary, which is where
/// `Bundle.module` looks first: an installed binary needs it beside it (the Dockerfile
/// copies it to /usr/local/bin).
enum BundledResource {
    /// The content of resource `name` as UTF-8 text. A missing resource is a broken
    /// install: the process stops, naming the bundle it looked in.
    static func text(_ name: String) -> String {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil),
              let data = try? Data(contentsOf: url) else {
            fatalError("resource \(name) is missing from \(Bundle.module.bundlePath): install the spin-server_SpinServer.resources directory beside the spin-server binary")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads every resource now, so that a broken install stops start-up and not the
    /// first request for the dashboard.
    static func load() {
        _ = Dashboard.html
    }
}
