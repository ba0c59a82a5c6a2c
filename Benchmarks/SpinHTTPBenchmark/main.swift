// spin-http-benchmark: parse throughput of HTTPRequestParser on typical API requests,
// beside a ceiling measured in the same run on the same bytes: a bare scan for CRLFCRLF
// (the end of each head), which any HTTP/1.1 parser has to do at least. The ratio
// parser/scan is the figure to compare across machines and runs. Then the time the
// response writer takes for the server's main answer (202 to an event POST).
//
// Run: swift run -c release spin-http-benchmark [seconds-per-measurement, default 0.5]
import Dispatch
import Foundation
import SpinWire

@inline(never)
func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

/// Returns its argument where the optimiser cannot see it, so a loop over the same bytes
/// is not folded into one pass.
@inline(never)
func opaque<T>(_ value: T) -> T { value }

struct Workload {
    var name: String
    /// What one connection sends; `requests` requests back to back.
    var bytes: [UInt8]
    var requests: Int
}

func lines(_ lines: [String]) -> [UInt8] { Array(lines.joined(separator: "\r\n").utf8) }

let curlGet = lines([
    "GET /v1/spins/counter HTTP/1.1", "Host: localhost:8080", "User-Agent: curl/8.5.0", "Accept: */*", "", "",
])
let eventBody = #"{"type":"increase"}"#
let curlPost = lines([
    "POST /v1/spins/counter/events?wait=true HTTP/1.1", "Host: 127.0.0.1:8080", "User-Agent: curl/8.5.0",
    "Accept: */*", "Authorization: Bearer s3cr3t-token-0123456789abcdef", "Content-Type: application/json",
    "Content-Length: \(eventBody.utf8.count)", "", eventBody,
])
let pythonBody = #"[{"type": "logout"}, {"type": "checkAuthorization"}]"#
let pythonPost = lines([
    "POST /v1/spins/router/events HTTP/1.1", "Host: localhost:8080", "User-Agent: python-requests/2.31.0",
    "Accept-Encoding: gzip, deflate", "Accept: */*", "Connection: keep-alive",
    "Content-Length: \(pythonBody.utf8.count)", "Content-Type: application/json", "", pythonBody,
])
let browserGet = lines([
    "GET /v1/spins/levels HTTP/1.1", "Host: localhost:8080", "Connection: keep-alive",
    #"sec-ch-ua: "Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99""#,
    "sec-ch-ua-mobile: ?0", #"sec-ch-ua-platform: "Linux""#,
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Accept: application/json, text/plain, */*", "Sec-Fetch-Site: same-origin", "Sec-Fetch-Mode: cors",
    "Sec-Fetch-Dest: empty", "Referer: http://localhost:8080/", "Accept-Encoding: gzip, deflate, br, zstd",
    "Accept-Language: en-GB,en;q=0.9,de;q=0.8",
    "Cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl; theme=dark", "", "",
])
let chunkedPost = lines([
    "POST /v1/spins/counter/events HTTP/1.1", "Host: localhost:8080", "User-Agent: curl/8.5.0", "Accept: */*",
    "Transfer-Encoding: chunked", "Content-Type: application/json", "", "13", eventBody, "0", "", "",
])
let mixed = [curlGet, curlPost, pythonPost, browserGet, chunkedPost]
let pipelined = (0..<16).flatMap { mixed[$0 % mixed.count] }

let workloads = [
    Workload(name: "curl GET", bytes: curlGet, requests: 1),
    Workload(name: "curl POST json", bytes: curlPost, requests: 1),
    Workload(name: "python POST json", bytes: pythonPost, requests: 1),
    Workload(name: "browser GET (15 hdr)", bytes: browserGet, requests: 1),
    Workload(name: "chunked POST", bytes: chunkedPost, requests: 1),
    Workload(name: "pipelined x16 mixed", bytes: pipelined, requests: 16),
]

/// Feeds `workload` into one long-lived parser (a keep-alive connection) `iterations`
/// times and drains every request.
@inline(never)
func parse(_ workload: Workload, iterations: Int) -> Int {
    var parser = HTTPRequestParser()
    var parsed = 0
    for _ in 0..<iterations {
        parser.feed(opaque(workload.bytes))
        loop: while true {
            switch parser.next() {
            case .request(let request):
                parsed += 1
                blackHole(request)
            case .needMoreData:
                break loop
            default:
                fatalError("benchmark input refused")
            }
        }
    }
    precondition(parsed == iterations * workload.requests)
    return parsed
}

