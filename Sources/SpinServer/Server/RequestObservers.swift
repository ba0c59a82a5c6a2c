import SpinConcurrency
import SpinNet
import SpinWire
import Tracing

/// What every request of one connection passes through besides its route: its ID
/// (`RequestID`, which its response carries back), its count (`RequestCounting`), its
/// spans when the process traces (`RequestTrace`) and its log line (`AccessLog`).
///
/// The HTTP driver calls `begin` once the router admitted a request, writes what it
/// answers with `body(of:)` and `idField` (or a stream's head with `stamped`), and calls
/// `end` once the answer's head is written; `refuse` for a request the
/// parser or a deadline refused. One request is observed at a time (pipelined requests
/// are answered in order). A value the driver holds and calls directly, confined to the
/// connection's event loop.
struct RequestObservers {
    /// The request being answered.
    struct Observed {
        /// Its ID (`X-Request-Id`).
        var id = ""
        /// Its route's template, as metrics label it.
        var route = "other"
        /// Who sent it, when its credentials name a subject.
        var subject: String?
        /// Its spans, when the process traces.
        var trace: RequestTrace?
        /// When the driver got it (`Monotonic` nanoseconds).
        var started: UInt64 = 0
        /// When its connection's loop learnt the bytes that completed it were readable.
        var readable: UInt64 = 0
    }

    private let metrics: Metrics
    private let tracer: (any Tracer)?
    private let log: AccessLog
    private var ids = RequestID.Generator()
    private var counting = RequestCounting()
    private(set) var current = Observed()

    init(metrics: Metrics, tracer: (any Tracer)?, log: AccessLog) {
        self.metrics = metrics
        self.tracer = tracer
        self.log = log
    }

    /// Starts observing `request`, got at `started` and admitted as `admission` says: its
    /// ID (the client's own when valid, else a new one) and, when the process traces, its
    /// `request` span, which the router's spans hang from.
    mutating func begin(_ request: HTTPRequest, _ admission: Admission, readable: UInt64,
                        started: UInt64) -> RequestTrace? {
        let id = ids.id(for: request.headers[RequestID.header])
        let trace = tracer.map {
            RequestTrace(tracer: $0, method: request.method.rawValue, route: admission.label, requestID: id)
        }
        current = Observed(id: id, route: admission.label, subject: admission.subject, trace: trace, started: started,
                           readable: readable)
        return trace
    }

    /// A request the parser (`parserError`) or a deadline refused with `status` before
    /// it was read whole: a new ID for its answer, counted on no route.
    mutating func refuse(status: Int, parserError: HTTPParserError? = nil, connection: UInt64) {
        current.id = ids.make()
        metrics.requestAnswered(route: "other", status: status)
        if let parserError {
            log.badRequest(connection: connection, status: status, code: parserError.code, requestID: current.id)
        }
    }

    /// The body `response` leaves with: an error's written again with the request's ID
    /// (`"requestId"`), any other as it is.
    func body(of response: APIResponse) -> [UInt8] {
        guard let error = response.error else { return response.body }
        return APIResponse.error(error, requestID: current.id).body
    }

    /// `X-Request-Id` with the request's ID: written after an answer's own fields
    /// (`HTTPResponseWriter.response(lastField:)`), with no copy of them to append it to.
    var idField: HTTPHeaders.Field { HTTPHeaders.Field(name: RequestID.header, value: current.id) }

    /// `headers` of a head the driver writes itself (a stream's), with `X-Request-Id`.
    func stamped(_ headers: HTTPHeaders) -> HTTPHeaders {
        var headers = headers
        headers.append(name: idField.name, value: idField.value)
        return headers
    }

    /// The request's answer is on its way (`status`, a head of `bytes`, or the whole
    /// response): counted, its trace ended, its line logged, and the stages of an accepted
    /// event request observed (`stages`).
    mutating func end(_ request: HTTPRequest, status: Int, bytes: Int, stages: EventStages? = nil) {
        let now = Monotonic.nanoseconds
        counting.count(route: current.route, status: status, in: metrics)
        current.trace?.finish(status: status)
        current.trace = nil
        if let stages {
            metrics.eventStages.observe(readable: current.readable, handed: current.started, stages, answered: now)
        }
        let milliseconds = Double(Monotonic.elapsed(from: current.started, to: now)) / 1e6
        log.answered(request, status: status, bytes: bytes, milliseconds: milliseconds,
                     requestID: current.id, subject: current.subject)
    }
}
