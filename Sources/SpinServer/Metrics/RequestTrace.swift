import SpinCore
import Tracing
import SpinConcurrency

/// The tracing spans of one HTTP request, made with the tracer the process bootstrapped
/// (swift-distributed-tracing's `InstrumentationSystem`): `request` (method, route,
/// status, request ID) and, as its children for `POST .../events`, `apply` (until the
/// Spin applied the batch), `durable` (until the journal has it) and `acknowledge`
/// (until the answer is written).
///
/// The request's `ServiceContext` travels in this object through the closures (Dispatch
/// queues carry no task locals). With no tracer bootstrapped there is no `RequestTrace`
/// at all: `ServerContext` checks once whether the tracer is the no-op one.
package final class RequestTrace: Sendable {
    /// Attribute names (OpenTelemetry's HTTP conventions where they have one).
    package enum Attribute {
        package static let method = "http.request.method"
        package static let route = "http.route"
        package static let status = "http.response.status_code"
        package static let requestID = "spin.request_id"
        package static let spin = "spin.name"
        package static let sequence = "spin.sequence"
    }

    private let tracer: any Tracer
    private let request: any Span
    /// The `acknowledge` span, from durable until the answer is written.
    private let acknowledging = Protected<(any Span)?>(nil)

    /// Starts the `request` span.
    init(tracer: any Tracer, method: String, route: String, requestID: String) {
        self.tracer = tracer
        request = tracer.startSpan("request", context: ServiceContext.topLevel, ofKind: .server)
        request.attributes[Attribute.method] = method
        request.attributes[Attribute.route] = route
        request.attributes[Attribute.requestID] = requestID
    }

    /// The request span's context: what child spans and outgoing calls carry.
    package var context: ServiceContext { request.context }

    /// Starts a child span of the request named `name`.
    package func child(_ name: String, spin: String) -> any Span {
        let span = tracer.startSpan(name, context: request.context, ofKind: .internal)
        span.attributes[Attribute.spin] = spin
        return span
    }

    /// Starts the `acknowledge` span, ended by `finish`.
    package func acknowledging(spin: String) {
        let span = child("acknowledge", spin: spin)
        acknowledging.withLock { $0 = span }
    }

    /// The answer is written with `status`: ends the `acknowledge` span (if any) and the
    /// request span.
    func finish(status: Int) {
        acknowledging.withLock { span in
            span?.end()
            span = nil
        }
        request.attributes[Attribute.status] = status
        if status >= 500 { request.setStatus(SpanStatus(code: .error)) }
        request.end()
    }
}
