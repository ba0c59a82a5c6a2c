/// The OpenAPI 3.1 description of the HTTP API, served at `GET /openapi.json`.
///
/// Kept beside the router it describes; the end-to-end suite validates it with
/// openapi-spec-validator and checks that every path it lists answers as it says.
enum OpenAPIDocument {
    /// `openapi.json` beside this file, shipped in SpinServer's resource bundle and read
    /// once. Written by hand, not generated from the route table.
    static let json: String = BundledResource.text("openapi.json")
}
