import Dispatch
import Foundation
import SpinCore
import SpinExamples
@testable import SpinServer
import SpinWire
import Testing
@testable import SpinConcurrency

/// Builds a host with the example Spins, as the default config does.
func makeExampleHost(start: Bool = true, counterQueue: DispatchQueue? = nil) throws -> SpinHost {
    let host = SpinHost()
    let counter = Counter.spin()
    try host.host(counterQueue.map { queue in
        Spin(initialState: counter.initialState, feedbacks: counter.feedbacks, reducer: counter.reducer, executeOn: queue)
    } ?? counter, named: "counter", kind: "counter")
    try host.host(Levels.spin(), named: "levels", kind: "levels")
    let example = AuthRouting()
    try host.host(example.feature, named: "feature", kind: "feature")
    try host.host(example.router, named: "router", kind: "router")
    try host.host(example.gear, named: "auth", attachedTo: ["feature", "router"])
    if start { host.start() }
    return host
}

func makeRouter(_ host: SpinHost, tokens: [AccessToken] = [], inbox: Int = 1024) -> APIRouter {
    var limits = APIRouter.Limits()
    limits.inbox = inbox
    return APIRouter(host: host, access: AccessControl(tokens: tokens), metrics: Metrics(), limits: limits)
}

/// A request as the parser would make it.
func makeRequest(_ method: String, _ path: String, query: [(name: String, value: String)] = [],
                 headers: [(name: String, value: String)] = [], body: [UInt8] = []) -> HTTPRequest {
    let queryText = query.isEmpty ? "" : "?" + query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    return makeRequest(method, path + queryText, headers: headers, body: body)
}

/// A request whose target is written out (`/p?wait`), as the parser would make it.
func makeRequest(_ method: String, _ target: String, headers: [(name: String, value: String)] = [],
                 body: [UInt8] = []) -> HTTPRequest {
    let fields = HTTPHeaders(headers.map { ($0.name, $0.value) })
    let upgrade = fields.containsToken("upgrade", in: "Connection") && fields["Upgrade"] != nil
    return HTTPRequest(method: HTTPMethod(rawValue: method), target: HTTPRequestTarget(origin: target),
                       headers: fields, body: body, host: fields["Host"] ?? "", isUpgradeCandidate: upgrade)
}

/// What a browser's `EventSource` asks with: server-sent events.
let acceptsEvents: [(name: String, value: String)] = [("Accept", "text/event-stream")]

extension APIRouter {
    func route(_ request: HTTPRequest) async -> RouteOutcome {
        await withCheckedContinuation { continuation in
            handle(request, admission: admit(request)) { continuation.resume(returning: $0) }
        }
    }

    /// The response of a request that must be answered with one.
    func respond(_ method: String, _ path: String, query: [(name: String, value: String)] = [],
                 headers: [(name: String, value: String)] = [], body: String = "") async -> APIResponse {
        let request = makeRequest(method, path, query: query, headers: headers, body: Array(body.utf8))
        guard case .respond(let response) = await route(request) else {
            Issue.record("\(method) \(path) was not answered with a response")
            return APIResponse(status: 0)
        }
        return response
    }

    func post(_ path: String, _ body: String, query: [(name: String, value: String)] = [],
              contentType: String? = "application/json", token: String? = nil) async -> APIResponse {
        var headers: [(name: String, value: String)] = []
        if let contentType { headers.append(("Content-Type", contentType)) }
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return await respond("POST", path, query: query, headers: headers, body: body)
    }
}

extension APIResponse {
    var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
    var object: [String: Any] { json as? [String: Any] ?? [:] }
    var text: String { String(decoding: body, as: UTF8.self) }
    var errorCode: String? { (object["error"] as? [String: Any])?["code"] as? String }
    var errorMessage: String { (object["error"] as? [String: Any])?["message"] as? String ?? "" }
}

/// Waits until the Spin's state, read over the API, satisfies `predicate`.
func waitForState(_ router: APIRouter, _ name: String, _ predicate: ([String: Any]) -> Bool) async -> [String: Any] {
    for _ in 0..<5000 {
        let response = await router.respond("GET", "/v1/spins/\(name)")
        if let state = response.object["state"] as? [String: Any], predicate(state) { return response.object }
        try? await Task.sleep(for: .milliseconds(1))
    }
    Issue.record("\(name) never reached the expected state")
    return [:]
}

/// Waits until the Spin satisfies `predicate` and has settled: its sequence unchanged over
/// 50 ms (a Spin whose feedbacks answer each state, as `levels`' do, may pass through the
/// predicate while events made for earlier states are still on their way).
func waitForSettledState(_ router: APIRouter, _ name: String, _ predicate: ([String: Any]) -> Bool) async -> [String: Any] {
    var last = await waitForState(router, name, predicate)
    for _ in 0..<200 {
        try? await Task.sleep(for: .milliseconds(50))
        let now = await waitForState(router, name, predicate)
        if now["sequence"] as? Int == last["sequence"] as? Int { return now }
        last = now
    }
    Issue.record("\(name) never settled")
    return last
}
