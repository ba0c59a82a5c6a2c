import Foundation
import SpinCore
import SpinWire

/// The OpenAPI 3.1 description of the HTTP API, served at `GET /openapi.json`.
///
/// Kept beside the router it describes; the end-to-end suite validates it with
/// openapi-spec-validator, checks that every path it lists answers as it says, and runs
/// schemathesis against it.
enum OpenAPIDocument {
    /// `openapi.json` beside this file, shipped in SpinServer's resource bundle and read
    /// once: the routes, written by hand, not generated from the route table.
    static let json: String = BundledResource.text("openapi.json")

    /// The document for a server hosting `spins`. Each path of one Spin
    /// (`/v1/spins/{name}...`) is written once per hosted Spin instead, its name in the
    /// path and its own schemas where the template has the shared ones: `Spin.<name>.Event`
    /// for events, `Spin.<name>.State` for the state (both added to `components.schemas`).
    /// So the document says exactly which events each Spin takes, and a client (or a
    /// fuzzer) reading it sends each Spin events of its own.
    static func render(spins: [any HostedSpin]) -> [UInt8] {
        guard !spins.isEmpty else { return Array(json.utf8) }
        var text = json
        var templates: [String] = []
        while let range = spinPathRange(in: text) {
            templates.append(String(text[range]))
            text.removeSubrange(range)
        }
        let paths = spins.map { spin in templates.map { instantiate($0, for: spin.name) }.joined() }.joined()
        insert(paths, after: #""paths": {"#, into: &text)
        let schemas = spins.map { spin in
            member("Spin.\(spin.name).Event", JSONValue(spin.schema.event.json))
                + member("Spin.\(spin.name).State", JSONValue(spin.schema.state.json))
        }.joined()
        insert(schemas, after: #""schemas": {"#, into: &text)
        return Array(text.utf8)
    }

    /// The document of `host`, rendered once per set of hosted Spins (they are fixed once
    /// the host starts) and then served from memory: `render` is not free, and anyone may
    /// ask for `/openapi.json` as often as they like.
    final class Cache: Sendable {
        private let rendered = Protected<(names: [String], bytes: [UInt8])?>(nil)

        init() {}

        func document(of host: SpinHost) -> [UInt8] {
            let spins = host.spins
            let names = spins.map(\.name)
            if let cached = rendered.withLock({ $0 }), cached.names == names { return cached.bytes }
            let bytes = OpenAPIDocument.render(spins: spins)
            rendered.withLock { $0 = (names, bytes) }
            return bytes
        }
    }

    /// Where a Spin's schemas are served (`GET /v1/spins/{name}` links it as `schema`).
    static func schemaPath(of name: String) -> String { "/v1/spins/\(name)/schema" }

    /// The template path member for one Spin: its name in the key, no `name` parameter,
    /// its schemas for the shared ones.
    private static func instantiate(_ template: String, for name: String) -> String {
        let spin = JSONValue.string(name).text.dropFirst().dropLast()   // JSON-escaped, unquoted
        func ref(_ schema: String) -> String { ##"{"$ref": "#/components/schemas/\##(schema)"}"## }
        func withState(_ base: String) -> String {
            #"{"allOf": [\#(ref(base)), {"properties": {"state": \#(ref("Spin.\(spin).State"))}}]}"#
        }
        return template
            .replacingOccurrences(of: #""/v1/spins/{name}"#, with: #""/v1/spins/\#(spin)"#)
            .replacingOccurrences(of: ##""parameters": [{"$ref": "#/components/parameters/SpinName"}],"##, with: "")
            .replacingOccurrences(of: ref("Event"), with: ref("Spin.\(spin).Event"))
            .replacingOccurrences(of: ref("SpinState"), with: withState("SpinState"))
            .replacingOccurrences(of: ref("Applied"), with: withState("Applied"))
    }

    /// The range of the first path member of one Spin (`"/v1/spins/{name}...": {..},` and
    /// the whitespace after it) in the document's text.
    private static func spinPathRange(in text: String) -> Range<String.Index>? {
        guard let key = text.range(of: #""/v1/spins/{name}"#), let open = text[key.upperBound...].firstIndex(of: "{") else {
            return nil
        }
        var depth = 0, inString = false, escaped = false
        var index = open
        while index < text.endIndex {
            let character = text[index]
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
            } else if character == "\"" {
                inString = true
            } else if character == "{" {
                depth += 1
            } else if character == "}" {
                depth -= 1
                if depth == 0 { break }
            }
            index = text.index(after: index)
        }
        var end = text.index(after: index)
        if end < text.endIndex, text[end] == "," { end = text.index(after: end) }
        while end < text.endIndex, text[end].isWhitespace { end = text.index(after: end) }
        return key.lowerBound..<end
    }

    private static func member(_ key: String, _ value: JSONValue) -> String {
        JSONValue.string(key).text + ":" + value.text + ","
    }

    /// Puts `members` (each ending with a comma) first in the object that `marker` opens
    /// (it occurs once in `json`).
    private static func insert(_ members: String, after marker: String, into text: inout String) {
        guard let range = text.range(of: marker) else { preconditionFailure("openapi.json lacks \(marker)") }
        text.insert(contentsOf: members, at: range.upperBound)
    }
}

extension JSONValue {
    /// The JSON of a schema (a non-finite number, which JSON cannot write, as null).
    init(_ json: JSONSchema.JSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .integer(let value): self = .number(String(value))
        case .double(let value): self = value.isFinite ? .number("\(value)") : .null
        case .string(let value): self = .string(value)
        case .array(let items): self = .array(items.map(JSONValue.init))
        case .object(let members): self = .object(members.map { ($0.key, JSONValue($0.value)) })
        }
    }
}