/// The ceiling: find every CRLFCRLF in the same bytes, nothing else.
@inline(never)
func scan(_ workload: Workload, iterations: Int) -> Int {
    var found = 0
    for _ in 0..<iterations {
        opaque(workload.bytes).withUnsafeBufferPointer { bytes in
            var index = 3
            while index < bytes.count {
                if bytes[index] == 0x0A && bytes[index - 1] == 0x0D && bytes[index - 2] == 0x0A && bytes[index - 3] == 0x0D {
                    found += 1
                }
                index += 1
            }
        }
    }
    blackHole(found)
    return found
}

/// Seconds per call of `body(iterations)`, best of five runs of about `budget` seconds.
func measure(budget: Double, _ body: (Int) -> Int) -> Double {
    var iterations = 1
    while true {
        let start = DispatchTime.now().uptimeNanoseconds
        blackHole(body(iterations))
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        if elapsed > budget / 10 {
            iterations = max(1, Int(Double(iterations) * budget / elapsed))
            break
        }
        precondition(iterations < 1 << 40, "the measured loop was optimised away")
        iterations *= 4
    }
    var best = Double.infinity
    for _ in 0..<5 {
        let start = DispatchTime.now().uptimeNanoseconds
        blackHole(body(iterations))
        best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 / Double(iterations))
    }
    return best
}

func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return left ? padding + text : text + padding
}

func fixed(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }

let budget = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 0.5 : 0.5
print("spin-http-benchmark: HTTPRequestParser vs a bare CRLFCRLF scan of the same bytes (best of 5, \(budget) s each)")
print([pad("workload", 22), pad("bytes", 6, left: true), pad("parse req/s", 12, left: true),
       pad("parse MB/s", 11, left: true), pad("scan MB/s", 10, left: true), pad("parse/scan", 11, left: true)].joined(separator: "  "))
for workload in workloads {
    let parseSeconds = measure(budget: budget) { parse(workload, iterations: $0) }
    let scanSeconds = measure(budget: budget) { scan(workload, iterations: $0) }
    let megabytes = Double(workload.bytes.count) / 1e6
    let row = [
        pad(workload.name, 22),
        pad("\(workload.bytes.count)", 6, left: true),
        pad(fixed(Double(workload.requests) / parseSeconds, 0), 12, left: true),
        pad(fixed(megabytes / parseSeconds, 1), 11, left: true),
        pad(fixed(megabytes / scanSeconds, 1), 10, left: true),
        pad(fixed(scanSeconds / parseSeconds, 3), 11, left: true),
    ]
    print(row.joined(separator: "  "))
}

// The writer: the server's answer to `POST /v1/spins/counter/events` (202 with the
// fields the API sets), written by one long-lived writer (a keep-alive connection) within
// one second, so the `Date` line comes from its per-second cache as it does under load.
let acceptedHead = HTTPResponseHead(status: .accepted, headers: [
    "Content-Type": "application/json", "X-Request-Id": "c073b54e6217f8ad",
])
let acceptedBody = Array(#"{"accepted":1,"sequence":12345}"#.utf8)
let acceptedContext = HTTPResponseContext(requestMethod: .post, requestVersion: .http1_1, keepAlive: true)

@inline(never)
func write(iterations: Int) -> Int {
    var writer = HTTPResponseWriter()
    var bytes = 0
    for _ in 0..<iterations {
        let response = writer.response(opaque(acceptedHead), body: opaque(acceptedBody), context: acceptedContext,
                                       secondsSince1970: 1_700_000_000)
        bytes += response.count
        blackHole(response)
    }
    return bytes
}

let writeSeconds = measure(budget: budget) { write(iterations: $0) }
print("")
print("HTTPResponseWriter: 202 with Content-Type and X-Request-Id, keep-alive: "
      + "\(fixed(writeSeconds * 1e9, 0)) ns per response (\(fixed(1 / writeSeconds, 0)) responses/s)")
